"""Stage tests for ``checks.compile_checks``: check entries compiled once, errors naming the case and entry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.cases.load import load_cases
from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.builtin_checks import BUILTIN_TYPES
from pytest_promptsuite.checks.builtin_checks import make_builtin_check
from pytest_promptsuite.checks.compile_checks import compile_case
from pytest_promptsuite.checks.compile_checks import compile_cases
from pytest_promptsuite.checks.compile_checks import compile_suite_checks
from pytest_promptsuite.checks.evaluator import Evaluator
from pytest_promptsuite.config.config_schema import validate
from pytest_promptsuite.config.suite import SuiteConfig
from pytest_promptsuite.errors import CheckError


CASES = "\ufeff" + "\r\n".join(
    [
        '{"case_id": "a-1", "input": "hello", "slice": "s", "must_include": ["hello"], "metadata": {"k": [1, 2]}}',
        "",
        '{"case_id": "a-2", "input": ["one", "two"], "slice": "t", "tags": ["x"], "vars": {"city": "巴黎"}}',
        '{"case_id": "a-3", "input": "q", "slice": "s", "assert": [{"type": "contains", "value": "q"}]}',
        '{"case_id": "a-4", "input": "last line, no newline", "slice": "s"}',
    ]
)


def test_cases_without_checks_of_their_own_share_one_compiled_set(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(CASES.encode("utf-8"))
    compiled = compile_cases(load_cases(path), make_builtin_check)
    assert compiled["a-1"] is compiled["a-4"]  # same slice, no assert entries
    assert compiled["a-2"] is not compiled["a-1"]  # another slice: the suite's checks may differ
    assert compiled["a-3"] is not compiled["a-1"] and len(compiled["a-3"].entries) == 1


def test_bad_suite_checks_name_the_config_and_the_entry() -> None:
    config = validate(SuiteConfig, {"checks": [{"assert": [{"type": "is-json"}, {"type": "is-jsn"}]}]})
    with pytest.raises(CheckError) as info:
        compile_suite_checks(config.checks, make_builtin_check, base_dir=config.root, source="promptsuite.toml")
    assert str(info.value).startswith(
        "promptsuite.toml: [[checks]][0].assert[1]: unknown check type 'is-jsn' (did you mean 'is-json'?)"
    )


def is_short(output: str, case: PromptCase) -> bool:
    """A ``python`` check function (not a pydantic model class, which ``pydantic-class`` below names)."""
    return len(output) < 10


REFUND = '{"order": "A-1", "amount": 12.5, "items": [{"sku": "x"}]}'
SCHEMA = {"type": "object", "required": ["order", "amount"], "properties": {"amount": {"type": "number"}}}


MALFORMED: list[tuple[str, dict[str, Any], str]] = [
    (
        "is-json-schema",
        {"type": "is-json", "value": {"type": "nope"}},
        "'value' of 'is-json' is not a valid JSON Schema",
    ),
    ("is-json-file", {"type": "is-json", "value": "missing.json"}, "cannot read the schema file"),
    ("contains-json-schema", {"type": "contains-json", "value": 3}, "must be a JSON Schema object or a schema file"),
    ("pydantic-import", {"type": "pydantic", "value": "no_such_module:X"}, "cannot import module 'no_such_module'"),
    ("pydantic-class", {"type": "pydantic", "value": f"{__name__}:is_short"}, "is not a pydantic model class"),
    ("is-xml", {"type": "is-xml", "value": {"elements": ["a"]}}, "takes only 'requiredElements'"),
    ("word-count", {"type": "word-count", "value": {"min": 5, "max": 2}}, "min 5 is above max 2"),
    ("word-count-missing", {"type": "word-count"}, "'word-count' needs 'value'"),
    ("char-count", {"type": "char-count", "value": "ten"}, "must be a whole number or {min, max}"),
    ("finish-reason", {"type": "finish-reason", "value": 1}, "'value' of 'finish-reason' must be a finish reason"),
    ("equals", {"type": "equals"}, "'equals' needs 'value'"),
    ("contains", {"type": "contains", "value": ["a"]}, "'value' of 'contains' must be a string, got a list"),
    ("contains-empty", {"type": "contains", "value": ""}, "is an empty string"),
    ("icontains", {"type": "icontains", "valeu": "a"}, "'icontains' needs 'value'"),
    ("contains-any", {"type": "contains-any", "value": []}, "must be a non-empty list of strings"),
    ("contains-all", {"type": "contains-all", "value": [{"a": 1}]}, "'value[0]' of 'contains-all' must be a string"),
    ("icontains-any", {"type": "icontains-any", "value": None}, "'icontains-any' needs 'value'"),
    ("icontains-all", {"type": "icontains-all", "value": 3, "x": 1}, "must be a non-empty list of strings"),
    ("starts-with", {"type": "starts-with", "value": True}, "must be a string, got a boolean"),
    ("regex", {"type": "regex", "value": "("}, "'value' of 'regex' is not a valid regex '('"),
    (
        "regex-fullmatch",
        {"type": "regex", "value": "a", "fullmatch": "yes"},
        "'fullmatch' of 'regex' must be true or false",
    ),
    ("levenshtein", {"type": "levenshtein", "value": "a", "threshold": 1.5}, "must be a whole number of edits"),
    (
        "similar",
        {"type": "similar", "value": "a", "threshold": 75},
        "'threshold' of 'similar' must be a ratio from 0 to 1",
    ),
    (
        "rouge-n",
        {"type": "rouge-n", "value": "a", "threshold": 75},
        "'threshold' of 'rouge-n' must be a score from 0 to 1",
    ),
    ("is-refusal", {"type": "is-refusal", "value": ["("]}, "is not a valid regex"),
    ("is-refusal-defaults", {"type": "is-refusal", "defaults": False}, "needs 'value': your refusal patterns"),
    ("human-review", {"type": "human-review"}, "'human-review' needs 'value'"),
    (
        "not-human-review",
        {"type": "not-human-review", "value": "x"},
        "'not-human-review': 'human-review' has no not- form",
    ),
    ("latency", {"type": "latency", "threshold": -1}, "'threshold' of 'latency' must be a bound in milliseconds"),
    ("latency-path", {"type": "latency", "threshold": 1, "path": "$.a"}, "'path' does not apply to 'latency'"),
    ("tokens", {"type": "tokens", "threshold": 5, "field": "output"}, "must be 'total', 'prompt' or 'completion'"),
    ("cost", {"type": "cost", "prices": {"prompt": 1, "completion": 1}}, "'cost' needs 'threshold'"),
    ("cost-prices", {"type": "cost", "threshold": 1, "prices": {"prompt": 1}}, "'prices' of 'cost' must be"),
    ("llm-rubric", {"type": "llm-rubric", "value": " "}, "is empty: write the rubric"),
    ("llm-rubric-threshold", {"type": "llm-rubric", "value": "ok", "threshold": 2}, "a score from 0 to 1"),
    ("tools-call", {"type": "is-valid-openai-tools-call", "value": 1}, "unknown field 'value'"),
    (
        "function-call",
        {"type": "is-valid-openai-function-call", "value": {"name": "f"}},
        "must be a list of functions ({name, parameters}), got an object",
    ),
    (
        "function-call-schema",
        {"type": "is-valid-openai-function-call", "value": [{"name": "f", "parameters": {"type": 5}}]},
        "is not a valid JSON Schema",
    ),
    ("similar-cosine", {"type": "similar:cosine"}, "'similar:cosine' needs 'value'"),
    ("similar-dot", {"type": "similar:dot", "value": [1, {}]}, "'value[1]' of 'similar:dot' must be a string"),
    ("similar-euclidean", {"type": "similar:euclidean", "value": "a", "threshold": "x"}, "must be a number"),
    ("f1", {"type": "tool-call-f1", "value": []}, "'value' of 'tool-call-f1' must be a list of tool names"),
    ("f1-threshold", {"type": "tool-call-f1", "value": "a", "threshold": 2}, "must be a score from 0 to 1"),
    ("used", {"type": "trajectory:tool-used", "value": {"name": "a", "min": -1}}, "'min' of 'trajectory:tool-used'"),
    ("used-key", {"type": "trajectory:tool-used", "value": {"nam": "a"}}, "unknown key 'nam'"),
    ("sequence", {"type": "trajectory:tool-sequence", "value": {"steps": ["a"], "mode": "strict"}}, "'in_order'"),
    ("args", {"type": "trajectory:tool-args-match", "value": {"name": "a"}}, "exactly one of 'args' and 'schema'"),
    (
        "args-schema",
        {"type": "trajectory:tool-args-match", "value": {"name": "a", "schema": {"type": 5}}},
        "is not a valid JSON Schema",
    ),
    ("steps-path", {"type": "trajectory:step-count", "value": 1, "path": "$.a"}, "'path' does not apply"),
    ("steps", {"type": "trajectory:step-count", "value": {}}, "needs 'min' or 'max'"),
    ("turns", {"type": "conversation:turn-count", "value": {}}, "needs 'min' or 'max'"),
    ("keeps", {"type": "conversation:keeps", "value": ""}, "write the fact"),
    ("goal", {"type": "conversation:goal-met", "threshold": 2}, "a score from 0 to 1"),
    ("role", {"type": "conversation:role-adherence"}, "'value'"),
    ("python", {"type": "python", "value": "json:nope"}, "'json' has no attribute 'nope'"),
    ("python-not-callable", {"type": "python", "value": "json:__name__"}, "is not callable"),
    (
        "unknown-field",
        {"type": "contains", "value": "a", "vlaue": "b"},
        "unknown field 'vlaue' for 'contains' (did you mean 'value'?)",
    ),
    ("weight", {"type": "contains", "value": "a", "weight": -1}, "'weight' must be a number >= 0"),
    ("path", {"type": "equals", "value": 1, "path": "a.b"}, "'path' must be a JSONPath starting with '$'"),
    ("path-syntax", {"type": "equals", "value": 1, "path": "$.a[x]"}, "cannot read '[x]' at position 4"),
    ("unknown-type", {"type": "contians", "value": "a"}, "unknown check type 'contians' (did you mean 'contains'?)"),
    ("no-type", {"value": "a"}, "missing 'type' (known types: is-json,"),
    ("assert-set-empty", {"type": "assert-set", "assert": []}, "must be a non-empty list of checks"),
    (
        "assert-set-nested",
        {"type": "assert-set", "assert": [{"type": "assert-set", "assert": [{"type": "is-json"}]}]},
        "assert[1].assert[0]: an assert-set cannot hold another assert-set",
    ),
    (
        "assert-set-field",
        {"type": "assert-set", "assert": [{"type": "is-json"}], "treshold": 1},
        "unknown field 'treshold' for 'assert-set' (did you mean 'threshold'?)",
    ),
    (
        "assert-set-threshold",
        {"type": "assert-set", "assert": [{"type": "is-json"}], "threshold": 5},
        "'threshold' must be a share from 0 to 1",
    ),
]


def test_schema_file_is_relative_to_the_case_file(tmp_path: Path) -> None:
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "refund.json").write_text(json.dumps(SCHEMA), encoding="utf-8")
    case = PromptCase(
        case_id="c", input="i", slice="s", assert_=[{"type": "is-json", "value": "file://schemas/refund.json"}]
    )
    compiled = compile_case(case, base_dir=tmp_path)
    [ok] = Evaluator().evaluate(case, REFUND, compiled)
    [bad] = Evaluator().evaluate(case, '{"order": 1}', compiled)
    assert ok.passed and not bad.passed
    assert "'amount' is a required property" in bad.message


def test_python_check_from_a_file_beside_the_case(tmp_path: Path) -> None:
    (tmp_path / "my_checks.py").write_text(
        "from pytest_promptsuite.checks import CheckResult\n"
        "def polite(output, case):\n"
        "    return CheckResult('metric', 'python', 'please' in output, f'{case.case_id}: polite?')\n",
        encoding="utf-8",
    )
    case = PromptCase(
        case_id="c7", input="i", slice="s", assert_=[{"type": "python", "value": "file://my_checks.py:polite"}]
    )
    compiled = compile_case(case, base_dir=tmp_path)
    [result] = Evaluator().evaluate(case, "no", compiled)
    assert not result.passed
    assert result.message == "expected file://my_checks.py:polite accepts the output; found c7: polite?"


@pytest.mark.parametrize(("entry", "words"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_spec_is_a_check_error_naming_the_case_and_entry(entry: dict[str, Any], words: str) -> None:
    case = PromptCase(case_id="bad-1", input="i", slice="s", assert_=[{"type": "is-json"}, entry])
    with pytest.raises(CheckError) as info:
        compile_case(case, display="cases.jsonl")
    assert str(info.value).startswith("cases.jsonl:0: case 'bad-1': assert[1]")
    assert words in str(info.value)


def test_every_builtin_type_has_a_malformed_case() -> None:
    covered = {m[1].get("type", "").removeprefix("not-") for m in MALFORMED}
    assert set(BUILTIN_TYPES) <= covered, set(BUILTIN_TYPES) - covered


def test_a_python_function_with_a_third_parameter_gets_the_check_context(tmp_path: Path) -> None:
    (tmp_path / "sent.py").write_text(
        "def asked(output, case, context):\n    return context.prompt[-1]['content'] == output\n", encoding="utf-8"
    )
    case = PromptCase(case_id="c", input="i", slice="s", assert_=[{"type": "python", "value": "file://sent.py:asked"}])
    compiled = compile_case(case, base_dir=tmp_path)
    prompt = [{"role": "user", "content": "hi"}]
    [same] = Evaluator().evaluate(case, "hi", compiled, prompt=prompt)
    [other] = Evaluator().evaluate(case, "no", compiled, prompt=prompt)
    assert same.passed and not other.passed
