"""The cost and token gates end to end: tokens and cost per case (the judge's apart) in ``summary.json``
and the reports, compared with the baseline's; ``[gate] max_tokens_increase`` / ``max_cost_increase``
fail a run whose figures per case rose more than allowed, per slice and in total."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.loopback import LoopbackServer
from tests.suite import Suite


PRICES = {"prompt": 1_000_000, "completion": 2_000_000}  # USD per million tokens: 1 and 2 USD a token


def _cases(suite: Suite) -> None:
    """Two slices of two cases; the loopback server echoes the prompt and counts its words as tokens."""
    suite.cases(
        [
            {"case_id": "a1", "input": "one two", "slice": "a", "must_include": ["one"]},
            {"case_id": "a2", "input": "three four", "slice": "a", "must_include": ["three"]},
            {"case_id": "b1", "input": "five six", "slice": "b", "must_include": ["five"]},
            {"case_id": "b2", "input": "seven eight", "slice": "b", "must_include": ["seven"]},
        ]
    )


def _config(suite: Suite, loopback: LoopbackServer, template: str, **gate: Any) -> None:
    tables: dict[str, dict[str, Any]] = {
        "model": loopback.model(prices=PRICES),
        "template": {"prompt_template": template},
    }
    if gate:
        tables["gate"] = gate
    suite.config(tables)


def test_doubled_completion_tokens_fail_max_tokens_increase(suite: Suite, loopback: LoopbackServer) -> None:
    _cases(suite)
    _config(suite, loopback, "{input}")
    suite.run("--prompt-no-cache", "--prompt-report", "base").assert_outcomes(passed=4)
    base = suite.summary("base")["usage"]
    assert base["total"]["tokens_per_case"] == 4.0  # 2 prompt + 2 completion words
    assert base["total"]["cost_per_case"] == pytest.approx(2 * 1 + 2 * 2)

    _config(suite, loopback, "{input} {input}", max_tokens_increase=0.2)  # twice the words: 2x the completion
    result = suite.run("--prompt-no-cache", "--prompt-report", "report", "--prompt-baseline", "base")
    result.assert_outcomes(passed=4)  # every case passes, yet the run fails
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    summary = suite.summary()
    assert not summary["gate"]["passed"]
    total = summary["usage"]["total"]
    assert (total["tokens_per_case"], total["baseline_tokens_per_case"]) == (8.0, 4.0)
    assert [s["completion_tokens"] for s in summary["usage"]["slices"]] == [8, 8]  # 2 cases x 4 words
    assert summary["max_tokens_increase"] == 0.2
    assert summary["gate"]["reasons"] == [
        "slice 'a': tokens per case rose by 100% against the baseline (4.0 -> 8.0 tokens per case), "
        "more than [gate] max_tokens_increase = 0.2 allows",
        "slice 'b': tokens per case rose by 100% against the baseline (4.0 -> 8.0 tokens per case), "
        "more than [gate] max_tokens_increase = 0.2 allows",
        "in total: tokens per case rose by 100% against the baseline (4.0 -> 8.0 tokens per case), "
        "more than [gate] max_tokens_increase = 0.2 allows",
    ]
    result.stdout.fnmatch_lines(["*per case: 8.0 (baseline 4.0, +100%) tokens*", "*max_tokens_increase = 0.2*"])
    markdown = (suite.path / "report" / "summary.md").read_text(encoding="utf-8")
    assert "8.0 (baseline 4.0, +100%)" in markdown


def test_cost_gate_and_a_rise_within_the_limit(suite: Suite, loopback: LoopbackServer) -> None:
    """One more word a prompt (2 -> 3 words, so +50 % tokens and cost) fails ``max_cost_increase = 0.2``
    and passes ``max_tokens_increase = 0.5`` (a rise of exactly the limit is allowed)."""
    _cases(suite)
    _config(suite, loopback, "{input}")
    suite.run("--prompt-no-cache", "--prompt-report", "base").assert_outcomes(passed=4)
    _config(suite, loopback, "Q {input}", max_tokens_increase=0.5, max_cost_increase=0.2)  # 3 + 3 words
    result = suite.run("--prompt-no-cache", "--prompt-report", "report", "--prompt-baseline", "base")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    reasons = suite.summary()["gate"]["reasons"]
    assert reasons[-1] == (
        "in total: cost per case rose by 50% against the baseline ($6.000000 -> $9.000000 per case), "
        "more than [gate] max_cost_increase = 0.2 allows"
    )
    assert not any("tokens per case" in r for r in reasons)
    _config(suite, loopback, "Q {input}", max_tokens_increase=0.5)
    again = suite.run("--prompt-no-cache", "--prompt-report", "report", "--prompt-baseline", "base")
    assert again.ret == pytest.ExitCode.OK  # +50 % is within a limit of 50 %


def test_without_a_baseline_the_limits_do_nothing(suite: Suite, loopback: LoopbackServer) -> None:
    _cases(suite)
    _config(suite, loopback, "{input} {input}", max_tokens_increase=0.0)
    result = suite.run("--prompt-no-cache", "--prompt-report", "report")
    assert result.ret == pytest.ExitCode.OK
    assert suite.summary()["usage"]["total"]["baseline_tokens_per_case"] is None


def test_judge_tokens_are_counted_apart(suite: Suite, loopback: LoopbackServer) -> None:
    """The judge (the loopback server, echoing the rubric prompt, whose rubric holds the verdict) reports
    tokens: they are the judge's, not the tested model's."""
    suite.cases(
        [
            {
                "case_id": "j1",
                "input": "one two",
                "slice": "s",
                "assert": [{"type": "llm-rubric", "value": '{"pass": true}'}],
            }
        ]
    )
    suite.config({"model": loopback.model(), "models.judge": loopback.model()})
    suite.run("--prompt-no-cache", "--prompt-report", "report").assert_outcomes(passed=1)
    total = suite.summary()["usage"]["total"]
    assert (total["prompt_tokens"], total["completion_tokens"], total["tokens_per_case"]) == (2, 2, 4.0)
    assert total["judge_prompt_tokens"] > 20 and total["judge_prompt_tokens"] == total["judge_completion_tokens"]


def test_bad_gate_values_name_the_line(suite: Suite) -> None:
    suite.prompts(["a"])
    suite.config("[gate]\nalpha = 0.05\nmax_cost_increase = -0.1\ncase_pass = 0\n")
    result = suite.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*promptsuite.toml:3: gate.max_cost_increase: Input should be greater than or equal to 0*",
            "*promptsuite.toml:4: gate.case_pass: Input should be greater than 0 or 'any'*",
        ]
    )


def test_a_baseline_with_odd_usage_fields_counts_them_as_absent(suite: Suite, loopback: LoopbackServer) -> None:
    """A hand-edited baseline whose ``usage`` and ``latency_ms`` are not what a run writes: no traceback,
    those rows report no tokens (so there is no per-case figure to compare with)."""
    _cases(suite)
    lines = [
        json.dumps({"case_id": c, "slice": s, "outcome": "passed", "usage": u, "latency_ms": "slow"})
        for c, s, u in (
            ("a1", "a", "lots"),
            ("a2", "a", [1, 2]),
            ("b1", "b", {"prompt_tokens": "2"}),
            ("b2", "b", None),
        )
    ]
    suite.write("base/results.jsonl", "\n".join(lines) + "\n")
    _config(suite, loopback, "{input}", max_tokens_increase=0.0)
    result = suite.run("--prompt-no-cache", "--prompt-report", "report", "--prompt-baseline", "base")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert suite.summary()["usage"]["total"]["baseline_tokens_per_case"] is None


def _variant_config(suite: Suite, loopback: LoopbackServer, **gate: Any) -> None:
    """Variant v1 sends the input, v2 the input three times (three times the tokens)."""
    tables: dict[str, Any] = {
        "model": loopback.model(prices=PRICES),
        "variants": {"v1": {"prompt_template": "{input}"}, "v2": {"prompt_template": "{input} {input} {input}"}},
    }
    if gate:
        tables["gate"] = gate
    suite.config(tables)


def test_tokens_and_cost_pair_by_case_variant_and_repeat(suite: Suite, loopback: LoopbackServer) -> None:
    """A baseline of two variants and two repeats; the same v2 run again (a change of 0 %) passes limits of
    5 %, against v2's own rows (not the mean of v1 and v2), over every repeat."""
    _cases(suite)
    _variant_config(suite, loopback)
    suite.run("--prompt-no-cache", "--prompt-repeat", "2", "--prompt-report", "base").assert_outcomes(passed=16)
    _variant_config(suite, loopback, max_tokens_increase=0.05, max_cost_increase=0.05)
    args = ("--prompt-no-cache", "--prompt-repeat", "2", "--prompt-baseline", "base", "--prompt-report", "report")
    result = suite.run(*args, "--prompt-variant", "v2")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    total = suite.summary()["usage"]["total"]
    assert (total["tokens_per_case"], total["baseline_tokens_per_case"]) == (12.0, 12.0)  # 6 + 6 words, both runs
    assert [s["baseline_tokens_per_case"] for s in suite.summary()["usage"]["slices"]] == [12.0, 12.0]

    _variant_config(suite, loopback, max_tokens_increase=0.05)
    suite.write("cases.jsonl", suite.path.joinpath("cases.jsonl").read_text().replace('"one two"', '"one two x"'))
    result = suite.run(*args, "--prompt-variant", "v2")  # a1 sends 3 words thrice: 9 + 9 tokens, not 6 + 6
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert suite.summary()["gate"]["reasons"][0] == (
        "slice 'a' [variant v2]: tokens per case rose by 25% against the baseline (12.0 -> 15.0 tokens per "
        "case), more than [gate] max_tokens_increase = 0.05 allows"
    )
