"""``--prompt-sequential`` end to end against the seeded loopback server: the cases run in a seeded order
stratified by slice, calls stop once the verdict is settled, the cases left end as skipped with the
reason, and the summary says how many calls were saved."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.loopback import LoopbackServer
from tests.simulation import population
from tests.suite import Suite


def _write(suite: Suite, p: list[float], slices: int = 1) -> None:
    suite.cases(
        [
            {
                "case_id": f"c{i:03d}",
                "input": f"case {i} <<pass {v:.4f}>>",
                "slice": f"s{i % slices}",
                "must_include": [f"case {i} "],
            }
            for i, v in enumerate(p)
        ]
    )


def _baseline(suite: Suite, loopback: LoopbackServer, p: list[float], slices: int = 1) -> None:
    _write(suite, p, slices)
    suite.config({"model": loopback.model(concurrency=8), "thresholds": {"default": 0.0}})
    loopback.reset(seed=1)
    assert suite.run("--prompt-no-cache", "--prompt-report", "base").ret == pytest.ExitCode.OK


def _calls(loopback: LoopbackServer, record: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    """Check the calls a sequential run accounts for: each slice's skipped cases are its calls saved plus those
    started ahead that reached the endpoint anyway, and every call the server saw is counted as made."""
    for group in record["slices"]:
        ran = sum(r["slice"] == group["slice"] and r["outcome"] != "skipped" for r in rows)
        assert (group["ran"], group["skipped"]) == (ran, group["cases"] - ran)
        assert group["calls_saved"] + group["started_unused"] == group["skipped"]
    assert record["calls_saved"] == sum(g["calls_saved"] for g in record["slices"])
    assert record["started_unused"] == sum(g["started_unused"] for g in record["slices"])
    assert loopback.stats.requests <= len(rows) - record["calls_saved"]


@pytest.mark.slow
def test_a_drop_is_settled_early_and_the_rest_is_skipped(suite: Suite, loopback: LoopbackServer) -> None:
    """Both slices drop by 24 points: each stops calling once its own verdict is settled, the run once both are."""
    rng = random.Random(28)
    p = population(400, rng)
    _baseline(suite, loopback, p, slices=2)
    q = list(p)
    for i in [i for i, v in enumerate(p) if v == 0.98][:100]:  # 100 of 400 steady cases fail: a 24-point drop
        q[i] = 0.02
    _write(suite, q, slices=2)
    loopback.reset(seed=2)
    result = suite.run(
        "--prompt-no-cache", "--prompt-report", "report", "--prompt-baseline", "base", "--prompt-sequential"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    summary = suite.summary()
    record = summary["sequential"]
    rows = suite.rows()
    ran, saved = record["settled_after"], record["calls_saved"]
    ran_rows = [r for r in rows if r["outcome"] != "skipped"]
    assert ran is not None and ran == len(ran_rows) < 400
    _calls(loopback, record, rows)
    assert loopback.stats.requests <= ran + 2 * 8  # at most a window of calls started ahead
    first, last = sorted(record["slices"], key=lambda g: g["settled_after"])
    assert first["settled_after"] < first["cases"] and last["settled_after"] < last["cases"]
    stop = f"verdict settled after {ran} of 400 cases"
    early = f"slice '{first['slice']}': verdict settled after {first['settled_after']} of 200 cases"
    by_slice = {s: {r["error"] for r in rows if r["outcome"] == "skipped" and r["slice"] == s} for s in ("s0", "s1")}
    assert by_slice[first["slice"]] in ({early}, {stop}) and by_slice[last["slice"]] == {stop}
    assert all(c["verdict"] == "regressed" for c in record["comparisons"])
    gate_reasons = summary["gate"]["reasons"]
    assert len(gate_reasons) == 2 and all("settled by the sequential test after" in r for r in gate_reasons)
    assert not any("stopped before every case ran" in r for r in gate_reasons)
    # the order: seeded, stratified, not the file's
    assert [r["case_id"] for r in ran_rows] != [f"c{i:03d}" for i in range(ran)]
    result.stdout.fnmatch_lines([f"*sequential: verdict settled after {ran} of 400 cases (*); {saved} calls saved*"])


@pytest.mark.slow
def test_a_slice_that_settled_stops_calling_while_the_others_go_on(suite: Suite, loopback: LoopbackServer) -> None:
    """Three slices of 100, a 29-point drop in s0 only: s0 stops calling once its regression is settled, the
    unchanged slices go on until theirs is; each slice's calls saved are in ``summary.json`` and the terminal."""
    rng = random.Random(36)
    p = population(300, rng)
    _baseline(suite, loopback, p, slices=3)
    q = list(p)
    for i in [i for i, v in enumerate(p) if v == 0.98 and i % 3 == 0][:30]:
        q[i] = 0.02
    _write(suite, q, slices=3)
    loopback.reset(seed=5)
    result = suite.run(
        "--prompt-no-cache", "--prompt-report", "report", "--prompt-baseline", "base", "--prompt-sequential"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    summary, rows = suite.summary(), suite.rows()
    record = summary["sequential"]
    _calls(loopback, record, rows)
    groups = {g["slice"]: g for g in record["slices"]}
    stopped = [g for g in groups.values() if g["settled_after"] is not None]
    assert stopped and all(g["skipped"] == 100 - g["ran"] > 0 for g in stopped)
    assert max(g["ran"] for g in groups.values()) > min(g["ran"] for g in stopped)  # others went on after it stopped
    for g in stopped:
        reason = f"slice '{g['slice']}': verdict settled after {g['settled_after']} of 100 cases"
        assert {r["error"] for r in rows if r["outcome"] == "skipped" and r["slice"] == g["slice"]} == {reason}
    verdicts = {c["slice"]: c["verdict"] for c in record["comparisons"]}
    assert verdicts["s0"] == "regressed" and "regressed" not in (verdicts["s1"], verdicts["s2"])
    reasons = summary["gate"]["reasons"]
    assert [r for r in reasons if "regressed" in r] == [r for r in reasons if r.startswith("slice 's0'")] != []
    lines = [f"{g['slice']} after {g['settled_after']} of 100: {g['calls_saved']} saved" for g in stopped]
    result.stdout.fnmatch_lines([f"*sequential: settled before their last case: {', '.join(lines)}; *"])


@pytest.mark.slow
def test_no_change_passes_and_stops_once_no_drop_is_settled(suite: Suite, loopback: LoopbackServer) -> None:
    """(This seed's draws settle after some 60 % of the cases; the benchmark measures how often and when.)"""
    rng = random.Random(30)
    p = population(600, rng)
    _baseline(suite, loopback, p)
    loopback.reset(seed=4)
    result = suite.run(
        "--prompt-no-cache", "--prompt-report", "report", "--prompt-baseline", "base", "--prompt-sequential"
    )
    assert result.ret == pytest.ExitCode.OK
    record = suite.summary()["sequential"]
    assert record["comparisons"][0]["verdict"] == "no drop of the detectable size"
    assert record["calls_saved"] > 0 and suite.summary()["gate"]["passed"]


def test_sequential_needs_something_to_compare(suite: Suite) -> None:
    suite.prompts(["a", "b"])
    result = suite.run("--prompt-sequential")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--prompt-sequential stops calling once the comparison is settled: it needs --prompt-baseline*"]
    )


