"""Shared fixtures: ``suite`` writes, runs and reads a suite; ``plugin_args`` runs it serial and under xdist."""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Iterator
from typing import TYPE_CHECKING

# Imported here before any run: pytester's in-process runs drop the modules first imported inside
# them, and numpy cannot be imported twice, nor may httpx's exception classes (cached) be replaced.
import httpcore  # noqa: F401  (httpx imports it lazily)
import pandas  # noqa: F401
import pytest

import pytest_promptsuite
import pytest_promptsuite.models.openai  # noqa: F401  (same reason as pandas)
from pytest_promptsuite.models.runner import ModelRunner
from tests.suite import Suite


def pytest_configure(config: pytest.Config) -> None:
    """Run Hypothesis without its deadline: a test may not depend on how fast this machine is (its default,
    200 ms an example, failed tests on a loaded 2-core machine). Where the test extra is not installed (the
    Quick start's first command runs from this folder), there is no Hypothesis to configure."""
    try:
        from hypothesis import settings
    except ImportError:
        return
    settings.register_profile("promptsuite", deadline=None)
    settings.load_profile("promptsuite")


if TYPE_CHECKING:
    from tests.github_api import GitHubServer
    from tests.loopback import LoopbackServer
# tests.loopback needs the test extra (uvicorn, starlette); it is imported in the fixture, because
# pytest loads this conftest whenever it runs from the repository root, as the Quick start does


@pytest.fixture(scope="session", autouse=True)
def _package_loaded() -> None:
    """Import every module of the package once per process. pytester's in-process runs drop the modules first
    imported inside them: each run imported the stages again (about 0.35 s a run; 0.05 s once they stay).
    No test may count on a module not being loaded here: under pytest-xdist that depends on which tests the
    worker ran first (the start-up tests run pytest in a process of its own)."""
    for module in pkgutil.walk_packages(pytest_promptsuite.__path__, "pytest_promptsuite."):
        if not module.name.endswith(("__main__", ".child")):  # python -m, and the config runner's own process
            importlib.import_module(module.name)
    for name in HYPOTHESIS_AT_SUMMARY:
        importlib.import_module(name)


#: What Hypothesis's pytest plugin imports at the end of every run (its terminal summary and report hooks).
#: Its plugin marks ``hypothesis`` for assertion rewriting, so each pytester run that imported these anew
#: rewrote about 220 modules again (5 s a run where bytecode is not written, as under PYTHONDONTWRITEBYTECODE).
HYPOTHESIS_AT_SUMMARY = (
    "hypothesis",
    "hypothesis.internal.conjecture.providers",
    "hypothesis.internal.escalation",
    "hypothesis.internal.healthcheck",
    "hypothesis.internal.observability",
    "hypothesis.reporting",
    "hypothesis.statistics",
)


@pytest.fixture
def short_regex_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wait out a 0.25 s regex time limit instead of the real 2 s (``tests/limits.py``)."""
    from tests.limits import shorten_regex_limit

    shorten_regex_limit(monkeypatch.setattr)


@pytest.fixture(params=[[], ["-n", "2"]], ids=["serial", "xdist_two"])
def plugin_args(request: pytest.FixtureRequest) -> list[str]:
    """Extra pytest arguments for a run in one process and one over two pytest-xdist workers (syrupy's
    ``plugin_args``), for the tests whose behaviour xdist changes. Not ``-n 0``: with pytest-xdist installed, a
    run without ``-n`` is that run (no workers, ``dist`` "no"; the plugin reads ``numprocesses`` 0 and None
    alike); ``test_runs_without_xdist`` runs with xdist left out."""
    return list(request.param)


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Suite:
    """A suite in ``pytester``'s folder, whose runs see no ``OPENAI_*`` variable unless the test sets one."""
    for name in [name for name in os.environ if name.startswith("OPENAI_")]:
        monkeypatch.delenv(name)
    return Suite(pytester)


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
def github() -> Iterator[GitHubServer]:
    """A loopback server speaking the GitHub REST endpoints the action uses (``tests/github_api.py``)."""
    from tests.github_api import serve_github

    with serve_github() as server:
        yield server


@pytest.fixture
def runner() -> Iterator[ModelRunner]:
    """A model runner (its event loop and concurrency bounds), closed after the test."""
    runner = ModelRunner()
    yield runner
    runner.close()
