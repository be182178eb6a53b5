"""The call budget end to end: ``--prompt-max-calls N`` and ``[model] budget_usd`` stop issuing
calls at the right one; the cases left end as skipped with the reason, and the run fails."""

from __future__ import annotations

import pytest

from pytest_promptsuite.config.suite import Prices
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.spend import Allowance
from pytest_promptsuite.models.spend import BudgetedModel
from pytest_promptsuite.models.spend import BudgetExhausted
from pytest_promptsuite.models.spend import estimate_tokens
from tests.loopback import LoopbackServer
from tests.suite import Suite


def test_max_calls_stops_after_that_many_calls(suite: Suite, loopback: LoopbackServer) -> None:
    ids = suite.prompts([f"prompt {i}" for i in range(12)])
    suite.config({"model": loopback.model()})
    result = suite.run(
        "--prompt-no-cache", "--prompt-max-calls", "5", "--prompt-concurrency", "3", "--prompt-report", "report"
    )
    result.assert_outcomes(passed=5, skipped=7)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert loopback.stats.requests == 5
    rows = suite.rows()
    assert [row["case_id"] for row in rows] == ids  # every case has its row
    assert [row["outcome"] for row in rows] == ["passed"] * 5 + ["skipped"] * 7  # in the order they run
    assert rows[5]["error"] == "--prompt-max-calls 5 reached: the call was not issued"
    assert not suite.summary()["gate"]["passed"]
    result.stdout.fnmatch_lines(["*--prompt-max-calls 5 reached*5 of 12 cases ran*"])


def test_cache_hits_cost_no_call(suite: Suite, loopback: LoopbackServer) -> None:
    suite.prompts(["a", "b", "c"])
    suite.config({"model": loopback.model()})
    suite.run().assert_outcomes(passed=3)
    loopback.reset()
    again = suite.run("--prompt-max-calls", "1")
    again.assert_outcomes(passed=3)
    assert again.ret == pytest.ExitCode.OK and loopback.stats.requests == 0


def test_budget_usd_stops_before_the_budget_would_be_passed(suite: Suite, loopback: LoopbackServer) -> None:
    """At 1 USD a token, each call is estimated at 2 prompt tokens (8 characters) + 10 (its
    max_tokens) = 12 USD and really costs 2 (the server counts 1 + 1 tokens). One at a time, the
    k-th call is issued while 2 (k - 1) + 12 <= 30: ten calls."""
    suite.prompts([f"prompt-{i}" for i in range(12)])  # 8 characters each
    suite.config(
        {
            "model": loopback.model(
                concurrency=1,
                budget_usd=30,
                prices={"prompt": 1_000_000, "completion": 1_000_000},
                params={"max_tokens": 10},
            )
        }
    )
    result = suite.run("--prompt-no-cache", "--prompt-report", "report")
    result.assert_outcomes(passed=10, skipped=2)
    assert loopback.stats.requests == 10
    skipped = [row for row in suite.rows() if row["outcome"] == "skipped"]
    assert [row["case_id"] for row in skipped] == ["c-10", "c-11"]
    assert skipped[0]["error"].startswith("[model] budget_usd = 30 of openai:loop-model would be passed")
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_budget_usd_needs_prices(suite: Suite, loopback: LoopbackServer) -> None:
    suite.prompts(["a"])
    suite.config({"model": loopback.model(budget_usd=1)})
    result = suite.run()
    assert result.ret != pytest.ExitCode.OK
    assert "budget_usd of openai:loop-model needs [model] prices" in result.stdout.str() + result.stderr.str()


def test_the_estimate_uses_the_prompt_and_max_tokens() -> None:
    assert estimate_tokens(ModelRequest("x" * 9)) == (3, 3)
    assert estimate_tokens(ModelRequest("x" * 8, params={"max_tokens": 50})) == (2, 50)
    messages = [{"role": "system", "content": "abcd"}, {"role": "user", "content": "efgh"}]
    assert estimate_tokens(ModelRequest(messages, params={"max_completion_tokens": 7})) == (3, 7)


def test_the_allowance_refuses_the_call_that_would_pass_the_budget() -> None:
    allowance = Allowance(max_calls=10)
    account = BudgetedModel(_Dummy(), allowance, budget_usd=10.0, prices=Prices(prompt=1_000_000, completion=0))
    request = ModelRequest("x" * 8)  # 2 tokens: 2 USD
    for _ in range(5):
        allowance.take(account, request)
    with pytest.raises(BudgetExhausted, match="budget_usd = 10 of dummy would be passed"):
        allowance.take(account, request)
    assert allowance.issued == 5


class _Dummy:
    spec = "dummy"

    async def generate(self, request: ModelRequest) -> object:
        raise AssertionError("never called")
