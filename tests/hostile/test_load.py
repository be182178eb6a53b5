"""The load test: 2,000 cases at concurrency 32 with 25 % mixed faults against the loopback server lose, duplicate,
mislabel and leak nothing, and finish (nothing timed). The faulty cases come first in the case file, so that
their timeouts and backoffs overlap (``run_load``'s ``faulty_first``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile.load import KEY
from tests.hostile.load import endings
from tests.hostile.load import plan
from tests.hostile.load import run_load
from tests.hostile.load import steps_of
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


def test_a_row_is_held_to_the_attempts_the_server_saw() -> None:
    prompt = "load case 00031 [[hang,503,reset]]"
    steps = steps_of(prompt)
    # as planned: the fourth attempt's answer passes the case, or (read too late) ends it in the timeout's error
    assert endings(prompt, steps, 4) == {("passed", prompt, False), ("error", None, True)}
    assert endings(prompt, steps, 3) == set()  # the client gave up before its last attempt
    assert endings(prompt, steps, 5) == set()  # more attempts than max_retries allows
    plain = "load case 00001"
    assert endings(plain, [], 1) == {("passed", plain, False)}
    assert endings(plain, [], 2) == {("passed", plain, False)}  # the first answer came too late: tried again
    assert endings(plain, [], 4) == {("passed", plain, False), ("error", None, True)}
    assert endings("x [[latin1]]", ["latin1"], 1) == {("error", None, False)}
    assert endings("x [[latin1]]", ["latin1"], 2) == set()  # a body that is not UTF-8 is never retried
    assert endings("x [[500,500,500,500]]", ["500"] * 4, 4) == {("error", None, False)}


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
