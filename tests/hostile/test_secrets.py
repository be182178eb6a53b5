"""No secret out (findings 1 and 5): whatever a model call raises or an endpoint echoes, the key
reaches no traceback, junit.xml, report, cache, cassette, log or terminal line; every such case
ends with its row; credentials in a base URL are refused or handled explicitly."""

from __future__ import annotations

import pytest

from tests.hostile.support import SECRET
from tests.hostile.support import assert_clean
from tests.hostile.support import assert_reports_agree
from tests.hostile.support import assert_secret_nowhere
from tests.hostile.support import case
from tests.hostile.support import endpoint
from tests.hostile.support import output
from tests.loopback import LoopbackServer
from tests.suite import Suite


@pytest.fixture(autouse=True)
def _key(suite: Suite, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # after the suite fixture has cleared the OPENAI_* variables


EVERYWHERE = (
    "--prompt-report",
    "report",
    "--junitxml",
    "junit.xml",
    "--prompt-record",
    "cassette.jsonl",
    "-o",
    "log_file_level=DEBUG",
    "--log-file",
    "run.log",
)

RAISING_MODEL = """
import os
from pytest_promptsuite.models import Response

class Leaky:
    spec = "leaky"
    async def generate(self, request):
        headers = {"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}
        if "value" in request.prompt:
            raise ValueError(f"Out of range float values are not JSON compliant; headers={headers}")
        if "type" in request.prompt:
            raise TypeError(f"Object of type datetime is not JSON serializable: {headers}")
        if "exit" in request.prompt:
            raise SystemExit(f"bye {os.environ['OPENAI_API_KEY']}")
        return Response(text=request.prompt)

def pytest_promptsuite_make_model(config, spec, settings, root):
    if spec == "leaky":
        return Leaky()
"""


@pytest.mark.parametrize("plugin_args", [[], ["-n", "2"]], ids=["serial", "xdist_two"])
def test_whatever_a_model_raises_is_an_error_row_without_the_key(suite: Suite, plugin_args: list[str]) -> None:
    suite.pytester.makeconftest(RAISING_MODEL)
    suite.cases([case("a", "value"), case("b", "type"), case("c", "fine")])
    result = suite.run("--prompt-model", "leaky", *EVERYWHERE, *plugin_args)

    assert_clean(result)
    result.assert_outcomes(passed=1, failed=2)
    by_id = suite.by_id()
    assert sorted(by_id) == ["a", "b", "c"]
    assert by_id["a"]["outcome"] == "error"
    assert by_id["a"]["error"].startswith("the model call raised ValueError: Out of range float values")
    assert "Bearer ***" in by_id["b"]["error"]
    assert_reports_agree(suite, result)
    assert assert_secret_nowhere(suite.path, result) >= 5


def test_a_body_that_its_content_encoding_does_not_fit_is_retried_then_an_error(
    suite: Suite, loopback: LoopbackServer
) -> None:
    loopback.knobs.api_key = SECRET
    suite.config(endpoint(loopback.base_url, max_retries=2))
    suite.cases([case("once", "x [[gzip]]"), case("always", "y [[gzip,gzip,gzip]]")])
    result = suite.run(*EVERYWHERE)

    assert_clean(result)
    by_id = suite.by_id()
    assert by_id["once"]["outcome"] == "passed"
    assert by_id["always"]["outcome"] == "error"
    assert by_id["always"]["error"].startswith("undecodable response from ")
    assert by_id["always"]["error"].endswith("(gave up after 3 attempts)")
    assert_reports_agree(suite, result)
    assert_secret_nowhere(suite.path, result)


@pytest.mark.parametrize("plugin_args", [[], ["-n", "2"]], ids=["serial", "xdist_two"])
def test_an_endpoint_that_echoes_the_key_gets_it_stored_nowhere(
    suite: Suite, loopback: LoopbackServer, plugin_args: list[str]
) -> None:
    loopback.knobs.api_key = SECRET
    suite.config(endpoint(loopback.base_url))
    suite.cases(
        [case(f"e{i}", f"echo {i} [[echo]]", must_not_include=["sk-"]) for i in range(4)] + [case("bad", "n [[400]]")]
    )
    result = suite.run(*EVERYWHERE, *plugin_args)

    assert_clean(result)
    assert [e["authorization"] for e in loopback.stats.log] == [f"Bearer {SECRET}"] * 5
    echoed = [row for row in suite.rows() if row["case_id"].startswith("e")]
    assert {row["output"] for row in echoed} == {f"echo {i} [[echo]] key=Bearer ***" for i in range(4)}
    assert all(row["outcome"] == "failed" for row in echoed)  # the checks saw the real key
    assert_secret_nowhere(suite.path, result)


def test_a_key_in_the_base_url_query_is_sent_but_shown_and_stored_nowhere(
    suite: Suite, loopback: LoopbackServer
) -> None:
    query_key = "qk-hostile-query-key-93b1c7aa"
    suite.config(endpoint(f"{loopback.base_url}?api-key={query_key}&api-version=1"))
    suite.cases([case("a", "one"), case("b", "two [[500,500,500,500]]")])
    result = suite.run(*EVERYWHERE, "--log-level", "DEBUG")

    assert_clean(result)
    assert {e["query"] for e in loopback.stats.log} == {f"api-key={query_key}&api-version=1"}
    assert {e["path"] for e in loopback.stats.log} == {"/v1/chat/completions"}
    log = (suite.path / "run.log").read_text(encoding="utf-8")
    assert "HTTP Request: POST" in log and "api-key=***&api-version=1" in log
    error = suite.by_id()["b"]["error"]
    assert "?api-key=***&api-version=1: The server had an error" in error
    assert assert_secret_nowhere(suite.path, result, secret=query_key, written_by_user=("promptsuite.toml",)) >= 5


def test_the_embedding_models_key_is_sent_but_stored_nowhere(suite: Suite, loopback: LoopbackServer) -> None:
    """``[models.embedding]`` on the loopback server: answered (cached, recorded, logged), then refused with a
    401 that repeats the key it was sent; the key reaches no report, cache, cassette, log or terminal line."""
    loopback.knobs.api_key = SECRET
    suite.config({"models.embedding": {"spec": "openai:emb", "base_url": loopback.base_url, "timeout_s": 2}})
    similar = [{"type": "similar:cosine", "value": "hello there"}]
    texts = {"a": "hello there", "b": "hello there friend"}
    suite.cases([case(name, text, **{"assert": similar}) for name, text in texts.items()])
    result = suite.run(*EVERYWHERE, "--log-level", "DEBUG")
    assert_clean(result)
    result.assert_outcomes(passed=2)
    assert {e["authorization"] for e in loopback.stats.log} == {f"Bearer {SECRET}"}
    assert list((suite.path / ".promptsuite_cache").rglob("*.json"))  # the embeddings were cached

    loopback.reset(api_key="another-key")
    result = suite.run(*EVERYWHERE, "--prompt-no-cache", "--log-level", "DEBUG")
    assert_clean(result)
    assert loopback.stats.log[0]["authorization"] == f"Bearer {SECRET}"
    message = suite.by_id()["a"]["checks"][0]["message"]
    assert "openai:emb on case a: HTTP 401 from " in message and "Incorrect API key provided: ***" in message
    assert assert_secret_nowhere(suite.path, result) >= 5


@pytest.mark.parametrize("where", ["config", "option", "environment"])
def test_user_and_password_in_the_base_url_are_refused_without_showing_them(
    suite: Suite, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    url = "http://someone:hunter2-password@127.0.0.1:9/v1"
    args = ["--prompt-model", "openai:m"]
    if where == "config":
        suite.config(endpoint(url))
    elif where == "option":
        args += ["--prompt-base-url", url]
    else:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
    suite.cases([case("a")])
    result = suite.run(*args)

    assert_clean(result)
    assert result.ret in (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERRUPTED)
    assert "'http://127.0.0.1:9/v1'" in output(result)
    assert "carries 'user:password@', which httpx would send as Basic auth in place of the API key" in output(result)
    assert "hunter2-password" not in output(result)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            'base_url = "http://127.0.0.1:99999/v1"',
            "promptsuite.toml:3: model.base_url = 'http://127.0.0.1:99999/v1' has a port that is not a number",
        ),
        ('base_url = "ftp://127.0.0.1/v1"', "promptsuite.toml:3: model.base_url = 'ftp://127.0.0.1/v1' must start"),
        ("params = { temperature = nan }", "promptsuite.toml:3: model.params.temperature = nan: not a finite number"),
        (
            "params = { seed = 1979-05-27 }",
            "promptsuite.toml:3: model.params.seed = 1979-05-27: a date or time, which no setting takes",
        ),
        ("timeout_s = inf", "promptsuite.toml:3: model.timeout_s = inf: not a finite number"),
        ('params = { model = "other" }', "params may not set 'model': the client sets it from the spec and the prompt"),
    ],
    ids=["port", "scheme", "nan-param", "date-param", "inf-timeout", "reserved"],
)
def test_bad_endpoint_settings_stop_before_any_call(suite: Suite, line: str, message: str) -> None:
    suite.config(f'[model]\nspec = "openai:m"\n{line}\n')
    suite.cases([case("a")])
    result = suite.run()

    assert_clean(result)
    assert result.ret in (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERRUPTED)
    assert message in output(result)
    assert not (suite.path / "report").exists()
