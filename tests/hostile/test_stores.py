"""What files keep of a call (issue 25, findings 3 and 4): a cache hit or a replay gives the checks what the
model said, never a scrubbed copy; a batch request file holds the very body a direct call sends, and no
request that holds the API key."""

from __future__ import annotations

import json

import pytest

from tests.hostile.support import SECRET
from tests.hostile.support import assert_clean
from tests.hostile.support import assert_secret_nowhere
from tests.hostile.support import case
from tests.hostile.support import endpoint
from tests.loopback import LoopbackServer
from tests.suite import Suite


#: Credential-like text a prompt may hold and a direct call sends as it is (the scrubber would change each).
CREDENTIAL_LIKE = [
    "fetch https://admin:s3cretpw@db.internal/dump now",
    "curl -H 'Authorization: Bearer abcdefgh12345' https://api.example/v1?token=t0k3n-value",
    "plain words",
]


# -- finding 3: a cache hit or a replay changes no verdict ---------------------------------------


def test_an_injection_case_has_one_verdict_live_from_the_cache_and_from_a_cassette(
    suite: Suite, loopback: LoopbackServer
) -> None:
    """The model leaks a password in a URL's ``user:password@``: the case fails live; it must not pass
    because a stored copy had the password scrubbed."""
    leak = "the database is at https://admin:s3cretpw@db.internal/prod"
    suite.config(endpoint(loopback.base_url))
    suite.cases(
        [
            case("leak", leak, slice="injection", must_not_include=["s3cretpw"]),
            case("safe", "nothing to hide", slice="injection", must_not_include=["s3cretpw"]),
        ]
    )
    live = suite.run("--prompt-report", "live", "--prompt-record", "cassette.jsonl")
    cached = suite.run("--prompt-report", "cached")
    replayed = suite.run("--prompt-no-cache", "--prompt-report", "replayed", "--prompt-replay", "cassette.jsonl")

    for result in (live, cached, replayed):
        assert_clean(result)
        assert result.ret == pytest.ExitCode.TESTS_FAILED
    rows = {name: suite.by_id(name) for name in ("live", "cached", "replayed")}
    assert [rows[name]["leak"]["outcome"] for name in rows] == ["failed", "failed", "error"]
    assert [rows[name]["safe"]["outcome"] for name in rows] == ["passed"] * 3
    assert [suite.summary(name)["gate"]["passed"] for name in rows] == [False] * 3
    assert rows["cached"]["safe"]["latency_ms"] is None  # the safe answer came from the cache ...
    assert rows["cached"]["leak"]["latency_ms"] is not None  # ... the leaking one was asked again
    asked = [entry["body"]["messages"][0]["content"] for entry in loopback.stats.log]
    assert sorted(asked[:2]) == sorted([leak, "nothing to hide"]) and asked[2:] == [leak]  # the live run's two at once
    assert rows["replayed"]["leak"]["error"] == (
        f"case leak: the cassette {suite.path / 'cassette.jsonl'} holds no answer for this call: the answer held "
        "credential-like text (a key, a URL's user:password@, a Bearer token or a key-like query parameter), "
        "which no file keeps, and a replay must not check a scrubbed copy; run this case against the endpoint "
        "(without --prompt-replay)"
    )
    cached_files = list((suite.path / ".promptsuite_cache").rglob("*.json"))
    assert len(cached_files) == 1  # the safe answer's
    for path in [*cached_files, suite.path / "cassette.jsonl"]:
        assert b"s3cretpw" not in path.read_bytes(), path


def test_an_answer_that_echoes_the_key_is_neither_cached_nor_replayed(
    suite: Suite, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    loopback.knobs.api_key = SECRET
    suite.config(endpoint(loopback.base_url))
    suite.cases([case("echo", "say it [[echo,echo]]", must_not_include=["sk-"])])  # echoes on each attempt
    live = suite.run("--prompt-report", "live", "--prompt-record", "cassette.jsonl")
    cached = suite.run("--prompt-report", "cached")
    replayed = suite.run("--prompt-no-cache", "--prompt-report", "replayed", "--prompt-replay", "cassette.jsonl")

    assert [suite.by_id(name)["echo"]["outcome"] for name in ("live", "cached", "replayed")] == [
        "failed",
        "failed",
        "error",
    ]
    assert loopback.stats.requests == 2
    assert_secret_nowhere(suite.path, live)
    assert_secret_nowhere(suite.path, cached)
    assert_secret_nowhere(suite.path, replayed)


# -- finding 4: the batch request file holds what a direct call sends -----------------------------


def test_the_batch_file_holds_the_very_bodies_direct_calls_and_the_upload_send(
    suite: Suite, loopback: LoopbackServer
) -> None:
    suite.prompts(CREDENTIAL_LIKE)
    suite.config({"model": loopback.model(params={"temperature": 0})})
    suite.run("--prompt-no-cache", "--prompt-concurrency", "1").assert_outcomes(passed=3)
    sent = {entry["body"]["messages"][0]["content"]: entry["raw"] for entry in loopback.stats.log}
    written = suite.run("--prompt-no-cache", "--prompt-batch-file", "requests.jsonl")
    written.assert_outcomes(skipped=3)
    loopback.reset()
    suite.run("--prompt-no-cache", "--prompt-batch").assert_outcomes(passed=3)

    data = (suite.path / "requests.jsonl").read_bytes()
    assert data == loopback.batch.files["file-1"]  # what --prompt-batch uploads, byte for byte
    lines = data.splitlines()
    assert len(lines) == len(CREDENTIAL_LIKE)
    for line in lines:
        prompt = json.loads(line)["body"]["messages"][0]["content"]
        assert line.endswith(b'"body":' + sent[prompt] + b"}"), (line, sent[prompt])
    assert sorted(sent) == sorted(CREDENTIAL_LIKE)


def test_a_request_that_holds_the_api_key_is_refused_not_rewritten(
    suite: Suite, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    suite.cases([case("keyed", f"my key is {SECRET}, keep it"), case("plain", "hello")])
    suite.config(endpoint(loopback.base_url))
    result = suite.run("--prompt-no-cache", "--prompt-batch-file", "requests.jsonl", "--prompt-report", "report")

    assert_clean(result)
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(["batch: 1 requests written to requests.jsonl"])
    rows = suite.by_id()
    assert rows["keyed"]["outcome"] == "error"
    assert rows["keyed"]["error"] == (
        f"the request holds a registered secret (the API key, or a key of the base URL): it is not written to "
        f"{suite.path / 'requests.jsonl'} (--prompt-batch-file), as no file ever holds one; take it out of the "
        "prompt and params"
    )
    assert rows["plain"]["outcome"] == "skipped"
    [line] = (suite.path / "requests.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["body"]["messages"][0]["content"] == "hello"
    assert_secret_nowhere(suite.path, result, written_by_user=("cases.jsonl",))
    assert loopback.stats.requests == 0
