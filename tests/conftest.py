"""Shared fixtures: ``plugin_args`` runs a plugin test serial, with ``-n 0`` and with ``-n 2``."""

from __future__ import annotations

import pandas  # noqa: F401  (numpy cannot be imported twice: pytester's in-process runs drop
# modules first imported inside them, so the plugin's lazy pandas import must happen here first)
import pytest


@pytest.fixture(params=[[], ["-n", "0"], ["-n", "2"]], ids=["serial", "xdist_zero", "xdist_two"])
def plugin_args(request: pytest.FixtureRequest) -> list[str]:
    """Extra pytest arguments for the three ways a suite can run (syrupy's ``plugin_args``)."""
    return list(request.param)
