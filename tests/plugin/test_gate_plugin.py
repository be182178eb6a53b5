"""The regression gate through pytest and ``promptsuite diff``: the ``[gate]`` table and options,
the run record in ``summary.json``, variants with models of their own, and diff's exit status."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pytest_promptsuite.cli.main import main as cli_main
from tests.loopback import LoopbackServer
from tests.suite import Suite


#: Thresholds of 0: only the regression gate can fail these runs.
NO_THRESHOLD = ("--prompt-min-pass-rate", "0")


def _cases(suite: Suite, failing: set[int], n: int = 20) -> None:
    """``n`` cases of one slice; the fake model echoes, so case ``i`` fails when ``i in failing``."""
    suite.cases(
        {"case_id": f"c{i:02d}", "input": "nope" if i in failing else f"ok {i}", "slice": "s", "must_include": ["ok"]}
        for i in range(n)
    )


def test_gate_settings_come_from_the_config_and_the_option_wins(suite: Suite) -> None:
    _cases(suite, set())
    assert suite.run(*NO_THRESHOLD, "--prompt-report", "base").ret == 0
    _cases(suite, {0, 1, 2})  # three regressions: one-sided p = 1/8
    suite.config({"gate": {"alpha": 0.2, "correction": "none", "regression": "paired"}})
    result = suite.run(*NO_THRESHOLD, "--prompt-baseline", "base", "--prompt-report", "now")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "regression rule: paired; one-sided exact test at alpha 0.2, no correction",
            "*slice 's': pass rate dropped 15.0 points against the baseline (100.0% -> 85.0%), more than the "
            "allowed 0.0 points (default), and it is significant (one-sided exact p = 0.125; alpha 0.2)*",
        ]
    )
    summary = suite.summary("now")
    assert (summary["alpha"], summary["correction"], summary["regression"], summary["max_regression"]) == (
        0.2,
        "none",
        "paired",
        0.0,
    )
    [row] = summary["slices"]
    assert (row["p_regression"], row["verdict"]) == (0.125, "regressed")
    assert summary["regression_tests"][0]["rule"] == "paired"
    run = summary["run"]
    assert run["models"] == {"": {"spec": "fake", "base_url": None, "params": {}, "deterministic": True}}
    assert run["deterministic"] is True and run["promptsuite_version"] and len(run["suite_hash"]) == 16
    assert summary["baseline_run"]["suite_hash"] != run["suite_hash"]  # the cases changed

    stricter = suite.run(*NO_THRESHOLD, "--prompt-baseline", "base", "--prompt-alpha", "0.1")
    assert stricter.ret == 0
    stricter.stdout.fnmatch_lines(["s against the baseline: inconclusive: drop 15.0 points over 20 cases*"])


def test_the_fake_model_keeps_todays_rule(suite: Suite) -> None:
    _cases(suite, set(), n=200)
    assert suite.run(*NO_THRESHOLD, "--prompt-report", "base").ret == 0
    assert suite.run(*NO_THRESHOLD, "--prompt-baseline", "base").ret == 0  # no change: never fails
    _cases(suite, set(range(10)), n=200)  # 10 regressions of 200: always fails
    result = suite.run(*NO_THRESHOLD, "--prompt-baseline", "base")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["regression rule: auto, here delta (both runs deterministic)"])


@pytest.mark.parametrize(
    ("args", "config", "message"),
    [
        (["--prompt-alpha", "1.5"], None, "*argument --prompt-alpha: '1.5' is not between 0 and 1*"),
        ([], '[gate]\nregression = "maybe"\n', "*gate.regression: Input should be 'auto', 'paired' or 'delta'*"),
        ([], "[gate]\nalpha = 0\n", "*gate.alpha: Input should be greater than 0*"),
        ([], "[gate]\nalfa = 0.1\n", "*unknown key 'gate.alfa' (did you mean 'alpha'?)*"),
    ],
)
def test_bad_gate_settings_are_usage_errors(suite: Suite, args: list[str], config: str | None, message: str) -> None:
    _cases(suite, set())
    if config is not None:
        suite.config(config)
    result = suite.run(*NO_THRESHOLD, *args, paths=["cases.jsonl", "."])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


VARIANT_CONFIG = """\
[suite]
cases = ["cases.jsonl"]

[variants.echo]
template = "{input}"

[variants.strict]
template = "{input}"
model = { spec = "fake:rules.json" }

