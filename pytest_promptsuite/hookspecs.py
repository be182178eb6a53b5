"""Hooks that third parties implement to extend pytest-promptsuite.

Implement them in a ``conftest.py`` or in a plugin installed with a ``pytest11`` entry point;
pytest registers these specs when the plugin loads. Every hook is prefixed ``pytest_promptsuite_``.
The built-in implementations use the same hooks, marked ``trylast`` so that yours win.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest


if TYPE_CHECKING:
    from .checks.base import CaseResult
    from .models.base import Model
    from .suite import ModelConfig


@pytest.hookspec(firstresult=True)
def pytest_promptsuite_make_model(
    config: pytest.Config, spec: str, settings: ModelConfig, root: Path
) -> Model | None:
    """Make the model for a spec string, or return None to let another plugin answer.

    Args:
        config: the pytest config.
        spec: the model spec, e.g. ``fake``, ``fake:rules.json``, ``openai:gpt-4o-mini``, or
            your own scheme.
        settings: the model's table of the suite config (``[model]`` or ``[models.NAME]``):
            base URL, params, timeouts.
        root: the folder relative paths in the spec resolve against (the suite config's folder).

    Example, in ``conftest.py``::

        from pytest_promptsuite.models import Response

        class Shouting:
            spec = "shout"
            async def generate(self, request):
                return Response(text=str(request.prompt).upper())

        def pytest_promptsuite_make_model(config, spec, settings, root):
            if spec == "shout":
                return Shouting()

    .. versionadded:: 0.1
    """


@pytest.hookspec
def pytest_promptsuite_case_finished(item: pytest.Item, result: CaseResult) -> None:
    """Called after a case ran, with its result (for logging or a custom sink).

    Example, in ``conftest.py``::

        def pytest_promptsuite_case_finished(item, result):
            if result.outcome == "error":
                print("endpoint trouble:", result.case_id, result.error)

    .. versionadded:: 0.1
    """
