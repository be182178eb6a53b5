"""A run of part of a suite (``-k``, ``-m``, ``--lf``), end to end: the gate's verdict says it judged a selection."""

from __future__ import annotations

import pytest

from tests.suite import THREE_SLICES
from tests.suite import Suite


@pytest.mark.parametrize("args", [[], ["-n", "2"]], ids=["serial", "xdist_two"])
def test_the_verdict_says_how_many_of_how_many_cases_k_judged(suite: Suite, args: list[str]) -> None:
    suite.cases(THREE_SLICES)
    result = suite.run("-k", "ok", *args)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["promptsuite gate: PASSED on a selection: 2 of 8 cases (-k, -m or --lf left out the rest)"]
    )


def test_the_verdict_says_lf_judged_the_cases_that_failed_last_time(suite: Suite) -> None:
    suite.cases(THREE_SLICES)
    suite.run("-p", "cacheprovider").assert_outcomes(passed=6, failed=2)
    again = suite.run("-p", "cacheprovider", "--lf")
    again.assert_outcomes(failed=2)
    again.stdout.fnmatch_lines(["promptsuite gate: FAILED on a selection: 2 of 8 cases (*)"])


def test_a_whole_run_and_a_shard_say_nothing_of_a_selection(suite: Suite) -> None:
    suite.cases(THREE_SLICES)
    whole = suite.run()
    assert "on a selection" not in whole.stdout.str()
    shard = suite.run("--prompt-shard", "1/2", "--prompt-report", "part")
    assert "on a selection" not in shard.stdout.str()
    assert shard.ret in (0, 1)
