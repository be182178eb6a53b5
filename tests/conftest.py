"""Shared fixtures: ``plugin_args`` runs a plugin test serial, with ``-n 0`` and with ``-n 2``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

# modules first imported inside them, so the plugin's lazy pandas import must happen here first)
import httpcore  # noqa: F401  (httpx imports it lazily and caches its exception classes)
import pandas  # noqa: F401  (numpy cannot be imported twice: pytester's in-process runs drop
import pytest

import pytest_promptsuite.models.openai  # noqa: F401  (same reason as pandas)
from pytest_promptsuite.models.runner import ModelRunner


if TYPE_CHECKING:
    from tests.loopback import LoopbackServer
# tests.loopback needs the test extra (uvicorn, starlette); it is imported in the fixture, because
# pytest loads this conftest whenever it runs from the repository root, as the Quick start does


@pytest.fixture(params=[[], ["-n", "0"], ["-n", "2"]], ids=["serial", "xdist_zero", "xdist_two"])
def plugin_args(request: pytest.FixtureRequest) -> list[str]:
    """Extra pytest arguments for the three ways a suite can run (syrupy's ``plugin_args``)."""
    return list(request.param)


@pytest.fixture(scope="session")
def _loopback_server() -> Iterator[LoopbackServer]:
    from tests.loopback import serve

    with serve() as server:
        yield server


@pytest.fixture
def loopback(_loopback_server: LoopbackServer) -> LoopbackServer:
    """The loopback OpenAI-compatible server (``tests/loopback.py``), fresh knobs and counters."""
    return _loopback_server.reset()


@pytest.fixture
def runner() -> Iterator[ModelRunner]:
    """A model runner (its event loop and concurrency bounds), closed after the test."""
    runner = ModelRunner()
    yield runner
    runner.close()
