"""The case line's pydantic model (``CaseLine``) accepts exactly the lines the case loader accepts.

The loader checks a line by its own rules (``shape_problems``: a run with no config never imports
pydantic); the model is built from the same fields. Generated lines, near every rule of every
field, must be accepted by both or refused by both, and together they must hit every rule.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import example
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from pydantic import ValidationError

from pytest_promptsuite.cases.case_schema import CaseLine
from pytest_promptsuite.cases.case_schema import json_schema as case_schema
from pytest_promptsuite.cases.conversation_fields import TURN_KEYS
from pytest_promptsuite.cases.conversation_fields import USER_KEYS
from pytest_promptsuite.cases.prompt_case import LINE_FIELDS
from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.cases.prompt_case import shape_problems
from tests.unit.examples import CASE_FILES
from tests.unit.examples import EXAMPLES
from tests.unit.examples import schema_errors


GOOD = {"case_id": "a-1", "input": "hi", "slice": "s"}
KEYS = [f.metadata.get("key", f.name) for f in LINE_FIELDS]
#: Strings around each string rule: blank by ``str.strip()`` (which JSON Schema's ``\s`` differs
#: from on a few), line breaks, and plain text.
STRINGS = st.sampled_from(["a", " a b ", "é", "\ufeffa"]) | st.sampled_from(
    ["", " ", "\t", "\x1c", "\x85", "\xa0", "\u2028", "\ufeff", "a\nb", "a\r", "\n"]
)
NUMBERS = st.sampled_from([0, 1, 2, -1, 0.0, -0.0, 0.5, 1.0, 1.0000000000000002, -1e-300, 10**400]) | st.floats(
    allow_nan=False, allow_infinity=False
)
SCALARS = st.none() | st.booleans() | NUMBERS | STRINGS
ITEMS = STRINGS | SCALARS
#: A value for any key: a scalar, a list (of strings, other scalars, objects) or an object.
VALUES = (
    ITEMS
    | st.lists(STRINGS, max_size=3)
    | st.lists(ITEMS | st.dictionaries(STRINGS, SCALARS, max_size=2), max_size=3)
    | st.dictionaries(STRINGS, st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=2)), max_size=2)
)
#: Values of each key's shape, on both sides of its rules.
NEAR = {
    "case_id": STRINGS,
    "slice": STRINGS,
    "input": STRINGS | st.lists(ITEMS, max_size=2),
    **{key: st.lists(STRINGS | ITEMS, max_size=3) for key in ("must_include", "must_not_include", "tags")},
    **{key: st.dictionaries(STRINGS, VALUES, max_size=2) for key in ("vars", "metadata")},
    "answer": STRINGS | st.lists(SCALARS, max_size=2) | st.none(),
    "assert": st.lists(st.dictionaries(STRINGS, SCALARS, max_size=1) | SCALARS, max_size=2),
    "threshold": NUMBERS,
    "review": st.booleans() | STRINGS,
    "tools": st.lists(st.dictionaries(STRINGS, SCALARS, max_size=1) | SCALARS, max_size=2),
    "tool_choice": STRINGS | st.dictionaries(STRINGS, SCALARS, max_size=1) | SCALARS,
    "tool_results": st.dictionaries(STRINGS, VALUES, max_size=2),
    "turns": st.lists(
        st.dictionaries(
            st.sampled_from([*TURN_KEYS, "must_inlcude"]), STRINGS | st.lists(STRINGS, max_size=2), max_size=2
        )
        | SCALARS,
        max_size=2,
    ),
    "user": st.dictionaries(st.sampled_from([*USER_KEYS, "gaol"]), STRINGS | NUMBERS, max_size=2) | SCALARS,
}
#: Every rule of the loader, as :func:`_rule` names a message: the generated lines hit each one.
RULES = {
    "unknown key",
    *(f"missing required field {key!r}" for key in ("case_id", "input", "slice")),
    *(
        f"{key!r} {rule}"
        for key in ("case_id", "slice")
        for rule in ("must be a string", "is empty", "must be one line")
    ),
    "'input' is empty",
    "'input' is an empty list (a multi-turn case needs at least one turn)",
    "'input[i]' must be a string",
    "'input[i]' is empty (every turn needs text, as 'input' does)",
    "'input' must be a string or a list of strings",
    *(
        rule
        for key in ("must_include", "must_not_include", "tags")
        for rule in (
            f"{key!r} must be a list of strings",
            f"'{key}[i]' must be a string",
            f"'{key}[i]' is an empty string",
        )
    ),
    "'vars' must be an object",
    "'metadata' must be an object",
    "'answer' must be a string or a list",
    "'assert' must be a list of checks",
    "'assert[i]' must be an object",
    "'threshold' must be a number from 0 to 1",
    "'threshold' must be from 0 to 1",
    "'review' must be true, false or a reason",
    "'tools' must be a list of function tools",
    "'tools[i]' must be an object",
    "'tool_choice' must be a string or an object",
    "'tool_results' must be an object",
    "'turns' must be a list of turns",
    "'turns[i]' must be an object",
    "'turns[i].input' must be a string",
    "'turns[i].input' is empty",
    *(
        rule
        for key in ("must_include", "must_not_include")
        for rule in (
            f"'turns[i].{key}' must be a list of strings",
            f"'turns[i].{key}[i]' must be a string",
            f"'turns[i].{key}[i]' is an empty string",
        )
    ),
    "'turns[i].assert' must be a list of checks",
    "'turns[i].assert[i]' must be an object",
    "'user' must be an object",
    *(
        f"'user.{key}' {rule}"
        for key in ("persona", "goal", "first", "stop")
        for rule in ("must be a string", "is empty")
    ),
    "'user.max_turns' must be a whole number from 1",
}


def _rule(message: str) -> str:
    """The rule a loader message states, without the value it got or the index it names."""
    if message.startswith("unknown key"):
        return "unknown key"
    return re.sub(r"\[\d+\]", "[i]", message.split(", got ")[0])


@st.composite
def lines(draw: st.DrawFn) -> dict[str, Any]:
    """A case line: a good one, then one or two keys (known or not) set to values of their shape
    or of any other, and now and then a required key taken out."""
    line: dict[str, Any] = dict(GOOD)
    keys = st.sampled_from([*KEYS, "assert_", "tagz", "Case_id"])
    for key in draw(st.lists(keys, min_size=1, max_size=2, unique=True)):
        line[key] = draw(NEAR[key] if key in NEAR and draw(st.booleans()) else VALUES)
    if draw(st.integers(0, 9)) == 0:
        line.pop(draw(st.sampled_from(["case_id", "input", "slice"])), None)
    return line


def _schema_accepts(line: dict[str, Any]) -> bool:
    try:
        CaseLine.model_validate(line)
    except ValidationError:
        return False
    return True


#: A line per rule that breaks only it. The generated lines reach every rule too, but a few only a handful of
#: times in 3,000, and Hypothesis draws constants from every local module the process imported: which
#: examples a derandomized run makes depends on the other tests in its pytest-xdist worker. These lines make
#: "every rule is tried" hold in any process.
RULE_LINES: list[dict[str, Any]] = [
    {**GOOD, "tagz": ["t"]},
    *({k: v for k, v in GOOD.items() if k != key} for key in ("case_id", "input", "slice")),
    *({**GOOD, key: value} for key in ("case_id", "slice") for value in (1, " ", "a\nb")),
    *({**GOOD, "input": value} for value in (" ", [], [1], [" "], 1)),
    *({**GOOD, key: value} for key in ("must_include", "must_not_include", "tags") for value in ("a", [1], [""])),
    {**GOOD, "vars": []},
    {**GOOD, "metadata": "m"},
    {**GOOD, "answer": 1},
    {**GOOD, "assert": {}},
    {**GOOD, "assert": [1]},
    {**GOOD, "threshold": "1"},
    {**GOOD, "threshold": 2},
    {**GOOD, "review": 1},
    {**GOOD, "tools": {}},
    {**GOOD, "tools": [1]},
    {**GOOD, "tool_choice": 1},
    {**GOOD, "tool_results": []},
    {**GOOD, "turns": {}},
    {**GOOD, "turns": [1]},
    *({**GOOD, "turns": [{"input": value}]} for value in (1, " ")),
    *({**GOOD, "turns": [{key: value}]} for key in ("must_include", "must_not_include") for value in ("a", [1], [""])),
    {**GOOD, "turns": [{"assert": {}}]},
    {**GOOD, "turns": [{"assert": [1]}]},
    {**GOOD, "user": []},
    *({**GOOD, "user": {key: value}} for key in ("persona", "goal", "first", "stop") for value in (1, " ")),
    {**GOOD, "user": {"max_turns": 0}},
]


def test_the_loader_and_the_schema_accept_the_same_lines_and_every_rule_is_tried() -> None:
    broken = [[_rule(p) for p in shape_problems(line)] for line in RULE_LINES]
    assert all(len(rules) == 1 for rules in broken), broken
    assert sorted(rules[0] for rules in broken) == sorted(RULES)  # one line for each rule
    seen: set[str] = set()

    @settings(max_examples=3000, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(lines())
    def agree(line: dict[str, Any]) -> None:
        problems = list(shape_problems(line))
        seen.update(_rule(p) for p in problems)
        assert _schema_accepts(line) is (not problems), problems

    for line in RULE_LINES:
        agree = example(line)(agree)
    agree()
    assert seen == RULES


@pytest.mark.parametrize(
    "change",
    [
        {"case_id": "a b"},
        {"input": [" x", "y "]},
        {"threshold": 0},
        {"threshold": 1},
        {"threshold": 0.25},
        {"answer": None},
        {"answer": ["a", 1]},
        {"review": ""},
        {"review": True},
        {"must_include": []},
        {"vars": {"k": [1, {"x": None}]}},
        {"assert": [{}]},
        {"input": "\u2028x"},
        {"slice": "\xa0s"},
        {"turns": []},
        {"turns": [{}, {"input": "x", "must_include": ["a"], "assert": [{}]}]},
        {"user": {}},
        {"user": {"persona": "p", "goal": "g", "first": "f", "max_turns": 1, "stop": "s"}},
    ],
)
def test_boundary_lines_are_accepted_by_both(change: dict[str, Any]) -> None:
    line = {**GOOD, **change}
    assert list(shape_problems(line)) == []
    assert _schema_accepts(line)


def test_the_schema_holds_the_loaders_keys_requirements_and_descriptions() -> None:
    schema = CaseLine.model_json_schema()
    assert list(schema["properties"]) == KEYS
    assert schema["required"] == ["case_id", "input", "slice"]
    assert schema["additionalProperties"] is False
    assert all(prop["description"] for prop in schema["properties"].values())
    assert "default" not in schema["properties"]["threshold"]  # absent, never null


def test_a_case_the_schema_validates_is_the_case_the_loader_builds() -> None:
    line = {**GOOD, "assert": [{"type": "contains", "value": "x"}], "threshold": 1, "tags": ["t"]}
    model = CaseLine.model_validate(line)
    assert model.model_dump(by_alias=True, exclude_none=True) == PromptCase.from_dict(line).to_dict()


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_every_example_case_line_validates(path: Path) -> None:
    lines = [line for line in path.read_text(encoding="utf-8-sig").splitlines() if line.strip()]
    assert lines
    for number, line in enumerate(lines, 1):
        assert schema_errors(case_schema(), json.loads(line)) == [], f"{path.name}:{number}"


def test_a_misspelled_case_key_fails() -> None:
    line = {"case_id": "a", "input": "hi", "slice": "s", "must_inlcude": ["x"]}
    (error,) = schema_errors(case_schema(), line)
    assert "must_inlcude" in error
    assert schema_errors(case_schema(), {"case_id": "a", "input": "hi"}) == [": 'slice' is a required property"]
