"""The OpenAI-compatible client against the loopback server: both endpoints, every fault, retries,
and what its one httpx client does with the HTTP a server answers with (the retry policy: ``test_retry``)."""

from __future__ import annotations

import ssl
import time

import httpx
import pytest

from pytest_promptsuite.config.suite import ModelConfig
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import EndpointError
from pytest_promptsuite.models import openai
from pytest_promptsuite.models.builtin_models import make_model
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.model_api import Response
from pytest_promptsuite.models.openai import DEFAULT_BASE_URL
from pytest_promptsuite.models.openai import OpenAIModel
from pytest_promptsuite.models.openai import openai_model
from pytest_promptsuite.models.openai import public_url
from pytest_promptsuite.models.retry import RetryPolicy
from pytest_promptsuite.models.runner import ModelRunner
from pytest_promptsuite.safety.limits import Limit
from tests.loopback import LoopbackServer


FAST = RetryPolicy(max_retries=3, base_s=0.01, cap_s=0.05)


def _model(server: LoopbackServer, **kwargs: object) -> OpenAIModel:
    options: dict[str, object] = {"base_url": server.base_url, "retry": FAST, "seed": 0}
    options.update(kwargs)
    return OpenAIModel("loop-model", **options)  # type: ignore[arg-type]


def _fails(runner: ModelRunner, model: OpenAIModel, prompt: str) -> EndpointError:
    with pytest.raises(EndpointError) as info:
        runner.call(model, ModelRequest(prompt, case_id="c-1"))
    return info.value


# -- happy paths --------------------------------------------------------------------------------


def test_chat_sends_a_string_as_one_user_message(loopback: LoopbackServer, runner: ModelRunner) -> None:
    model = _model(loopback, api_key="sk-test-123")
    params = {"temperature": 0, "max_tokens": 16, "stop": ["\n"], "seed": 7, "extra_body": {"top_k": 5}}
    response = runner.call(model, ModelRequest("hello there", params=params))

    assert response.text == "hello there"
    assert response.finish_reason == "stop"
    assert response.usage is not None and response.usage.total_tokens == 4
    assert response.latency_ms is not None and response.latency_ms > 0
    assert response.cached is False
    [sent] = loopback.stats.log
    assert sent["path"] == "/v1/chat/completions"
    assert sent["body"] == {
        "model": "loop-model",
        "messages": [{"role": "user", "content": "hello there"}],
        "temperature": 0,
        "max_tokens": 16,
        "stop": ["\n"],
        "seed": 7,
        "top_k": 5,
    }
    assert sent["authorization"] == "Bearer sk-test-123"


def test_chat_sends_messages_as_they_are(loopback: LoopbackServer, runner: ModelRunner) -> None:
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    response = runner.call(_model(loopback), ModelRequest(messages))

    assert response.text == "hi"
    assert loopback.stats.log[0]["body"]["messages"] == messages
    assert loopback.stats.log[0]["authorization"] is None  # no key: no header at all


def test_completions_endpoint_for_string_prompts(loopback: LoopbackServer, runner: ModelRunner) -> None:
    model = _model(loopback, endpoint="completions")
    response = runner.call(model, ModelRequest("<|im_start|>user\nhi<|im_end|>\n"))
    chat = runner.call(model, ModelRequest([{"role": "user", "content": "as messages"}]))

    assert response == Response(
        text="<|im_start|>user\nhi<|im_end|>\n",
        finish_reason="length",
        usage=response.usage,
        latency_ms=response.latency_ms,
        model="loop-model",  # the name the answer says served it
    )
    assert chat.text == "as messages"
    assert [e["path"] for e in loopback.stats.log] == ["/v1/completions", "/v1/chat/completions"]
    assert loopback.stats.log[0]["body"] == {"model": "loop-model", "prompt": "<|im_start|>user\nhi<|im_end|>\n"}


