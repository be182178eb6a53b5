"""The call budget end to end: ``--prompt-max-calls N`` and ``[model] budget_usd`` stop issuing
calls at the right one; the cases left end as skipped with the reason, and the run fails."""

from __future__ import annotations

import json

import pytest

from pytest_promptsuite.config.suite import Prices
from pytest_promptsuite.models.base import ModelRequest
from pytest_promptsuite.models.spend import Allowance
from pytest_promptsuite.models.spend import BudgetedModel
from pytest_promptsuite.models.spend import BudgetExhausted
from pytest_promptsuite.models.spend import estimate_tokens
from tests.loopback import LoopbackServer
from tests.plugin.test_endpoint import _cases
from tests.plugin.test_endpoint import _config
from tests.plugin.test_endpoint import _rows
from tests.plugin.test_endpoint import _run


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def test_max_calls_stops_after_that_many_calls(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    ids = _cases(pytester, [f"prompt {i}" for i in range(12)])
    _config(pytester, loopback.base_url)
    result = _run(pytester, "--prompt-no-cache", "--prompt-max-calls", "5", "--prompt-concurrency", "3",
                  "--prompt-report", "report")
    result.assert_outcomes(passed=5, skipped=7)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert loopback.stats.requests == 5
    rows = _rows(pytester)
    assert [row["case_id"] for row in rows] == ids  # every case has its row
    assert [row["outcome"] for row in rows] == ["passed"] * 5 + ["skipped"] * 7  # in the order they run
    assert rows[5]["error"] == "--prompt-max-calls 5 reached: the call was not issued"
    summary = json.loads((pytester.path / "report" / "summary.json").read_text())
    assert not summary["gate"]["passed"]
    result.stdout.fnmatch_lines(["*--prompt-max-calls 5 reached*5 of 12 cases ran*"])


def test_cache_hits_cost_no_call(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    _cases(pytester, ["a", "b", "c"])
    _config(pytester, loopback.base_url)
    _run(pytester).assert_outcomes(passed=3)
    loopback.reset()
    again = _run(pytester, "--prompt-max-calls", "1")
    again.assert_outcomes(passed=3)
    assert again.ret == pytest.ExitCode.OK and loopback.stats.requests == 0


def test_budget_usd_stops_before_the_budget_would_be_passed(
    pytester: pytest.Pytester, loopback: LoopbackServer
) -> None:
    """At 1 USD a token, each call is estimated at 2 prompt tokens (8 characters) + 10 (its
    max_tokens) = 12 USD and really costs 2 (the server counts 1 + 1 tokens). One at a time, the
    k-th call is issued while 2 (k - 1) + 12 <= 30: ten calls."""
    _cases(pytester, [f"prompt-{i}" for i in range(12)])  # 8 characters each
    _config(pytester, loopback.base_url, concurrency=1, budget_usd=30,
            prices={"prompt": 1_000_000, "completion": 1_000_000}, params={"max_tokens": 10})
    result = _run(pytester, "--prompt-no-cache", "--prompt-report", "report")
    result.assert_outcomes(passed=10, skipped=2)
    assert loopback.stats.requests == 10
    skipped = [row for row in _rows(pytester) if row["outcome"] == "skipped"]
    assert [row["case_id"] for row in skipped] == ["c-10", "c-11"]
    assert skipped[0]["error"].startswith("[model] budget_usd = 30 of openai:loop-model would be passed")
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_budget_usd_needs_prices(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    _cases(pytester, ["a"])
    _config(pytester, loopback.base_url, budget_usd=1)
    result = _run(pytester)
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