[gate]
compare_variants = true
"""


def test_variants_with_their_own_model_are_gated_against_the_first(suite: Suite) -> None:
    _cases(suite, set(), n=12)
    suite.config(VARIANT_CONFIG)
    # the strict model answers "nope" to cases 0-5: six regressions against the echo variant
    rules = {"rules": [{"match": r"ok [0-5]$", "reply": "nope"}]}
    suite.write("rules.json", json.dumps(rules))
    result = suite.run(*NO_THRESHOLD, "--prompt-report", "rep", paths=["promptsuite.toml"])
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        ["*slice 's' [[]variant strict]: pass rate dropped 50.0 points against the variant echo (100.0% -> 50.0%)*"]
    )
    summary = suite.summary("rep")
    assert {name: model["spec"] for name, model in summary["run"]["models"].items()} == {
        "echo": "fake",
        "strict": "fake:rules.json",
    }
    [strict] = [s for s in summary["compared_variants"]["slices"] if s["variant"] == "strict"]
    assert strict["against_first"]["verdict"] == "regressed"
    assert strict["against_first"]["rule"] == "delta"  # both variants on deterministic models


def test_an_endpoint_run_is_judged_by_the_paired_test(suite: Suite, loopback: LoopbackServer) -> None:
    suite.config({"model": loopback.model(spec="openai:loop")})
    _cases(suite, set())
    assert suite.run(*NO_THRESHOLD, "--prompt-report", "base", "--prompt-no-cache").ret == 0
    _cases(suite, {4})  # one regression of 20: not evidence of a drop, with the echo server
    result = suite.run(*NO_THRESHOLD, "--prompt-baseline", "base", "--prompt-no-cache", "--prompt-report", "now")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "regression rule: auto, here paired (runs that may vary); one-sided exact test at alpha 0.05, "
            "Holm over 1 comparison",
            "s against the baseline: inconclusive: drop 5.0 points over 20 cases (p 0.5); detectable drop 25.0 points; "
            "about * cases or * repeats per case would settle it",
            "promptsuite gate: PASSED (1 failed case within tolerance)",
        ]
    )
    [row] = suite.summary("now")["slices"]
    assert (row["p_regression"], row["verdict"], row["detectable_drop"]) == (0.5, "inconclusive", 0.25)


def test_diff_exits_1_on_a_regression_0_otherwise_2_when_unreadable(suite: Suite) -> None:
    _cases(suite, set())
    assert suite.run(*NO_THRESHOLD, "--prompt-report", "base").ret == 0
    _cases(suite, {0, 1, 2})
    assert suite.run(*NO_THRESHOLD, "--prompt-report", "now").ret == 0  # thresholds are 0 and no baseline
    base, now = str(suite.path / "base"), str(suite.path / "now")
    assert cli_main(["diff", base, now]) == 1  # the fake model: delta, 3 regressions
    assert cli_main(["diff", base, base]) == 0
    assert cli_main(["diff", base, now, "--prompt-max-regression", "0.2"]) == 0
    # a bare results.jsonl: the paired rule; 3 regressions of 20 are not significant at 0.05
    bare = suite.path / "bare.jsonl"
    bare.write_text((suite.path / "now" / "results.jsonl").read_text("utf-8"), "utf-8")
    assert cli_main(["diff", base, str(bare)]) == 0
    assert cli_main(["diff", base, str(bare), "--prompt-alpha", "0.2"]) == 1
    assert cli_main(["diff", base, str(suite.path / "missing.jsonl")]) == 2
    (suite.path / "broken.jsonl").write_text("{nope\n", "utf-8")
    assert cli_main(["diff", base, str(suite.path / "broken.jsonl")]) == 2
    Path(suite.path / "other.jsonl").write_text(
        json.dumps({"case_id": "zz", "slice": "s", "outcome": "passed"}) + "\n", "utf-8"
    )
    assert cli_main(["diff", base, str(suite.path / "other.jsonl")]) == 1  # nothing in common


def _drawn_passes(prompt: str, p: float, runs: int, seed: int = 0) -> int:
    """How many of ``runs`` attempts the loopback server echoes a ``<<pass p>>`` prompt (its own draw)."""
    draws = [hashlib.sha256(f"pass\0{seed}\0{prompt}\0{a}".encode()).digest() for a in range(runs)]
    return sum(int.from_bytes(d[:8], "big") / 2**64 < p for d in draws)


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_case_pass_counts_cases_over_their_repeats(suite: Suite, loopback: LoopbackServer, xdist: list[str]) -> None:
    """Five repeats of each case against seeded answers: a case passes when 4 of its 5 pass; under
    pytest-xdist a case's repeats run on either worker and the controller judges the case."""
    inputs = [f"case {i} <<pass 0.7>>" for i in range(12)]
    suite.cases(
        [{"case_id": f"c{i:02d}", "input": text, "slice": "s", "must_include": [text]} for i, text in enumerate(inputs)]
    )
    suite.config({"model": loopback.model(), "gate": {"case_pass": 0.8}, "thresholds": {"default": 0.0}})
    result = suite.run("--prompt-no-cache", "--prompt-repeat", "5", "--prompt-report", "report", *xdist)
    assert result.ret == pytest.ExitCode.OK
    k = [_drawn_passes(text, 0.7, 5) for text in inputs]
    assert 0 < sum(n >= 4 for n in k) < 12  # the draw makes both kinds
    summary = suite.summary()
    (stats,) = summary["slices"]
    assert (stats["cases"], stats["passed"], stats["failed"]) == (12, sum(n >= 4 for n in k), sum(n < 4 for n in k))
    by_case = {c["case_id"]: (c["passed"], c["runs"], c["case_passed"]) for c in summary["repeated_cases"]}
    assert by_case == {f"c{i:02d}": (n, 5, n >= 4) for i, n in enumerate(k)}
    missed = ", ".join(f"c{i:02d} {n} of 5" for i, n in enumerate(k) if n < 4)
    result.stdout.fnmatch_lines(
        [f"*case_pass 0.8: a case passes when at least 80% of its repeats pass*did not: {missed}"]
    )