def test_the_embeddings_endpoint_sends_the_texts_in_one_call(loopback: LoopbackServer, runner: ModelRunner) -> None:
    """Each message's content is one input text; the vectors come back in input order (the server lists them
    reversed, with their index), as the response's text, a JSON list, with the usage."""
    loopback.knobs.vectors = {"one": [1.0, 2.0], "two": [3.5, -4.0]}
    model = _model(loopback, api_key="sk-test-123").embeddings({"dimensions": 2})
    texts = [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}]
    response = runner.call(model, ModelRequest(texts, params={"dimensions": 2}))

    assert response.text == "[[1.0,2.0],[3.5,-4.0]]"
    assert response.usage is not None and (response.usage.prompt_tokens, response.usage.total_tokens) == (2, 2)
    assert response.latency_ms is not None and response.latency_ms > 0
    [sent] = loopback.stats.log
    assert sent["path"] == "/v1/embeddings"
    assert sent["body"] == {"model": "loop-model", "input": ["one", "two"], "dimensions": 2}
    assert sent["authorization"] == "Bearer sk-test-123"
    assert model.cache_identity()["endpoint"] == "embeddings"
    with pytest.raises(ConfigError, match="params may not set 'input'"):
        _model(loopback).embeddings({"input": ["x"]})


@pytest.mark.parametrize(
    ("step", "what"), [("nochoices", "no data[] of embeddings"), ("ok", "data[0] has no embedding list of numbers")]
)
def test_a_malformed_embeddings_answer_is_a_clear_error(
    loopback: LoopbackServer, runner: ModelRunner, step: str, what: str
) -> None:
    loopback.knobs.vectors = {f"x [[{step}]]": ["not", "numbers"]}  # type: ignore[list-item]
    model = _model(loopback, retry=RetryPolicy(max_retries=0)).embeddings()
    error = _fails(runner, model, f"x [[{step}]]")
    assert f"malformed response from {loopback.base_url}/embeddings: {what}" in str(error)


def test_params_may_not_replace_what_the_client_sets(loopback: LoopbackServer, runner: ModelRunner) -> None:
    with pytest.raises(ConfigError, match="params may not set 'messages'"):
        runner.call(_model(loopback), ModelRequest("x", params={"messages": []}))
    assert loopback.stats.requests == 0


# -- retries ------------------------------------------------------------------------------------


@pytest.mark.parametrize("script", ["500,429", "503,408", "drop", "drop,502"])
def test_transient_faults_are_retried(loopback: LoopbackServer, runner: ModelRunner, script: str) -> None:
    model = _model(loopback)
    response = runner.call(model, ModelRequest(f"retry me [[{script}]]"))

    assert response.text == f"retry me [[{script}]]"
    steps = len(script.split(","))
    assert loopback.stats.requests == steps + 1
    assert (model.attempts, model.retries) == (steps + 1, steps)


def test_a_timeout_is_retried(loopback: LoopbackServer, runner: ModelRunner) -> None:
    loopback.knobs.hang_s = 30  # the hang far past the timeout, the timeout far past a plain answer on a busy machine
    model = _model(loopback, timeout_s=2)

    assert runner.call(model, ModelRequest("slow once [[hang]]")).text == "slow once [[hang]]"
    assert loopback.stats.requests == 2


def test_retries_are_bounded(loopback: LoopbackServer, runner: ModelRunner) -> None:
    error = _fails(runner, _model(loopback), "always [[500,500,500,500,500,500]]")

    assert loopback.stats.requests == 4  # the first attempt and max_retries = 3
    assert error.status == 500
    assert not error.fatal
    assert str(error) == (
        f"HTTP 500 from {loopback.base_url}/chat/completions: The server had an error (loopback_error) "
        "(gave up after 4 attempts)"
    )


def test_max_retries_zero_means_one_attempt(loopback: LoopbackServer, runner: ModelRunner) -> None:
    _fails(runner, _model(loopback, retry=RetryPolicy(max_retries=0)), "x [[429]]")
    assert loopback.stats.requests == 1


def test_timeouts_exhausted(loopback: LoopbackServer, runner: ModelRunner) -> None:
    loopback.knobs.hang_s = 2
    model = _model(loopback, timeout_s=0.1, retry=RetryPolicy(max_retries=1, base_s=0.01))
    error = _fails(runner, model, "[[hang,hang]]")

    assert "within 0.1 s" in str(error)
    assert "gave up after 2 attempts" in str(error)
    assert loopback.stats.requests == 2


