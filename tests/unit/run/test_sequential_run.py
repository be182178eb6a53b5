"""Stage tests for ``run.sequential_run``: a ``--prompt-sequential`` run through ``PromptSession`` as the plugin
drives it (``tests/session.py``): a settled slice stops calling while the others go on, the calls started ahead
for its cases count as made, and the baseline is paired as the fixed comparison pairs it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_promptsuite.config.settings import GateSettings
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.summary import Baseline
from pytest_promptsuite.results.summary import summarize
from pytest_promptsuite.run.sequential_run import SequentialRun
from pytest_promptsuite.run.sequential_run import run_order
from tests.loopback import LoopbackServer
from tests.session import Collected
from tests.session import collect


def _write_cases(folder: Path, dropped: bool) -> None:
    """Ten cases in slice ``a`` (each fails once ``dropped``) and thirty in ``b`` (all pass)."""
    cases = [
        {"case_id": f"{s}{i}", "input": "no" if dropped and s == "a" else "yes", "slice": s, "must_include": ["yes"]}
        for s, n in (("a", 10), ("b", 30))
        for i in range(n)
    ]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")


def _suite(folder: Path, loopback: LoopbackServer) -> None:
    """A baseline where every case passed (the fake model), then the cases of ``a`` failing, sent to the
    loopback server and judged by the drop alone (``delta``: settled once certain, after 6 of a's 10)."""
    _write_cases(folder, dropped=False)
    with collect(folder, "--prompt-suite", "cases.jsonl", "--prompt-report", "base") as base:
        base.run()
        base.finish()
    _write_cases(folder, dropped=True)
    model = loopback.model()
    (folder / "promptsuite.toml").write_text(
        f'[model]\nspec = "{model["spec"]}"\nbase_url = "{model["base_url"]}"\n[gate]\nregression = "delta"\n',
        encoding="utf-8",
    )


def _sequential(folder: Path) -> Collected:
    run = collect(
        folder,
        "--prompt-suite",
        "cases.jsonl",
        "--prompt-baseline",
        str(folder / "base"),
        "--prompt-sequential",
        "--prompt-no-cache",
        "--prompt-min-pass-rate",
        "0",
    )
    run.planned = [run.planned[i] for i in run_order(run.planned)]
    run.session.plan_sequential(run.planned)
    return run


def _drive(run: Collected) -> list[CaseResult]:
    """Run the planned cases in order, each row fed to the sequential gate as its item reports it."""
    rows = []
    for one in run.planned:
        row = run.session.run(one)
        run.session.after_row(run.session.add_row(run.session.row_line(row)))
        rows.append(row)
    return rows


def _slice(record: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [g for g in record["slices"] if g["slice"] == name]
    return found


def test_a_settled_slice_stops_calling_while_the_others_go_on(tmp_path: Path, loopback: LoopbackServer) -> None:
    _suite(tmp_path, loopback)
    with _sequential(tmp_path) as run:
        rows = _drive(run)
        summary = run.session.finish()
    assert summary is not None and summary.sequential is not None
    skipped = [r for r in rows if r.outcome == "skipped"]
    reason = "slice 'a': verdict settled after 6 of 10 cases"
    assert [r.slice for r in skipped] == ["a"] * 4 and {r.error for r in skipped} == {reason}
    assert sum(r.slice == "b" and r.outcome == "passed" for r in rows) == 30  # b settles only at its end
    record = summary.sequential
    assert record["stopped"] is None and record["calls_saved"] == 4 and record["started_unused"] == 0
    assert _slice(record, "a") | {"variant": None} == {
        "slice": "a",
        "variant": None,
        "cases": 10,
        "ran": 6,
        "settled_after": 6,
        "skipped": 4,
        "calls_saved": 4,
        "started_unused": 0,
    }
    assert _slice(record, "b")["settled_after"] is None and _slice(record, "b")["calls_saved"] == 0
    assert loopback.stats.requests == 36  # every call the server saw is counted as made
    assert not summary.gate.passed
    assert [(d.slice, type(d).__name__) for d in summary.gate.decisions] == [("a", "SettledRegression")]


def test_calls_started_ahead_and_answered_count_as_made(tmp_path: Path, loopback: LoopbackServer) -> None:
    """Every case's call started (and answered) before the first case runs: slice a's four cases left are
    skipped, but their calls were made, so none is counted as saved."""
    _suite(tmp_path, loopback)
    with _sequential(tmp_path) as run:
        for one in run.planned:
            run.session.prefetch(one)
        loopback.wait_for(lambda: loopback.stats.requests == 40 and loopback.stats.in_flight == 0)
        rows = _drive(run)
        summary = run.session.finish()
    assert summary is not None and summary.sequential is not None
    assert sum(r.outcome == "skipped" for r in rows) == 4
    record = summary.sequential
    assert (record["calls_saved"], record["started_unused"]) == (0, 4)
    assert (_slice(record, "a")["skipped"], _slice(record, "a")["calls_saved"]) == (4, 0)
    assert loopback.stats.requests == 40


def test_the_baseline_is_paired_as_the_fixed_comparison_pairs_it() -> None:
    """A baseline with the same (case, variant, repeat) twice: the fixed comparison reads the last row, and so
    must the sequential gate (it read the first, and settled a regression the fixed gate does not see)."""
    from pytest_promptsuite.cases.prompt_case import CaseKey
    from pytest_promptsuite.run.pipeline import PlannedCase

    def row(case_id: str, outcome: str) -> CaseResult:
        return CaseResult(case_id=case_id, slice="s", outcome=outcome)  # type: ignore[arg-type]

    ids = [f"c{i}" for i in range(6)]
    old = [*(row(c, "passed") for c in ids), *(row(c, "failed") for c in ids)]  # the last rows failed
    baseline = Baseline(old, "base")
    planned = [
        PlannedCase(None, CaseKey(c), c, None, None, shown=Path("cases.jsonl"), slice="s", tags=())  # type: ignore[arg-type]
        for c in ids
    ]
    settings = GateSettings(regression="delta")
    policy = ThresholdPolicy(option=0.0)
    run = SequentialRun.plan(
        planned, baseline=baseline, settings=settings, policy=policy, variant_order=(), deterministic=True
    )
    now = [row(c, "failed") for c in ids]
    for one in now:
        run.add(one)
    assert [c["drop"] for c in run.gate.to_dict()["comparisons"]] == [0.0] and run.stopped is None
    fixed = summarize(now, policy, baseline=baseline, settings=settings)
    assert fixed.gate.passed  # the last baseline rows failed too: no drop
    assert run.judge(fixed).gate.passed


def test_a_stopped_slice_is_judged_by_its_settled_verdicts_the_others_by_the_fixed_gate() -> None:
    """Slice a (threshold 100 %, every case passed in the baseline) fails three of its four cases: its
    regression and its missed threshold are certain, so it stops; b runs on. The gate carries a's settled
    verdicts in place of the fixed gate's over the cases that ran."""
    from pytest_promptsuite.cases.prompt_case import CaseKey
    from pytest_promptsuite.results.gate import SettledRegression
    from pytest_promptsuite.results.gate import SliceBelowThreshold
    from pytest_promptsuite.run.pipeline import PlannedCase

    def row(case_id: str, outcome: str, error: str | None = None) -> CaseResult:
        return CaseResult(case_id=case_id, slice=case_id[0], outcome=outcome, error=error)  # type: ignore[arg-type]

    ids = ["a0", "b0", "a1", "b1", "a2", "b2", "a3", "b3", "b4", "b5"]
    baseline = Baseline([row(c, "passed") for c in ids], "base")
    planned = [
        PlannedCase(None, CaseKey(c), c, None, None, shown=Path("cases.jsonl"), slice=c[0], tags=())  # type: ignore[arg-type]
        for c in ids
    ]
    settings, policy = GateSettings(regression="delta"), ThresholdPolicy(option=1.0)
    run = SequentialRun.plan(
        planned, baseline=baseline, settings=settings, policy=policy, variant_order=(), deterministic=True
    )
    rows = []
    for one in planned:
        reason = run.skip_reason(one.key)
        rows.append(
            row(one.key.case_id, "skipped", reason)
            if reason
            else row(one.key.case_id, "passed" if one.slice == "b" else "failed")
        )
        run.add(rows[-1])
    assert [r.case_id for r in rows if r.outcome == "skipped"] == ["a3"]
    assert rows[6].error == "slice 'a': verdict settled after 3 of 4 cases"
    judged = run.judge(summarize(rows, policy, baseline=baseline, settings=run.final_settings()))
    decisions = judged.gate.decisions
    assert [type(d).__name__ for d in decisions] == ["SettledRegression", "SliceBelowThreshold"]
    regressed, below = decisions
    assert isinstance(regressed, SettledRegression) and (regressed.slice, regressed.cases) == ("a", 3)
    assert isinstance(below, SliceBelowThreshold) and (below.slice, below.rule.source, below.counted) == (
        "a",
        "settled",
        3,
    )
    assert [s.gate for s in judged.slices] == ["fail", "pass"]
