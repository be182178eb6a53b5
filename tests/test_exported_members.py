"""The public surface: ``__all__`` lists exactly the public names (httpx's test of the same name)."""

from __future__ import annotations

import pytest_promptsuite


def test_all_lists_every_public_name() -> None:
    public = {
        name
        for name, value in vars(pytest_promptsuite).items()
        if not name.startswith("_") and not getattr(value, "__file__", None)  # skip submodules
        and name not in {"annotations"}
    }
    assert set(pytest_promptsuite.__all__) == public
    assert pytest_promptsuite.__all__ == sorted(pytest_promptsuite.__all__)