def test_dropped_connections_exhausted(loopback: LoopbackServer, runner: ModelRunner) -> None:
    error = _fails(runner, _model(loopback), "[[drop,drop,drop,drop]]")

    assert str(error).startswith(f"connection to {loopback.base_url}/chat/completions failed: ")
    assert loopback.stats.requests == 4
    assert not error.fatal


def test_retry_after_ms_is_honoured(loopback: LoopbackServer, runner: ModelRunner) -> None:
    loopback.knobs.retry_after_ms = 300
    runner.call(_model(loopback), ModelRequest("wait [[429]]"))

    first, second = loopback.stats.log
    assert second["time"] - first["time"] >= 0.3


def test_retry_after_seconds_is_honoured(loopback: LoopbackServer, runner: ModelRunner) -> None:
    loopback.knobs.retry_after = "1"
    runner.call(_model(loopback), ModelRequest("wait [[503]]"))

    first, second = loopback.stats.log
    assert second["time"] - first["time"] >= 1.0


def test_a_retry_after_beyond_the_cap_is_not_waited_for(loopback: LoopbackServer, runner: ModelRunner) -> None:
    loopback.knobs.retry_after = "3600"
    error = _fails(runner, _model(loopback), "[[429]]")

    assert "asked to retry after 3600 s, more than 60 s: not retried" in str(error)
    assert loopback.stats.requests == 1


# -- errors that are never retried ----------------------------------------------------------------


@pytest.mark.parametrize(("status", "fatal"), [(400, False), (401, True), (403, False), (404, True), (422, False)])
def test_client_errors_are_not_retried(loopback: LoopbackServer, runner: ModelRunner, status: int, fatal: bool) -> None:
    error = _fails(runner, _model(loopback), f"[[{status}]]")

    assert loopback.stats.requests == 1
    assert error.status == status
    assert error.fatal is fatal
    assert str(error).startswith(f"HTTP {status} from {loopback.base_url}/chat/completions: ")


def test_an_exhausted_quota_is_not_retried_and_stops_the_run(loopback: LoopbackServer, runner: ModelRunner) -> None:
    error = _fails(runner, _model(loopback), "[[quota]]")

    assert loopback.stats.requests == 1
    assert error.fatal
    assert "You exceeded your current quota. (insufficient_quota)" in str(error)


def test_a_wrong_key_is_fatal_and_never_shown(loopback: LoopbackServer, runner: ModelRunner) -> None:
    loopback.knobs.api_key = "sk-right"
    model = _model(loopback, api_key="sk-wrong-SECRET-42", api_key_env="MY_KEY")
    error = _fails(runner, model, "hi")

    assert error.fatal and error.status == 401
    assert str(error) == (
        f"HTTP 401 from {loopback.base_url}/chat/completions: Incorrect API key provided: *** "
        "(invalid_api_key) (check the key in $MY_KEY)"
    )
    assert "SECRET" not in repr(model)


def test_connection_refused_is_fatal(runner: ModelRunner) -> None:
    model = OpenAIModel("m", base_url="http://127.0.0.1:9/v1", retry=FAST)
    error = _fails(runner, model, "hi")

    assert error.fatal
    assert error.status is None
    assert str(error).startswith("cannot connect to http://127.0.0.1:9/v1/chat/completions: ")
    assert str(error).endswith("(gave up after 4 attempts)")


@pytest.mark.parametrize(
    ("step", "what"),
    [
        ("malformed", "not JSON; the body began '<html>502 Bad Gateway</html>'"),
        ("nochoices", "no choices[0]; the body began '{"),
    ],
)
def test_malformed_bodies_are_clear_errors(loopback: LoopbackServer, runner: ModelRunner, step: str, what: str) -> None:
    error = _fails(runner, _model(loopback), f"[[{step}]]")

    assert str(error).startswith(f"malformed response from {loopback.base_url}/chat/completions: ")
    assert what in str(error)
    assert not error.fatal


def test_an_empty_completion_is_an_answer(loopback: LoopbackServer, runner: ModelRunner) -> None:
    assert runner.call(_model(loopback), ModelRequest("[[empty]]")).text == ""


# -- HTTP: one httpx client per model -------------------------------------------------------------


def _peers(server: LoopbackServer) -> list[int]:
    """The client port of each request the server saw: one port, one connection."""
    return [entry["peer"] for entry in server.stats.log]


