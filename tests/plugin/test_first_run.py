"""A first real run says what it lacks: no ``max_tokens`` is said once at the start, a timeout names its setting."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from pytest_promptsuite.config.tables import ModelConfig
from tests.loopback import LoopbackServer
from tests.suite import Suite


HINT = "promptsuite: openai:loop-model"


def _hints(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if line.startswith(HINT)]


def test_a_chat_model_without_max_tokens_is_said_once_at_the_start(suite: Suite, loopback: LoopbackServer) -> None:
    suite.prompts(["one", "two", "three"])
    suite.config({"model": loopback.model(params={"temperature": 0})})
    result = suite.run()

    result.assert_outcomes(passed=3)
    assert _hints(result) == [
        "promptsuite: openai:loop-model (chat) runs with no max_tokens: a local server may generate until its "
        "context is full, minutes a call, then time out; bound the answers in [model]: params = { max_tokens = 512 }"
    ]
    first_case = next(i for i, line in enumerate(result.outlines) if "cases.jsonl" in line and "%]" in line)
    assert result.outlines.index(_hints(result)[0]) < first_case  # before the first case's result


def test_a_completions_model_without_max_tokens_or_stop_is_told_both(suite: Suite, loopback: LoopbackServer) -> None:
    suite.prompts(["one"])
    suite.config({"model": loopback.model(endpoint="completions")})
    result = suite.run()

    result.assert_outcomes(passed=1)
    (hint,) = _hints(result)
    assert "(completions) runs with no max_tokens and no stop" in hint
    assert hint.endswith('params = { max_tokens = 512, stop = ["\\n\\n"] }')


@pytest.mark.parametrize("params", [{"max_tokens": 64}, {"max_completion_tokens": 64}])
def test_a_bounded_model_and_the_fake_model_get_no_hint(
    suite: Suite, loopback: LoopbackServer, params: dict[str, int]
) -> None:
    suite.prompts(["one"])
    suite.config({"model": loopback.model(params=params)})
    assert _hints(suite.run()) == []
    suite.config({"model": {"spec": "fake"}})
    assert "max_tokens" not in suite.run().stdout.str()


@pytest.mark.slow
def test_under_xdist_the_hint_is_said_once_with_the_warnings(suite: Suite, loopback: LoopbackServer) -> None:
    suite.prompts(["one", "two", "three", "four"])
    suite.config({"model": loopback.model()})
    result = suite.run("-n", "2")

    result.assert_outcomes(passed=4)
    assert result.stdout.str().count("runs with no max_tokens") == 1


def test_a_timeout_names_the_timeout_and_its_setting(suite: Suite, loopback: LoopbackServer) -> None:
    loopback.knobs.hang_s = 5
    suite.prompts(["slow [[hang]]"])
    suite.config({"model": loopback.model(timeout_s=0.3, max_retries=0, params={"max_tokens": 8})})
    result = suite.run("--prompt-report", "report")

    result.assert_outcomes(failed=1)
    (row,) = suite.rows()
    assert row["error"] == (
        f"no answer from {loopback.base_url}/chat/completions within 0.3 s (the timeout of one attempt: raise "
        "[model] timeout_s for a slow model) (gave up after 1 attempt)"
    )


def test_a_meta_template_gives_the_stop_so_only_max_tokens_is_asked_for() -> None:
    chatml = ModelConfig(spec="openai:m", endpoint="completions", meta_template="chatml").length_hint()
    assert chatml is not None and "runs with no max_tokens:" in chatml and "stop" not in chatml
    assert ModelConfig(spec="openai:m", endpoint="completions", params={"max_tokens": 9}).length_hint() is None
    assert ModelConfig(spec="fake").length_hint() is None


#: The pages that show the example suite's slice table as the quick start prints it.
QUICK_START_PAGES = ("README.md", "docs/getting-started/first-suite.md")


def _slice_table(lines: list[str]) -> list[str]:
    """Return the slice table: from its title line to the gate's line, the p95 latency's figure left out (the
    fake model's wall time: 0 ms, or 1 on a loaded machine)."""
    start = next(i for i, line in enumerate(lines) if "promptsuite: pass rate by slice" in line)
    end = next(i for i, line in enumerate(lines) if line.startswith("promptsuite gate:") and i > start)
    return [re.sub(r"p95 latency \d+ ms", "p95 latency N ms", line) for line in lines[start : end + 1]]


@pytest.mark.parametrize("page", QUICK_START_PAGES)
def test_the_quick_start_pages_show_the_slice_table_a_run_prints(suite: Suite, page: str) -> None:
    root = Path(__file__).resolve().parents[2]
    shutil.copytree(root / "example_suites" / "customer_support", suite.path / "customer_support")
    result = suite.run(paths=("customer_support",))
    assert result.ret == pytest.ExitCode.OK
    shown = _slice_table((root / page).read_text(encoding="utf-8").splitlines())
    assert shown == _slice_table(result.outlines)
