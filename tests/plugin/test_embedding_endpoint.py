"""``similar:cosine`` with ``[models.embedding]`` an ``openai:`` model behind a real HTTP endpoint (the loopback
server's ``/v1/embeddings``): one request per check, retried, cached, and its failures named."""

from __future__ import annotations

import json

import pytest

from tests.loopback import LoopbackServer
from tests.suite import Suite


REFUND = "your refund was issued"


def _similar(value: str = REFUND) -> list[dict[str, str]]:
    return [{"type": "similar:cosine", "value": value}]


def _embedding(loopback: LoopbackServer, **fields: object) -> dict[str, dict[str, object]]:
    return {"models.embedding": {"spec": "openai:emb-model", "base_url": loopback.base_url, **fields}}


def test_similar_cosine_passes_and_fails_by_the_vectors_the_endpoint_returns(
    suite: Suite, loopback: LoopbackServer
) -> None:
    """The server gives the close output a vector near the expected text's and the far one an orthogonal
    one; each check sends its texts (the output, then ``value``) in one request to ``/v1/embeddings``."""
    loopback.knobs.vectors = {REFUND: [1.0, 0.0, 0.0], "Refund issued": [0.9, 0.1, 0.0], "Sunny": [0.0, 0.0, 1.0]}
    suite.cases(
        [
            {"case_id": "close", "input": "Refund issued", "slice": "s", "assert": _similar()},
            {"case_id": "far", "input": "Sunny", "slice": "s", "assert": _similar()},
        ]
    )
    suite.config(_embedding(loopback, max_retries=0))
    result = suite.run("--prompt-report", "report", "--prompt-no-cache")
    result.assert_outcomes(passed=1, failed=1)
    rows = suite.by_id()
    [close] = rows["close"]["checks"]
    assert close["passed"] is True and close["message"].endswith("similarity 0.99")
    assert close["details"] == {"embedding_usage": {"prompt_tokens": 6, "completion_tokens": None, "total_tokens": 6}}
    [far] = rows["far"]["checks"]
    assert far["passed"] is False and "similarity 0.00" in far["message"]
    assert sorted(json.dumps(e["body"]["input"]) for e in loopback.stats.log) == [
        json.dumps(["Refund issued", REFUND]),
        json.dumps(["Sunny", REFUND]),
    ]
    assert {(e["path"], e["body"]["model"]) for e in loopback.stats.log} == {("/v1/embeddings", "emb-model")}


def test_a_500_is_retried_and_the_answer_cached(suite: Suite, loopback: LoopbackServer) -> None:
    """A 500 on the first attempt is retried; the second run answers the check from the response cache."""
    suite.cases([{"case_id": "a", "input": "your refund was issued [[500]]", "slice": "s", "assert": _similar()}])
    suite.config(_embedding(loopback, max_retries=1, params={"dimensions": 16}))
    suite.run("--prompt-report", "report").assert_outcomes(passed=1)
    assert [e["status"] for e in loopback.stats.log] == [500, 200]
    assert all(e["body"]["dimensions"] == 16 for e in loopback.stats.log)
    assert suite.by_id()["a"]["checks"][0]["passed"] is True
    suite.run("--prompt-report", "again").assert_outcomes(passed=1)
    assert loopback.stats.requests == 2  # no new request: the embeddings came from the cache
    assert suite.by_id("again")["a"]["checks"][0]["message"] == suite.by_id()["a"]["checks"][0]["message"]


def test_embeddings_are_recorded_and_replayed(suite: Suite, loopback: LoopbackServer) -> None:
    """A cassette keeps the embeddings as it keeps answers: the replay checks them offline, the same way."""
    suite.cases([{"case_id": "a", "input": "your refund was issued today", "slice": "s", "assert": _similar()}])
    suite.config(_embedding(loopback))
    suite.run("--prompt-record", "cassette.jsonl", "--prompt-report", "rec").assert_outcomes(passed=1)
    assert loopback.stats.requests == 1
    suite.run("--prompt-replay", "cassette.jsonl", "--prompt-report", "replay").assert_outcomes(passed=1)
    assert loopback.stats.requests == 1
    assert suite.by_id("replay")["a"]["checks"] == suite.by_id("rec")["a"]["checks"]
    suite.cases([{"case_id": "b", "input": "not recorded", "slice": "s", "assert": _similar()}])
    suite.run("--prompt-replay", "cassette.jsonl", "--prompt-report", "miss").assert_outcomes(failed=1)
    [check] = suite.by_id("miss")["b"]["checks"]
    assert (
        "the embedding model failed: openai:emb-model on case b: no recorded response in the cassette"
        in check["message"]
    )
    assert "case b: case b" not in check["message"]


def test_a_401_names_the_model_and_the_case_without_the_key(
    suite: Suite, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-embedding-key-NEVER-SHOWN-7a1c"
    loopback.knobs.api_key = "another-key"
    monkeypatch.setenv("EMB_KEY", secret)
    suite.cases([{"case_id": "c1", "input": "hello", "slice": "s", "assert": _similar()}])
    suite.config(_embedding(loopback, api_key_env="EMB_KEY"))
    result = suite.run("--prompt-report", "report")
    result.assert_outcomes(failed=1)
    [check] = suite.by_id()["c1"]["checks"]
    message = check["message"]
    assert "the embedding model failed: openai:emb-model on case c1: HTTP 401 from " in message
    assert "/v1/embeddings: Incorrect API key provided: ***" in message
    assert "(check the key in $EMB_KEY)" in message
    assert loopback.stats.log[0]["authorization"] == f"Bearer {secret}"
    assert secret not in result.stdout.str() + result.stderr.str()
    assert all(secret not in p.read_text(encoding="utf-8") for p in (suite.path / "report").rglob("*") if p.is_file())


def test_bad_embedding_params_stop_before_any_call(suite: Suite, loopback: LoopbackServer) -> None:
    suite.cases([{"case_id": "a", "input": "x", "slice": "s", "assert": _similar()}])
    suite.config(_embedding(loopback, params={"input": ["y"]}))
    result = suite.run()
    assert result.ret != 0
    text = result.stdout.str() + result.stderr.str()
    assert "models.embedding.spec = 'openai:emb-model': params may not set 'input'" in text
    assert loopback.stats.requests == 0
