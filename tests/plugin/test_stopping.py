"""Runs stopped from outside, end to end: SIGTERM (a CI cancel, ``timeout``) as Ctrl-C, on every kind of run,
and Ctrl-C before any case ended. The loopback server holds every call made after a point, so that some
cases have finished and some cannot when the signal comes: certain, whatever the machine's speed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.loopback import LoopbackServer
from tests.suite import UNUSED_PLUGINS
from tests.suite import Suite
from tests.suite import default_sigint


#: Written beside the cases: the controller (not a pytest-xdist worker: not ``PYTEST_XDIST_WORKER``, which this
#: test's own process may hand down) notes each case whose row it took (after promptsuite's own hook: registered
#: later, so called first among the ``trylast``), so the test knows what finished.
CONFTEST = """
import pytest

WORKER = []


def pytest_configure(config):
    WORKER.append(hasattr(config, "workerinput"))


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    if report.when == "call" and not WORKER[0]:
        with open("reported.txt", "a", encoding="utf-8") as fp:
            fp.write(report.nodeid + "\\n")
"""
PROMPTS = [f"case {i}" for i in range(8)]


def _start(suite: Suite, *args: str) -> subprocess.Popen[bytes]:
    """Start pytest on the suite in a process (and a process group) of its own."""
    command = [sys.executable, "-m", "pytest", "--prompt-suite", "cases.jsonl", "-p", "no:randomly", *UNUSED_PLUGINS]
    return suite.pytester.popen(
        [*command, "--prompt-no-cache", "--prompt-report", "report", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        preexec_fn=default_sigint,
        start_new_session=True,
    )


def _reported(suite: Suite) -> list[str]:
    path = suite.path / "reported.txt"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _hold_after_two(loopback: LoopbackServer) -> None:
    """Make every call after the next two wait a minute (set before the run starts: its calls may run ahead of
    its cases, so "from now on" set later could come after the last call)."""
    loopback.knobs.slow_from = len(loopback.stats.log) + 2


def _wait_for_a_held_call(loopback: LoopbackServer) -> None:
    """Wait until a call is held (so a case cannot finish)."""
    start = loopback.knobs.slow_from
    loopback.wait_for(lambda: any("end" not in entry for entry in loopback.stats.log[start:]))


def _stop(process: subprocess.Popen[bytes], signum: int, *, group: bool) -> bytes:
    """Send ``signum`` to the process (or, as ``timeout`` does, to its whole group) and wait for its end."""
    try:
        if group:
            os.killpg(process.pid, signum)
        else:
            process.send_signal(signum)
        output, _ = process.communicate(timeout=60)
    finally:
        process.kill()
    return output


@pytest.fixture
def tmpdir_of_run(suite: Suite, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary folder of the runs the test starts (where the row spool lives while a run lasts)."""
    folder = suite.path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    return folder


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "group"),
    [([], False), (["-n", "2"], True), (["-n", "2"], False), (["--prompt-sequential"], False)],
    ids=["serial", "xdist_group", "xdist_controller", "sequential"],
)
def test_sigterm_keeps_the_finished_rows_and_writes_the_report(
    suite: Suite, loopback: LoopbackServer, tmpdir_of_run: Path, args: list[str], group: bool
) -> None:
    suite.prompts(PROMPTS)
    suite.config({"model": loopback.model(timeout_s=300, params={"max_tokens": 16})})
    if "--prompt-sequential" in args:
        suite.run("--prompt-report", "base").assert_outcomes(passed=len(PROMPTS))
        args = [*args, "--prompt-baseline", "base"]
    suite.write("conftest.py", CONFTEST)
    _hold_after_two(loopback)
    process = _start(suite, "--prompt-concurrency", "1", *args)
    loopback.wait_for(lambda: len(_reported(suite)) >= 2 or process.poll() is not None)
    assert process.poll() is None, process.communicate()[0].decode()
    _wait_for_a_held_call(loopback)
    finished = _reported(suite)
    output = _stop(process, signal.SIGTERM, group=group).decode()

    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    rows = suite.rows()
    ids = {row["case_id"] for row in rows}
    assert {nodeid.partition("::")[2] for nodeid in finished} <= ids
    assert 2 <= len(rows) < len(PROMPTS), output
    assert {row["outcome"] for row in rows} == {"passed"}
    gate = suite.summary()["gate"]
    assert not gate["passed"]
    markdown = (suite.path / "report" / "summary.md").read_text(encoding="utf-8")
    assert "the run stopped before every case ran (stopped by SIGTERM)" in markdown
    assert "stopped by SIGTERM" in output
    assert list(tmpdir_of_run.glob("promptsuite-rows-*")) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stop_before_any_case_ended_still_writes_a_report(
    suite: Suite, loopback: LoopbackServer, tmpdir_of_run: Path, signum: int
) -> None:
    suite.prompts(PROMPTS)
    suite.config({"model": loopback.model(timeout_s=300)})
    loopback.knobs.latency_s = 60
    process = _start(suite, "--prompt-concurrency", "1")
    loopback.wait_for(lambda: bool(loopback.stats.log))
    output = _stop(process, signum, group=False).decode()

    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    assert suite.rows() == []
    summary = suite.summary()
    assert not summary["gate"]["passed"]
    markdown = (suite.path / "report" / "summary.md").read_text(encoding="utf-8")
    assert "no case finished" in markdown, markdown
    assert list(tmpdir_of_run.glob("promptsuite-rows-*")) == []


def test_sigterm_while_the_batch_job_runs_writes_a_report(
    suite: Suite, loopback: LoopbackServer, tmpdir_of_run: Path
) -> None:
    loopback.batch.reset(delay_s=60)
    suite.prompts(["one", "two"])
    suite.config({"model": loopback.model()})
    process = _start(suite, "--prompt-batch")
    loopback.wait_for(lambda: loopback.batch.stats.created == 1)
    output = _stop(process, signal.SIGTERM, group=True).decode()

    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    assert suite.rows() == []
    assert "stopped by SIGTERM" in json.dumps(suite.summary()["gate"])
    assert list(tmpdir_of_run.glob("promptsuite-rows-*")) == []