def test_the_server_sees_httpx_headers_the_key_and_the_query(loopback: LoopbackServer, runner: ModelRunner) -> None:
    model = _model(loopback, base_url=f"{loopback.base_url}?api-version=1", api_key="sk-headers-123")
    runner.call(model, ModelRequest("headers"))

    [sent] = loopback.stats.log
    assert (sent["path"], sent["query"]) == ("/v1/chat/completions", "api-version=1")
    headers = dict(sent["headers"])
    assert headers.pop("accept-encoding") == "gzip, deflate"  # never br or zstd, even where installed
    body = b'{"model":"loop-model","messages":[{"role":"user","content":"headers"}]}'
    assert headers == {
        "host": f"127.0.0.1:{loopback.port}",
        "accept": "*/*",
        "connection": "keep-alive",
        "user-agent": f"python-httpx/{httpx.__version__}",
        "content-type": "application/json",
        "content-length": str(len(body)),
        "authorization": "Bearer sk-headers-123",
    }


def test_calls_one_after_another_share_one_kept_alive_connection(loopback: LoopbackServer, runner: ModelRunner) -> None:
    model = _model(loopback)
    answers = [runner.call(model, ModelRequest(f"kept {i}")).text for i in range(3)]

    assert answers == ["kept 0", "kept 1", "kept 2"]
    assert len(set(_peers(loopback))) == 1


def test_the_pool_keeps_as_many_connections_as_the_bound_allows_calls(
    loopback: LoopbackServer, runner: ModelRunner
) -> None:
    """24 calls in flight, then 24 more: the second wave finds all 24 connections still open
    (httpx's default pool keeps 20 idle)."""
    loopback.knobs.latency_s = 0.1
    model = runner.attach(_model(loopback), concurrency=24)
    for wave in range(2):
        with runner.batch_submits():
            futures = [runner.submit(model, ModelRequest(f"wave {wave} call {i}")) for i in range(24)]
        assert [future.result().text for future in futures] == [f"wave {wave} call {i}" for i in range(24)]

    assert loopback.stats.max_in_flight == 24
    assert len(set(_peers(loopback))) == 24


def test_a_model_makes_one_client_and_the_runner_closes_it(loopback: LoopbackServer) -> None:
    runner = ModelRunner()
    model = _model(loopback)
    attached = runner.attach(model, concurrency=3)
    client = model.client()
    runner.call(attached, ModelRequest("one"))
    runner.call(attached, ModelRequest("two"))

    assert model.connections == 3
    assert model.client() is client and not client.is_closed
    runner.close()
    assert client.is_closed


@pytest.mark.parametrize("step", ["chunked", "gzipped"])
def test_a_chunked_or_compressed_answer_is_read_whole_on_a_kept_connection(
    loopback: LoopbackServer, runner: ModelRunner, step: str
) -> None:
    model = _model(loopback)
    first = runner.call(model, ModelRequest(f"shaped [[{step}]]"))
    second = runner.call(model, ModelRequest("next"))

    assert (first.text, first.finish_reason, second.text) == (f"shaped [[{step}]]", "stop", "next")
    assert len(set(_peers(loopback))) == 1 and model.retries == 0


@pytest.mark.parametrize("step", ["close", "hangup"])
def test_a_connection_the_server_closes_is_never_reused(
    loopback: LoopbackServer, runner: ModelRunner, step: str
) -> None:
    """``Connection: close``, or a server closing a kept-alive connection while it is idle."""
    model = _model(loopback)
    assert runner.call(model, ModelRequest(f"once [[{step}]]")).text == f"once [[{step}]]"
    time.sleep(0.2)  # the server's close reaches the client

    assert runner.call(model, ModelRequest("next")).text == "next"
    first, second = _peers(loopback)
    assert first != second and model.retries == 0


def test_a_reset_connection_is_retried_on_a_new_one(loopback: LoopbackServer, runner: ModelRunner) -> None:
    model = _model(loopback)
    assert runner.call(model, ModelRequest("reset once [[reset]]")).text == "reset once [[reset]]"
    assert model.retries == 1
    error = _fails(runner, model, "[[reset,reset,reset,reset]]")

    assert str(error).startswith(f"connection to {loopback.base_url}/chat/completions failed: ")
    assert str(error).endswith("(gave up after 4 attempts)")
    assert not error.fatal