def test_sequential_refuses_xdist(suite: Suite) -> None:
    suite.prompts(["a"])
    result = suite.run("--prompt-sequential", "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--prompt-sequential decides case by case*drop -n*"])


def test_a_deterministic_run_settles_only_when_certain(suite: Suite) -> None:
    """The fake model: the drop alone decides (``delta``), so the run stops only once the drop over every
    case is certain: the regressions so far outnumber the cases left (5 of 10 cases regress here)."""
    suite.cases([{"case_id": f"c{i}", "input": "ok", "slice": "s", "must_include": ["ok"]} for i in range(10)])
    assert suite.run("--prompt-report", "base").ret == pytest.ExitCode.OK
    suite.cases(
        [
            {"case_id": f"c{i}", "input": "ok" if i > 4 else "no", "slice": "s", "must_include": ["ok"]}
            for i in range(10)
        ]
    )
    args = (
        "--prompt-report",
        "report",
        "--prompt-baseline",
        "base",
        "--prompt-sequential",
        "--prompt-min-pass-rate",
        "0",
    )
    result = suite.run(*args)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    rows = suite.rows()  # in case order
    ran = [r for r in rows if r["outcome"] != "skipped"]
    regressions = sum(r["case_id"] in {"c0", "c1", "c2", "c3", "c4"} for r in ran)
    assert regressions > 10 - len(ran) and regressions - 1 <= 10 - (len(ran) - 1)  # certain now, not before
    record = suite.summary()["sequential"]
    assert record["settled_after"] == len(ran) < 10 and record["comparisons"][0]["verdict"] == "regressed"
    assert {r["error"] for r in rows if r["outcome"] == "skipped"} == {f"verdict settled after {len(ran)} of 10 cases"}
    result.stdout.fnmatch_lines(["*settled once certain after * of 10 paired cases*"])


def test_compare_variants_settles_without_a_baseline(suite: Suite) -> None:
    """Two prompt versions in one run, the second losing every case: each case runs both (adjacent in
    the order), and the run stops once the drop over all ten is certain: after six."""
    suite.cases([{"case_id": f"c{i}", "input": f"ok {i}", "slice": "s", "must_include": ["ok"]} for i in range(10)])
    suite.config(
        '[gate]\ncompare_variants = true\n[variants.good]\nprompt_template = "{input}"\n'
        '[variants.bad]\nprompt_template = "nothing"\n'
    )
    result = suite.run("--prompt-report", "report", "--prompt-sequential", "--prompt-min-pass-rate", "0")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    record = suite.summary()["sequential"]
    assert record["settled_after"] == 6 and record["calls_saved"] == 8  # 4 cases x 2 variants
    (comparison,) = record["comparisons"]
    assert (comparison["variant"], comparison["against"], comparison["verdict"]) == ("bad", "variant good", "regressed")
    skipped = [r for r in suite.rows() if r["outcome"] == "skipped"]
    assert len(skipped) == 8 and {r["error"] for r in skipped} == {"verdict settled after 6 of 10 cases"}
