"""The load test: 2,000 cases at concurrency 32 with 25 % mixed faults against the loopback server lose, duplicate,
mislabel and leak nothing, and finish (nothing timed). The faulty cases come first in the case file, so that
their timeouts and backoffs overlap (``run_load``'s ``faulty_first``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile.load import KEY
from tests.hostile.load import plan
from tests.hostile.load import run_load
from tests.loopback import LoopbackServer


pytestmark = pytest.mark.slow


def test_the_plan_covers_every_fault_and_both_endings() -> None:
    planned = plan(2000, 0.25, 17)
    scripts = " ".join(p.prompt for p in planned)
    for fault in ("429", "500", "503", "reset", "truncated", "gzip", "drip", "hang", "latin1", "echo", "weird"):
        assert fault in scripts, fault
    outcomes = {p.outcome for p in planned}
    assert outcomes == {"passed", "error"}
    assert sum("[[" in p.prompt for p in planned) == 500


def test_two_thousand_cases_with_a_quarter_faulty_lose_nothing_and_leak_nothing(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    report = run_load(loopback, tmp_path, faulty_first=True)  # the same cases and checks, the waits overlapping

    assert report.rows == 2000
    assert report.lost == []
    assert report.duplicated == []
    assert report.mislabelled == []
    assert report.leaks == []
    assert report.files_searched >= 8  # report files, junit.xml, cassette, cache, log, stdout, stderr
    assert report.exit_status == 1  # some cases end in an error: the gate fails, and says why
    assert report.outcomes["error"] > 0 and report.outcomes["passed"] > 1500
    stdout = (tmp_path / "stdout.txt").read_text(encoding="utf-8")
    assert "promptsuite gate: FAILED" in stdout and "Traceback" not in stdout
    assert KEY not in stdout + (tmp_path / "stderr.txt").read_text(encoding="utf-8")
    assert "HTTP Request: POST" in (tmp_path / "run.log").read_text(encoding="utf-8")  # httpx logged, scrubbed
