"""A user regex is bounded off the main thread too, where ``SIGALRM`` cannot reach (the regex check, refusal
patterns, a schema pattern, a fake-model rule on the runner's loop thread), each in a child Python: ``re`` keeps
the GIL while it backtracks, so an unbounded search would stall this process; the child dies after :data:`WAIT_S`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.evaluator import Evaluator
from pytest_promptsuite.errors import ModelError
from pytest_promptsuite.models.fake import FakeModel
from pytest_promptsuite.models.fake import FakeRule
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.runner import ModelRunner
from pytest_promptsuite.safety.deadline import BudgetExceeded
from pytest_promptsuite.safety.limits import Limit
from pytest_promptsuite.safety.user_regex import RegexBudget
from pytest_promptsuite.safety.user_regex import user_regex
from tests.limits import shorten_regex_limit


EVIL = r"^(a|aa)+$"  # backtracks for hours on VICTIM in re and in regex alike
VICTIM = "a" * 64 + "!"
#: How long a child may take (its budgets are 2 s): far past the budget, far short of the hours unbounded.
WAIT_S = 60
ROOT = Path(__file__).resolve().parents[3]


def _check_message(entry: dict[str, object], output: str) -> str:
    case = PromptCase(case_id="c", input="i", slice="s", assert_=[entry])
    [result] = Evaluator().evaluate(case, output)
    return f"passed={result.passed} skipped={result.skipped} {result.message}"


def _regex_check() -> str:
    return _check_message({"type": "regex", "value": EVIL}, VICTIM)


def _refusal() -> str:
    return _check_message({"type": "is-refusal", "value": [EVIL], "defaults": False}, VICTIM)


def _schema() -> str:
    schema = {"type": "object", "patternProperties": {"^k": {"type": "string", "pattern": EVIL}}}
    return _check_message({"type": "is-json", "value": schema}, json.dumps({"key": VICTIM}))


def _fake_rule_on_the_loop() -> str:
    with tempfile.TemporaryDirectory() as folder:
        rules = Path(folder) / "rules.json"
        rules.write_text(json.dumps({"rules": [{"match": EVIL, "reply": "x"}]}), encoding="utf-8")
        model = FakeModel.from_rules_file(rules)
    runner = ModelRunner()
    try:
        future = runner.submit(model, ModelRequest(VICTIM, case_id="c1"))  # model.generate, on the loop thread
        try:
            return f"answered {future.result().text!r}"
        except ModelError as exc:
            return f"ModelError: {exc}"
    finally:
        runner.close()


SCENARIOS: dict[str, Callable[[], str]] = {
    "regex-check": _regex_check,
    "refusal": _refusal,
    "schema": _schema,
    "fake-rule": _fake_rule_on_the_loop,
}


def child(name: str, short: bool = True) -> None:
    """Run the scenario ``name`` off the main thread (the fake rule: on the runner's loop thread) and print
    what it ended with; ``short``: under the tests' short regex limit."""
    if short:
        shorten_regex_limit()
    if name == "fake-rule":
        print(SCENARIOS[name]())
        return
    ended: list[str] = []
    thread = threading.Thread(target=lambda: ended.append(SCENARIOS[name]()))
    thread.start()
    thread.join()
    print(ended[0])


def _off_the_main_thread(name: str, *, short: bool = True) -> str:
    code = f"from tests.unit.safety.test_user_regex import child; child({name!r}, {short!r})"
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=WAIT_S, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{name}: the regex was still running after {WAIT_S} s off the main thread (unbounded)")
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_catastrophic_regex_check_off_the_main_thread_fails_with_the_limit_named() -> None:
    out = _off_the_main_thread("regex-check")
    assert "passed=False skipped=False" in out
    assert "ran longer than the regex time limit of 0.25 seconds" in out


def test_catastrophic_refusal_patterns_off_the_main_thread_fail_the_check() -> None:
    out = _off_the_main_thread("refusal")
    assert "passed=False" in out and "the refusal patterns ran longer than the regex time limit of 0.25" in out


def test_a_schema_pattern_off_the_main_thread_runs_with_the_budget() -> None:
    out = _off_the_main_thread("schema")
    assert "passed=False" in out and "the schema's validation ran longer than the regex time limit of 0.25" in out


def test_a_catastrophic_fake_rule_on_the_event_loop_thread_is_a_model_error() -> None:
    out = _off_the_main_thread("fake-rule", short=False)  # the real limit, named as users see it
    assert out.startswith("ModelError: a rule of fake:")
    assert "on case c1 ran longer than the regex time limit of 2 seconds" in out


@pytest.mark.usefixtures("short_regex_limit")
def test_a_rule_compiled_with_re_is_searched_within_the_budget_too() -> None:
    model = FakeModel([FakeRule(re.compile(EVIL), "x")])
    with pytest.raises(ModelError, match="ran longer than the regex time limit of 0.25"):
        model.generate_sync(ModelRequest(VICTIM, case_id="c1"))


def test_one_budget_spans_the_searches_it_runs() -> None:
    budget = RegexBudget(Limit("test", 0.2, "seconds"), "the patterns")
    assert budget.search(user_regex("b"), "abc") is not None
    with pytest.raises(BudgetExceeded, match="the patterns ran longer than the test limit of 0.2 seconds"):
        budget.search(user_regex(EVIL), VICTIM)
    with pytest.raises(BudgetExceeded):  # spent: the next search ends at once
        budget.search(user_regex("b"), "abc")


def test_a_bad_pattern_is_re_error_with_the_reason_and_position() -> None:
    with pytest.raises(re.error, match="at position"):
        user_regex("(")