def test_a_switching_protocols_answer_is_a_failed_connection_never_reused(
    loopback: LoopbackServer, runner: ModelRunner
) -> None:
    model = _model(loopback)
    assert runner.call(model, ModelRequest("upgrade [[switch]]")).text == "upgrade [[switch]]"
    first, second = _peers(loopback)
    assert first != second and model.retries == 1

    error = _fails(runner, _model(loopback, retry=RetryPolicy(max_retries=0)), "[[switch]]")
    assert str(error).startswith(f"connection to {loopback.base_url}/chat/completions failed: ")
    assert not error.fatal


@pytest.mark.parametrize("step", ["lfcrlf", "obsfold"])
def test_a_head_ending_in_lf_crlf_or_with_a_folded_header_is_read_at_once(
    loopback: LoopbackServer, runner: ModelRunner, step: str
) -> None:
    """Heads written raw on the socket: one whose last line ends in a bare LF, one with an obs-fold."""
    model = _model(loopback, retry=RetryPolicy(max_retries=0), timeout_s=2.0)
    answer = runner.call(model, ModelRequest(f"raw head [[{step}]]"))

    assert (answer.text, answer.finish_reason) == (f"raw head [[{step}]]", "stop")
    assert model.attempts == 1


def test_no_cookie_is_kept_from_one_call_to_the_next(loopback: LoopbackServer, runner: ModelRunner) -> None:
    model = _model(loopback)
    runner.call(model, ModelRequest("sets a cookie [[cookie]]"))
    runner.call(model, ModelRequest("next"))

    assert [entry["headers"].get("cookie") for entry in loopback.stats.log] == [None, None]
    assert len(model.client().cookies) == 0


def test_a_redirect_is_not_followed(loopback: LoopbackServer, runner: ModelRunner) -> None:
    error = _fails(runner, _model(loopback), "[[redirect]]")

    assert str(error) == (f"malformed response from {loopback.base_url}/chat/completions: not JSON; the body began ''")
    assert loopback.stats.requests == 1


def test_proxy_variables_are_not_used(
    loopback: LoopbackServer, runner: ModelRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)

    assert runner.call(_model(loopback), ModelRequest("direct")).text == "direct"
    assert loopback.stats.requests == 1


