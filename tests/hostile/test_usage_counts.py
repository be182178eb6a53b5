"""An endpoint's ``usage`` that is no token count (a bool, a negative, a fraction, a huge number) is taken as not
reported: never priced, never credited to ``budget_usd``, never a negative in the totals; the run says so once."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_promptsuite.models.model_api import Usage
from tests.loopback import LoopbackServer
from tests.suite import Suite


#: A prompt token count that is no count, with a real completion count beside it.
NO_COUNT: dict[str, Any] = {"negative": -1_000_000, "bool": True, "fraction": 2.5, "huge": 10**15, "text": "12"}

PRICES = {"prompt": 1_000_000, "completion": 1_000_000}  # 1 USD a token


@pytest.mark.parametrize("value", NO_COUNT.values(), ids=NO_COUNT.keys())
def test_a_usage_count_that_is_no_count_is_not_reported(value: Any) -> None:
    usage = Usage(value, 3, 7)
    assert usage.to_dict() == {"prompt_tokens": None, "completion_tokens": 3, "total_tokens": 7}
    assert usage.unreadable == ("prompt_tokens",)


@pytest.mark.parametrize("value", NO_COUNT.values(), ids=NO_COUNT.keys())
def test_no_count_is_priced_or_credited_to_the_budget(suite: Suite, loopback: LoopbackServer, value: Any) -> None:
    """Each call is estimated at 2 + 10 = 12 USD; with no usage to settle it, the estimate stays spent, so a
    budget of 30 issues two calls (a negative count once credited the budget and every call went out)."""
    loopback.reset(usage={"prompt_tokens": value, "completion_tokens": 1, "total_tokens": 1})
    suite.cases(
        {"case_id": f"c-{i}", "input": f"prompt-{i}", "slice": "s", "assert": [{"type": "cost", "threshold": 100}]}
        for i in range(6)
    )
    model = loopback.model(concurrency=1, budget_usd=30, prices=PRICES, params={"max_tokens": 10})
    suite.config({"model": model})
    result = suite.run("--prompt-no-cache", "--prompt-report", "report")

    result.assert_outcomes(passed=2, skipped=4)
    assert loopback.stats.requests == 2
    rows = [row for row in suite.rows() if row["outcome"] == "passed"]
    assert all(row["usage"]["prompt_tokens"] is None for row in rows)
    assert all(check["skipped"] for row in rows for check in row["checks"] if check["name"] == "cost")
    total = suite.summary()["usage"]["total"]
    assert all(v is None or v >= 0 for v in total.values() if isinstance(v, (int, float)))
    assert suite.summary()["run"]["models"][""]["calls"]["unreadable_usage"] == 2
    said = [line for line in result.stdout.lines if "token usage that is no count" in line]
    assert len(said) == 1 and "2 answers reported token usage that is no count" in said[0]
