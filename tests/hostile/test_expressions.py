"""No limits on user expressions (finding 10): catastrophic regexes in a check or a fake-model
rule, runaway Jinja (nested ranges, folded powers, huge repetitions) end as a clear failure or
error that names the limit, and the time budget leaves an outer alarm (pytest-timeout) working."""

from __future__ import annotations

import json
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.evaluator import Evaluator
from pytest_promptsuite.errors import ModelError
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.models.fake import FakeModel
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.prompts.files.jinja import compile_template
from pytest_promptsuite.prompts.files.jinja import render_template
from pytest_promptsuite.prompts.files.jinja import sandbox_environment
from pytest_promptsuite.safety.deadline import BudgetExceeded
from pytest_promptsuite.safety.deadline import budget_available
from pytest_promptsuite.safety.deadline import time_budget
from pytest_promptsuite.safety.limits import Limit


pytestmark = pytest.mark.skipif(not budget_available(), reason="needs SIGALRM on the main thread")

EVIL = r"^(a|aa)+$"  # the regex package stops ^(a+)+$ at once; both engines backtrack on this one
VICTIM = "a" * 64 + "!"  # hours of backtracking for re and for regex
SHORT = Limit("test", 0.2, "seconds")


def test_a_catastrophic_regex_check_fails_with_the_limit_named() -> None:
    case = PromptCase(case_id="c", input="i", slice="s", assert_=[{"type": "regex", "value": EVIL}])
    [result] = Evaluator().evaluate(case, VICTIM)
    assert not result.passed and not result.skipped
    assert "ran longer than the regex time limit of 2 seconds" in result.message


@pytest.mark.usefixtures("short_regex_limit")
def test_catastrophic_refusal_patterns_fail_the_check() -> None:
    entry = {"type": "is-refusal", "value": [EVIL], "defaults": False}
    case = PromptCase(case_id="c", input="i", slice="s", assert_=[entry])
    [result] = Evaluator().evaluate(case, VICTIM)
    assert not result.passed and "the refusal patterns ran longer than the regex time limit of 0.25" in result.message


@pytest.mark.usefixtures("short_regex_limit")
def test_a_catastrophic_fake_rule_is_a_model_error(tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": [{"match": EVIL, "reply": "x"}]}), encoding="utf-8")
    model = FakeModel.from_rules_file(rules)
    with pytest.raises(ModelError, match="a rule of fake:.* on case c1 ran longer than the regex time limit of 0.25"):
        model.generate_sync(ModelRequest(VICTIM, case_id="c1"))


@pytest.mark.usefixtures("short_regex_limit")
def test_a_schema_pattern_runs_with_the_budget() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": EVIL}}}
    case = PromptCase(case_id="c", input="i", slice="s", assert_=[{"type": "is-json", "value": schema}])
    [result] = Evaluator().evaluate(case, json.dumps({"a": VICTIM}))
    assert (
        not result.passed and "the schema's validation ran longer than the regex time limit of 0.25" in result.message
    )


JINJA = [
    ("{{ 10 ** 10000000 }}", "more than the template number limit of 1,000 digits"),
    ("{{ 'a' * 10**8 }}", "more than the template output limit of 1,000,000 characters"),
    ("{{ [0] * 10**7 }}", "more than the template output limit"),
    ("{{ 'x' + ('y' * 999999) + ('z' * 999999) }}", "more than the template output limit"),
    ("{% for i in range(100000) %}{% endfor %}", "more than the template range limit of 10,000 numbers"),
    pytest.param(  # it waits out the limit
        "{% for i in range(9999) %}{% for j in range(9999) %}{% for k in range(9999) %}{% endfor %}{% endfor %}"
        "{% endfor %}",
        "ran longer than the template time limit of 5 seconds",
        marks=pytest.mark.slow,
    ),
    ("{{ 'a'|center(100000000) }}", "filter 'center' was given 100,000,000"),
    ("{{ '%099999999d' % 1 }}", "asks for a field that wide"),
    ("{{ '%*d'|format(999999, 1) }}", "asks for a field that wide"),
    ("{{ ('a' * 1000)|replace('', 'b' * 1000) }}", "filter 'replace' would add"),
    ("{% for i in range(9000) %}{{ 'a' * 999 }}{% endfor %}", "the output reached"),
    ("{{ ''.__class__ }}", "refused by the sandbox"),
    ("{{ cycler.__init__.__globals__ }}", "refused by the sandbox"),
]


@pytest.mark.parametrize(("source", "words"), JINJA, ids=[f"jinja-{i}" for i in range(len(JINJA))])
def test_runaway_templates_are_template_errors_naming_the_limit(source: str, words: str) -> None:
    env = sandbox_environment()
    with pytest.raises(TemplateError) as info:
        render_template(compile_template(env, source, "prompts.yml:3"), {"input": "x"}, "prompts.yml:3")
    assert str(info.value).startswith("prompts.yml:3: ")
    assert words in str(info.value)


def test_ordinary_templates_still_render() -> None:
    env = sandbox_environment()
    source = "{{ input|upper }} {{ 2 ** 10 }} {{ 'ab' * 3 }} {{ [1] * 2 }} {{ n }} {{ '%5d'|format(7) }}"
    template = compile_template(env, source, None)
    assert render_template(template, {"input": "hi", "n": 10**12}, None) == "HI 1024 ababab [1, 1] 1000000000000     7"


def test_the_budget_keeps_an_outer_alarm(monkeypatch: pytest.MonkeyPatch) -> None:
    fired: list[float] = []

    def outer(signum: int, frame: Any) -> None:
        fired.append(time.monotonic())

    previous = signal.signal(signal.SIGALRM, outer)
    try:
        start = time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, 0.5)  # as pytest-timeout's signal method arms it
        with time_budget(SHORT, "quick"):
            pass
        with pytest.raises(BudgetExceeded, match="slow ran longer than the test limit of 0.2 seconds"):
            with time_budget(SHORT, "slow"):
                re.search(EVIL, VICTIM)
        assert not fired
        while not fired and time.monotonic() - start < 5:
            time.sleep(0.01)
        assert fired, "the outer alarm never fired"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_an_outer_alarm_due_first_still_fires_inside_a_budget() -> None:
    class Outer(Exception):
        pass

    def outer(signum: int, frame: Any) -> None:
        raise Outer()

    previous = signal.signal(signal.SIGALRM, outer)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        with pytest.raises(Outer):
            with time_budget(Limit("test", 5, "seconds"), "long"):
                re.search(EVIL, VICTIM)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
