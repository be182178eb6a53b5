"""The response cache and cassettes: keys, hits, what is never stored, record then replay offline."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import EndpointError
from pytest_promptsuite.errors import ModelError
from pytest_promptsuite.models.cache import CachingModel
from pytest_promptsuite.models.cache import Cassette
from pytest_promptsuite.models.cache import ResponseCache
from pytest_promptsuite.models.cache import ResponseStores
from pytest_promptsuite.models.cache import cache_key
from pytest_promptsuite.models.cache import model_identity
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.model_api import Response
from pytest_promptsuite.models.model_api import Usage
from pytest_promptsuite.models.openai import OpenAIModel
from pytest_promptsuite.models.retry import RetryPolicy
from pytest_promptsuite.models.runner import ModelRunner
from tests.loopback import LoopbackServer


IDENTITY = {"model": "openai:m", "base_url": "http://h/v1", "endpoint": "chat"}
SECRET = "sk-test-DO-NOT-LEAK-0123456789"


def _endpoint(server: LoopbackServer) -> OpenAIModel:
    return OpenAIModel("m", base_url=server.base_url, api_key=SECRET, retry=RetryPolicy(max_retries=0))


# -- keys ---------------------------------------------------------------------------------------


def test_the_key_covers_what_changes_the_answer() -> None:
    request = ModelRequest("hi", params={"temperature": 0, "max_tokens": 5}, repeat=0, case_id="a")
    key = cache_key(IDENTITY, request)

    changed = [
        cache_key(IDENTITY, ModelRequest("hi ", params=request.params)),
        cache_key(IDENTITY, ModelRequest([{"role": "user", "content": "hi"}], params=request.params)),
        cache_key(IDENTITY, ModelRequest("hi", params={"temperature": 1, "max_tokens": 5})),
        cache_key(IDENTITY, ModelRequest("hi", params=request.params, repeat=1)),
        cache_key({**IDENTITY, "model": "openai:n"}, request),
        cache_key({**IDENTITY, "base_url": "http://other/v1"}, request),
        cache_key({**IDENTITY, "endpoint": "completions"}, request),
    ]
    same = [
        cache_key(IDENTITY, ModelRequest("hi", params={"max_tokens": 5, "temperature": 0})),
        cache_key(IDENTITY, ModelRequest("hi", params=request.params, case_id="renamed")),
    ]

    assert len({key, *changed}) == 1 + len(changed)
    assert set(same) == {key}
    assert len(key) == 64


def test_the_key_ignores_concurrency_retries_timeouts_and_the_api_key(loopback: LoopbackServer) -> None:
    one = CachingModel(
        OpenAIModel("m", base_url=loopback.base_url, api_key="sk-a", timeout_s=1, retry=RetryPolicy(max_retries=0))
    )
    two = CachingModel(
        OpenAIModel("m", base_url=loopback.base_url, api_key="sk-b", timeout_s=60, retry=RetryPolicy(max_retries=5))
    )
    request = ModelRequest("hi")

    assert cache_key(one.identity, request) == cache_key(two.identity, request)
    assert "sk-" not in json.dumps(one.identity)


# -- the cache folder ---------------------------------------------------------------------------


def test_a_hit_has_no_latency_but_the_file_keeps_it(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache")
    answer = Response(text="hello", finish_reason="stop", usage=Usage(1, 2, 3), latency_ms=12.5)
    cache.put("ab" + "0" * 62, answer, case_id="c-1")

    hit = cache.get("ab" + "0" * 62)
    stored = json.loads((tmp_path / "cache/v1/ab" / f"{'ab' + '0' * 62}.json").read_text())

    assert hit == Response(text="hello", finish_reason="stop", usage=Usage(1, 2, 3), latency_ms=None, cached=True)
    assert stored["response"]["latency_ms"] == 12.5
    assert stored["case_id"] == "c-1"
    assert (tmp_path / "cache/.gitignore").read_text().splitlines()[-1] == "*"
    assert cache.get("cd" + "0" * 62) is None


def test_empty_outputs_are_never_stored(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache")
    cache.put("ab" * 32, Response(text=""))

    assert cache.get("ab" * 32) is None
    assert not (tmp_path / "cache").exists()


def test_an_answer_the_scrubber_would_change_is_not_stored(tmp_path: Path) -> None:
    """Stored scrubbed, its hit would give the checks ``***`` where the model said a password."""
    cache = ResponseCache(tmp_path)
    cache.put("ab" * 32, Response(text="log in at https://admin:pw-1234567@db.internal/"))
    cache.put("cd" * 32, Response(text="nothing secret"))

    assert (cache.stores, cache.withheld) == (1, 1)
    assert cache.get("ab" * 32) is None
    assert cache.get("cd" * 32) == Response("nothing secret", cached=True)


def test_a_damaged_entry_is_a_miss(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put("ab" * 32, Response(text="x"))
    (tmp_path / "v1/ab" / f"{'ab' * 32}.json").write_text('{"response": {"te')

    assert cache.get("ab" * 32) is None


def test_a_second_call_is_answered_from_the_cache(
    tmp_path: Path, loopback: LoopbackServer, runner: ModelRunner
) -> None:
    model = CachingModel(_endpoint(loopback), cache=ResponseCache(tmp_path))
    first = runner.call(model, ModelRequest("hello", case_id="c-1"))
    second = runner.call(model, ModelRequest("hello", case_id="c-1"))
    other_repeat = runner.call(model, ModelRequest("hello", case_id="c-1", repeat=1))

    assert loopback.stats.requests == 2  # the first call and repeat 1; not the second call
    assert first.latency_ms is not None and not first.cached
    assert first.model  # the name the endpoint says answered, kept by the cache (a judge's fingerprint holds it)
    assert second == Response(
        text="hello", finish_reason="stop", usage=first.usage, latency_ms=None, cached=True, model=first.model
    )
    assert not other_repeat.cached


def test_the_runner_stores_answers_on_the_main_thread(
    tmp_path: Path, loopback: LoopbackServer, runner: ModelRunner
) -> None:
    model = runner.attach(_endpoint(loopback), stores=ResponseStores(cache=ResponseCache(tmp_path)))
    requests = [ModelRequest(f"held {i}", case_id=f"c-{i}") for i in range(3)]
    for request in requests:
        runner.prefetch(model, request, key=request.case_id)
    while runner.unfinished():
        time.sleep(0.01)
    stored = list(tmp_path.rglob("*.json"))  # answered, not stored yet: the loop thread writes no file

    assert runner.call(model, requests[0], key="c-0").text == "held 0"
    after_one_case = len(list(tmp_path.rglob("*.json")))
    runner.close()  # the answers nobody collected are stored too

    assert stored == [] and after_one_case == 3
    fresh = ResponseCache(tmp_path)
    assert [fresh.get(cache_key(model_identity(_endpoint(loopback)), r)) is not None for r in requests] == [True] * 3


def test_the_runner_looks_up_stored_answers_on_the_callers_thread(tmp_path: Path, loopback: LoopbackServer) -> None:
    """A cache hit or a replayed answer never goes to the event loop thread: a run answered from
    the stores alone starts no loop at all."""
    cache, cassette = ResponseCache(tmp_path / "cache"), tmp_path / "cassette.jsonl"
    request = ModelRequest("stored", case_id="c-1")
    warm = ModelRunner()
    recording = Cassette(cassette, "record")
    recording.start()
    warm.call(warm.attach(_endpoint(loopback), stores=ResponseStores(cache=cache, record=recording)), request)
    warm.close()
    recording.finalize()
    calls_so_far = loopback.stats.requests

    for stores in (
        ResponseStores(cache=ResponseCache(tmp_path / "cache")),
        ResponseStores(replay=Cassette(cassette, "replay")),
    ):
        runner = ModelRunner()
        model = runner.attach(_endpoint(loopback), stores=stores)
        runner.prefetch(model, request, key="c-1")
        answer = runner.call(model, request, key="c-1")
        assert answer.cached and answer.text == "stored"
        assert runner._loop is None and runner.unfinished() == 0 and runner.prefetch_hits == 1
        runner.close()
    assert loopback.stats.requests == calls_so_far


@pytest.mark.parametrize("script", ["[[400]]", "[[empty]]"])
def test_errors_and_empty_outputs_are_asked_again(
    tmp_path: Path, loopback: LoopbackServer, runner: ModelRunner, script: str
) -> None:
    model = CachingModel(_endpoint(loopback), cache=ResponseCache(tmp_path))
    request = ModelRequest(f"x {script}")
    try:
        runner.call(model, request)
    except EndpointError:
        pass
    answer = runner.call(model, request)  # the script's fault was the first attempt only

    assert loopback.stats.requests == 2
    assert answer.text == f"x {script}" and not answer.cached


# -- cassettes --------------------------------------------------------------------------------


def test_record_then_replay_without_the_server(tmp_path: Path, loopback: LoopbackServer, runner: ModelRunner) -> None:
    path = tmp_path / "cassette.jsonl"
    recording = Cassette(path, "record")
    recording.start()
    recorder = CachingModel(_endpoint(loopback), record=recording)
    for case_id in ["b-2", "a-1"]:
        runner.call(recorder, ModelRequest(f"say {case_id}", case_id=case_id))
    assert recording.finalize() == 2

    offline = OpenAIModel("m", base_url=loopback.base_url, api_key=None)
    loopback.reset(fail_rate=1.0, fail_statuses=(400,))  # any call now would fail
    replayer = CachingModel(offline, replay=Cassette(path, "replay"))
    answer = runner.call(replayer, ModelRequest("say a-1", case_id="a-1"))

    assert answer.text == "say a-1" and answer.cached and answer.latency_ms is None
    assert loopback.stats.requests == 0
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    assert [e["case_id"] for e in entries] == ["a-1", "b-2"]  # sorted, for readable diffs
    assert entries[0]["response"]["latency_ms"] > 0
    assert entries[0]["model"] == {"model": "openai:m", "base_url": loopback.base_url, "endpoint": "chat"}


def test_a_replay_miss_names_the_case(tmp_path: Path, loopback: LoopbackServer, runner: ModelRunner) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    replayer = CachingModel(_endpoint(loopback), replay=Cassette(path, "replay"))

    with pytest.raises(ModelError) as info:
        runner.call(replayer, ModelRequest("new prompt", case_id="refund-007", repeat=2))
    assert str(info.value).startswith(
        f"case refund-007: no recorded response in the cassette {path} (model openai:m, "
        f"base_url {loopback.base_url}, endpoint chat, repeat 2)"
    )
    assert str(info.value).endswith("record it again with --prompt-record")
    assert loopback.stats.requests == 0


def test_a_bad_cassette_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"key": "k", "response": {"text": "x"}}\n{"key": "k2"}\n')

    with pytest.raises(ConfigError, match=rf"^{path}:2: not a cassette entry"):
        Cassette(path, "replay")


def test_a_missing_cassette_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--prompt-replay .*nope.jsonl: cannot read the cassette"):
        Cassette(tmp_path / "nope.jsonl", "replay")


def test_the_secret_reaches_no_file(tmp_path: Path, loopback: LoopbackServer, runner: ModelRunner) -> None:
    loopback.knobs.api_key = SECRET
    cassette = Cassette(tmp_path / "rec" / "cassette.jsonl", "record")
    cassette.start()
    model = CachingModel(_endpoint(loopback), cache=ResponseCache(tmp_path / "cache"), record=cassette)
    for i in range(3):
        runner.call(model, ModelRequest(f"q {i}", case_id=f"c-{i}"))
    cassette.finalize()

    assert [e["authorization"] for e in loopback.stats.log] == [f"Bearer {SECRET}"] * 3
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) == 1 + 3 + 1  # the cassette, three answers, .gitignore
    for path in written:
        assert SECRET not in path.read_text(encoding="utf-8"), path


class _Counting:
    """A conftest-style async model with no ``cache_identity``."""

    spec = "counting"

    def __init__(self) -> None:
        self.calls = 0

    async def generate(self, request: ModelRequest) -> Response:
        self.calls += 1
        return Response(text=f"{request.prompt} #{self.calls}")


def test_only_models_with_a_cache_identity_are_cached(tmp_path: Path, runner: ModelRunner) -> None:
    recording = Cassette(tmp_path / "c.jsonl", "record")
    recording.start()
    model = CachingModel(_Counting(), cache=ResponseCache(tmp_path / "cache"), record=recording)
    answers = [runner.call(model, ModelRequest("hi", case_id="a")).text for _ in range(2)]

    assert answers == ["hi #1", "hi #2"]  # asked twice: its answers may change between runs
    assert not (tmp_path / "cache").exists()
    assert recording.finalize() == 1  # but recorded when asked to (one key, the last answer)
    replayed = CachingModel(_Counting(), replay=Cassette(tmp_path / "c.jsonl", "replay"))
    assert runner.call(replayed, ModelRequest("hi", case_id="a")).text == "hi #2"


def test_a_run_that_recorded_nothing_keeps_the_cassette(tmp_path: Path) -> None:
    path = tmp_path / "cassette.jsonl"
    path.write_text('{"key": "k", "response": {"text": "committed"}}\n')
    recording = Cassette(path, "record")
    recording.start()  # e.g. --collect-only, or an endpoint that was never reached

    assert recording.finalize() == 0
    assert path.read_text() == '{"key": "k", "response": {"text": "committed"}}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cassette.jsonl"]


def test_a_cache_that_cannot_be_written_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    cache = ResponseCache(tmp_path / "file" / "cache")
    cache.put("ab" * 32, Response(text="x"))

    assert (cache.stores, cache.write_errors) == (0, 1)
    assert cache.get("ab" * 32) is None
