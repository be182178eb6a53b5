"""``concurrency = "auto"`` against the loopback server's token bucket: the cases end as if there were no limit,
and the summary and the terminal say the concurrency reached and the share of attempts answered 429."""

from __future__ import annotations

import pytest

from tests.loopback import LoopbackServer
from tests.suite import Suite


@pytest.mark.slow
def test_auto_concurrency_finds_the_rate_limit_with_no_case_lost(
    suite: Suite, loopback: LoopbackServer, plugin_args: list[str]
) -> None:
    # a limit met at any speed: answers held until two calls are in flight, requests 21 to 30 refused (a
    # 100 req/s bucket besides, which a fast machine meets too, a loaded one never)
    loopback.reset(
        rate_rps=100, burst=10, max_concurrent=40, latency_s=0.05, hold_until=2, refuse_from=20, refuse_count=10
    )
    ids = suite.prompts([f"case {i}" for i in range(300)])
    suite.config({"model": loopback.model(concurrency="auto", max_concurrency=32, params={"max_tokens": 8})})
    result = suite.run("--prompt-report", "report", *plugin_args)

    result.assert_outcomes(passed=300)
    assert sorted(suite.by_id()) == sorted(ids)
    calls = suite.summary()["run"]["models"][""]["calls"]
    refused = loopback.stats.statuses.get(429, 0)
    assert refused >= 10  # the limit was met: the bound had something to find
    assert (calls["attempts"], calls["refused"]) == (loopback.stats.requests, refused)
    assert calls["refused_share"] == round(refused / loopback.stats.requests, 4)
    assert calls["concurrency"] == "auto" and calls["max_concurrency"] == 32
    assert 1 < calls["reached"] <= 32
    assert loopback.stats.max_answering <= 32
    share = f"{refused / loopback.stats.requests:.1%}"
    result.stdout.fnmatch_lines(
        [
            f"calls of openai:loop-model: {calls['attempts']:,} attempts, {refused} answered 429 ({share}), "
            f"concurrency auto, reached {calls['reached']} of max 32"
        ]
    )


def test_a_429_under_auto_concurrency_uses_up_no_retry(suite: Suite, loopback: LoopbackServer) -> None:
    """Under ``auto`` a 429 is the endpoint pacing the run: retried after its ``retry-after-ms`` without counting
    against ``max_retries`` (a fixed bound with ``max_retries = 0`` ends the refused cases as errors)."""
    suite.prompts([f"case {i}" for i in range(60)])
    loopback.reset(refuse_count=5, latency_s=0.02)  # the first five requests refused, at any speed
    suite.config({"model": loopback.model(concurrency=8, max_retries=0, params={"max_tokens": 8})})
    fixed = suite.run()
    assert loopback.stats.statuses.get(429, 0) > 0
    assert fixed.parseoutcomes().get("failed", 0) > 0  # the refused cases: errors, their one attempt spent
    fixed.stdout.fnmatch_lines(["*HTTP 429 from*(gave up after 1 attempt)*"])

    loopback.reset(refuse_count=5, latency_s=0.02)  # the first five requests refused, at any speed
    suite.config({"model": loopback.model(concurrency="auto", max_retries=0, params={"max_tokens": 8})})
    auto = suite.run()
    assert loopback.stats.statuses.get(429, 0) > 0  # refused, as the fixed bound was
    auto.assert_outcomes(passed=60)