def test_an_answer_over_the_size_limit_is_an_error_and_its_connection_closed(
    loopback: LoopbackServer, runner: ModelRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answer still arriving when it passes the limit (4 MB, more than the client buffers before it is read):
    its connection is closed, never read to the end. (One that arrived whole before it was read may go back to
    the pool: aiohttp keeps a connection whose answer it has received whole, and that is safe.)"""
    model = _model(loopback)
    monkeypatch.setattr(openai, "RESPONSE_BYTES", Limit("response size", 100, "bytes"))
    error = _fails(runner, model, "a long answer " + "x" * 4_000_000)
    monkeypatch.undo()

    assert str(error) == (
        f"the response from {loopback.base_url}/chat/completions is larger than the response size limit of 100 bytes"
    )
    assert not error.fatal and model.retries == 0
    assert runner.call(model, ModelRequest("next")).text == "next"
    first, second = _peers(loopback)
    assert first != second  # the answer not read whole: its connection was closed


def test_a_prompt_past_a_megabyte_is_sent_whole_with_its_length(loopback: LoopbackServer, runner: ModelRunner) -> None:
    """A body past 1 MiB goes a piece at a time (aiohttp warns of a large bytes body): same bytes, same length."""
    prompt = "long " + "y" * 3_000_000
    answer = runner.call(_model(loopback), ModelRequest(prompt))

    (entry,) = loopback.stats.log
    assert answer.text == prompt
    assert entry["headers"]["content-length"] == str(len(entry["raw"]))
    assert "transfer-encoding" not in entry["headers"]


def test_a_key_with_a_line_break_is_refused_before_sending_and_never_shown(
    loopback: LoopbackServer, runner: ModelRunner
) -> None:
    model = _model(loopback, api_key="sk-line-break-SECRET\r\nInjected: 1", retry=RetryPolicy(max_retries=0))
    error = _fails(runner, model, "hi")

    assert str(error).startswith(f"connection to {loopback.base_url}/chat/completions failed: ")
    assert "SECRET" not in str(error) and "Injected" not in str(error)
    assert loopback.stats.requests == 0


def test_only_an_https_endpoint_loads_the_ca_bundle() -> None:
    plain = OpenAIModel("m", base_url="http://127.0.0.1:1/v1")._ssl_context()
    secure = OpenAIModel("m", base_url="HTTPS://api.example.com/v1")._ssl_context()

    assert plain.cert_store_stats()["x509_ca"] == 0  # trusts nothing: it is never used for TLS
    assert plain.verify_mode == ssl.CERT_REQUIRED and plain.check_hostname
    assert secure.cert_store_stats()["x509_ca"] > 0


# -- configuration ------------------------------------------------------------------------------


def test_base_url_and_key_come_from_config_then_environment() -> None:
    env = {"OPENAI_BASE_URL": "http://env:1/v1", "OPENAI_API_KEY": "sk-env", "OTHER": "sk-other"}
    common = {"api_key_env": "OPENAI_API_KEY", "endpoint": "chat", "timeout_s": 5.0, "max_retries": 2}

    from_config = openai_model("m", base_url="http://cfg:2/v1/", environ=env, **common)  # type: ignore[arg-type]
    from_env = openai_model("m", base_url=None, environ=env, **common)  # type: ignore[arg-type]
    default = openai_model("m", base_url=None, environ={}, **common)  # type: ignore[arg-type]
    other_key = openai_model("m", base_url=None, environ=env, **{**common, "api_key_env": "OTHER"})  # type: ignore[arg-type]

    assert (from_config.base_url, from_env.base_url) == ("http://cfg:2/v1", "http://env:1/v1")
    assert default.base_url == DEFAULT_BASE_URL
    assert from_env._headers() == {"Authorization": "Bearer sk-env"}
    assert other_key._headers() == {"Authorization": "Bearer sk-other"}
    assert default._headers() == {}
    assert from_config.retry.max_retries == 2 and from_config.timeout_s == 5.0


def test_make_model_builds_openai_models() -> None:
    settings = ModelConfig(
        spec="openai:qwen", base_url="http://h:1/v1", endpoint="completions", timeout_s=3, max_retries=1
    )
    model = make_model("openai:qwen", settings=settings)

    assert isinstance(model, OpenAIModel)
    assert (model.spec, model.name, model.endpoint) == ("openai:qwen", "qwen", "completions")
    assert model.cache_identity() == {"model": "openai:qwen", "base_url": "http://h:1/v1", "endpoint": "completions"}


@pytest.mark.parametrize(
    ("spec", "base_url", "message"),
    [
        ("openai:", "http://h/v1", "openai: needs a model name"),
        ("openai:m", "localhost:8000/v1", "base URL 'localhost:8000/v1' must start with http://"),
    ],
)
def test_bad_openai_settings(spec: str, base_url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make_model(spec, settings=ModelConfig(spec=spec, base_url=base_url))


def test_credentials_in_a_url_are_never_shown() -> None:
    assert public_url("http://user:pw@host:8/v1?x=1") == "http://host:8/v1?x=1"
    assert public_url("http://host/v1") == "http://host/v1"
    model = OpenAIModel("m", base_url="http://user:pw@host/v1")
    assert "pw" not in repr(model) and "pw" not in str(model.cache_identity())


# -- the retry policy -------------------------------------------------------------------------


def test_calls_in_flight_past_eight_go_through_the_model_s_one_client(
    loopback: LoopbackServer, runner: ModelRunner
) -> None:
    """20 calls in flight go through the model's one client (aiohttp's pool costs a call the same at any size),
    each call on a connection of its own, and a second wave finds them all kept open."""
    loopback.knobs.latency_s = 0.1
    model = _model(loopback)
    attached = runner.attach(model, concurrency=20)
    for wave in range(2):
        with runner.batch_submits():
            futures = [runner.submit(attached, ModelRequest(f"wave {wave} call {i}")) for i in range(20)]
        assert [future.result().text for future in futures] == [f"wave {wave} call {i}" for i in range(20)]

    assert len(model.clients) == 1
    assert loopback.stats.max_in_flight == 20
    assert len(set(_peers(loopback))) == 20
