"""Hostile and careless input files (findings 6, 8, 9, 11): each is a clear ``path:line`` error
(before collection for a config, at collection for a case file), never a traceback, a hang or a
silently wrong result; files and code come from inside the suite's folder only."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_promptsuite.cli.main import main
from tests.hostile.support import assert_clean
from tests.hostile.support import case
from tests.hostile.support import output
from tests.hostile.support import rows
from tests.hostile.support import write_cases
from tests.hostile.test_formats import BILLION_LAUGHS


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    result = pytester.runpytest("--prompt-suite", "cases.jsonl", "-p", "no:randomly", *args)
    assert_clean(result)
    return result


def _config(pytester: pytest.Pytester, text: str) -> None:
    (pytester.path / "promptsuite.toml").write_text(text, encoding="utf-8")


def _refused(result: pytest.RunResult, message: str) -> None:
    assert result.ret in (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERRUPTED), output(result)
    assert message in output(result), output(result)


# -- finding 6: YAML bombs ----------------------------------------------------------------------


def test_a_billion_laughs_prompts_file_is_refused_at_once(pytester: pytest.Pytester) -> None:
    (pytester.path / "prompts.yml").write_text(BILLION_LAUGHS, encoding="utf-8")
    _config(pytester, '[template]\ntask_prompts = "prompts.yml"\ntask = "x"\n')
    write_cases(pytester, [case("a")])
    _refused(_run(pytester), "prompts.yml:6: YAML aliases expand to more than the YAML alias expansion limit")


# -- finding 8: silent wrong results -----------------------------------------------------------


def test_a_link_leaving_a_listed_folder_is_refused_and_one_inside_is_followed(pytester: pytest.Pytester) -> None:
    suite, outside = pytester.path / "suite", pytester.path / "outside"
    suite.mkdir()
    outside.mkdir()
    (suite / "a.jsonl").write_text(json.dumps(case("a")) + "\n", encoding="utf-8")
    (outside / "b.jsonl").write_text(json.dumps(case("b")) + "\n", encoding="utf-8")
    (suite / "inner").mkdir()
    (suite / "inner" / "c.jsonl").write_text(json.dumps(case("c")) + "\n", encoding="utf-8")
    os.symlink(outside / "b.jsonl", suite / "link.jsonl")
    os.symlink(suite / "inner", suite / "alias")  # inside: followed (its case ids then repeat)
    result = pytester.runpytest("--prompt-suite", "suite", "--collect-only", "-q")

    assert_clean(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    text = output(result)
    assert f"suite/link.jsonl: a link to {outside / 'b.jsonl'}, outside the suite's folder {suite}" in text
    assert "suite/inner/c.jsonl:1: duplicate case_id 'c' (first defined at suite/alias/c.jsonl:1)" in text
    assert main(["validate", str(suite)]) == 1


@pytest.mark.parametrize("value", ["-1", "5.0", "nan"])
def test_slice_thresholds_outside_0_to_1_are_refused(pytester: pytest.Pytester, value: str) -> None:
    _config(pytester, f'[thresholds.slices]\n"s" = {value}\n')
    write_cases(pytester, [case("a")])
    message = ("promptsuite.toml:2: thresholds.slices.s = nan: not a finite number" if value == "nan"
               else "promptsuite.toml:2: thresholds.slices.s: Input should be")
    _refused(_run(pytester), message)


def test_fake_rules_in_a_config_stay_in_the_suite_but_an_option_may_name_any(pytester: pytest.Pytester) -> None:
    (pytester.path / "suite").mkdir()
    (pytester.path / "rules.json").write_text('{"default": "ruled"}', encoding="utf-8")
    (pytester.path / "suite" / "promptsuite.toml").write_text('[model]\nspec = "fake:../rules.json"\n', "utf-8")
    (pytester.path / "suite" / "cases.jsonl").write_text(json.dumps(case("a")) + "\n", encoding="utf-8")
    refused = pytester.runpytest("--prompt-suite", "suite")
    assert_clean(refused)
    _refused(refused, "model.spec = 'fake:../rules.json' points outside the suite's folder")

    (pytester.path / "suite" / "promptsuite.toml").write_text("[model]\n", "utf-8")
    allowed = pytester.runpytest("--prompt-suite", "suite", "--prompt-model", "fake:rules.json",
                                 "--prompt-report", "report")
    assert_clean(allowed)
    assert [row["output"] for row in rows(pytester)] == ["ruled"]


@pytest.mark.parametrize("where", ["absolute", "parent"])
def test_a_schema_path_outside_the_suite_is_refused(pytester: pytest.Pytester, where: str) -> None:
    schema = pytester.path.parent / f"schema-{where}.json"
    schema.write_text('{"type": "object"}', encoding="utf-8")
    value = str(schema) if where == "absolute" else f"../{schema.name}"
    write_cases(pytester, [case("a", **{"assert": [{"type": "is-json", "value": value}]})])
    _refused(_run(pytester), f"cases.jsonl:1: case 'a': assert[0]: 'value' of 'is-json': {value!r} is outside "
                             "the suite's folder")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"case_id": "a", "input": "x", "slice": "s", "must_not_include": ["sk-"], "must_not_include": []}',
         "cases.jsonl:1: duplicate key 'must_not_include': a key may appear once in an object (columns 46 and 75)"),
        ('{"case_id": "a", "input": "x", "slice": "s", "assert": [{"type": "contains", "value": "y", '
         '"weight": NaN}]}',
         "cases.jsonl:1: invalid JSON: NaN is not a JSON number (JSON has no NaN or Infinity) (column 102)"),
        ('{"case_id": "a", "input": [""], "slice": "s"}',
         "cases.jsonl:1: 'input[0]' is empty (every turn needs text, as 'input' does)"),
        ('{"case_id": "a", "input": "x", "slice": "s", "vars": ' + "[" * 70 + "]" * 70 + "}",
         "cases.jsonl:1: nested deeper than the depth limit of 64 levels (column 117)"),
    ],
    ids=["duplicate-key", "nan-weight", "empty-turn", "deep"],
)
def test_case_lines_that_would_be_silently_wrong_are_errors(pytester: pytest.Pytester, line: str,
                                                            message: str) -> None:
    (pytester.path / "cases.jsonl").write_text(line + "\n", encoding="utf-8")
    _refused(_run(pytester), message)


def test_a_nan_weight_in_the_config_is_refused(pytester: pytest.Pytester) -> None:
    _config(pytester, '[[checks]]\nassert = [{ type = "contains", value = "x", weight = nan }]\n')
    write_cases(pytester, [case("a")])
    _refused(_run(pytester), "promptsuite.toml:2: checks[0].assert[0].weight = nan: not a finite number")


def test_reports_and_cassettes_kept_in_the_suite_folder_are_not_collected(pytester: pytest.Pytester) -> None:
    suite = pytester.path / "suite"
    suite.mkdir()
    (suite / "cases.jsonl").write_text(json.dumps(case("a", "x", metadata={"m": 1})) + "\n", encoding="utf-8")
    (suite / "rules.json").write_text('{"default": "x"}', encoding="utf-8")
    (suite / "promptsuite.toml").write_text('[model]\nspec = "fake:rules.json"\n', encoding="utf-8")
    first = pytester.runpytest("--prompt-suite", "suite", "--prompt-report", "suite/report",
                               "--prompt-record", "suite/cassette.jsonl")
    assert_clean(first)
    first.assert_outcomes(passed=1)
    assert (suite / "report" / "results.jsonl").is_file()

    second = pytester.runpytest("--prompt-suite", "suite", "--prompt-report", "suite/report")
    assert_clean(second)
    second.assert_outcomes(passed=1)  # not results.jsonl, review.jsonl or the cassette as cases
    assert main(["validate", str(suite)]) == 0
    named = pytester.runpytest("--prompt-suite", "suite/report/results.jsonl")
    _refused(named, "suite/report/results.jsonl:1: this is a results.jsonl of a pytest-promptsuite report, "
                    "not a case file")


# -- finding 9: tracebacks instead of path:line -------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'[model]\nspec = "fake"\n# caf\xe9\n', "promptsuite.toml:3: not valid UTF-8 (byte 0xe9 at column 6)"),
        (b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n",
         "promptsuite.toml:1: nested deeper than the depth limit of 64 levels"),
        (b'[[checks]]\nassert = [{ type = "levenshtein", value = "x", threshold = nan }]\n',
         "promptsuite.toml:2: checks[0].assert[0].threshold = nan: not a finite number"),
    ],
    ids=["not-utf8", "deep", "nan-levenshtein"],
)
def test_a_broken_config_is_a_usage_error_with_the_line(pytester: pytest.Pytester, data: bytes,
                                                        message: str) -> None:
    (pytester.path / "promptsuite.toml").write_bytes(data)
    write_cases(pytester, [case("a")])
    _refused(_run(pytester), message)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("schema.json", "[" * 1000 + "]" * 1000,
         "the schema file 'SCHEMA' is not JSON: nested deeper than the depth limit of 64 levels (line 1, column 65)"),
        ("schema.json", '{"$ref": "https://example.com/evil.json"}',
         "$ref 'https://example.com/evil.json' names another document, and schemas are never fetched"),
        ("schema.json", '{"type": "object", "type": "array"}',
         "is not JSON: duplicate key 'type': a key may appear once in an object (line 1, column 2 and line 1, "
         "column 20)"),
    ],
    ids=["deep-schema", "remote-ref", "duplicate-schema-key"],
)
def test_bad_schema_files_are_collection_errors(pytester: pytest.Pytester, name: str, text: str,
                                                message: str) -> None:
    (pytester.path / name).write_text(text, encoding="utf-8")
    write_cases(pytester, [case("a", **{"assert": [{"type": "is-json", "value": name}]})])
    _refused(_run(pytester), message.replace("SCHEMA", str(pytester.path / name)))


def test_deep_fake_rules_are_a_clear_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "rules.json").write_text('{"rules": ' + "[" * 1000 + "]" * 1000 + "}", "utf-8")
    write_cases(pytester, [case("a")])
    result = _run(pytester, "--prompt-model", "fake:rules.json")
    words = "rules.json:1: the fake model's rules are not valid JSON: nested deeper than the depth limit"
    assert words in output(result)


@pytest.mark.parametrize("variants", [False, True])
def test_an_unknown_variant_is_a_collection_error(pytester: pytest.Pytester, variants: bool) -> None:
    if variants:
        _config(pytester, '[variants.v1]\ntemplate = "{input}"\n')
    write_cases(pytester, [case("a")])
    result = _run(pytester, "--prompt-variant", "nope")
    words = "has no such variant" if variants else "has no [variants] table, so no such variant"
    _refused(result, f"--prompt-variant nope: {'promptsuite.toml' if variants else 'a case file'}")
    assert words in output(result)


def test_a_cassette_that_is_not_utf8_is_a_usage_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "cassette.jsonl").write_bytes(b'{"key": "k", "response": {"text": "caf\xe9"}}\n')
    write_cases(pytester, [case("a")])
    _refused(_run(pytester, "--prompt-replay", "cassette.jsonl"),
             "cassette.jsonl:1: not a cassette entry (not valid UTF-8 (byte 0xe9 at column 39)")


# -- finding 11: code in suites -----------------------------------------------------------------

MARKER_CHECK = """\
from pathlib import Path
Path({marker!r}).write_text("ran")
def f(output, case):
    return True
"""


def test_a_case_cannot_run_a_python_file_from_outside_the_suite(pytester: pytest.Pytester) -> None:
    marker = pytester.path.parent / "marker-outside.txt"
    evil = pytester.path.parent / "evil_check.py"
    evil.write_text(MARKER_CHECK.format(marker=str(marker)), encoding="utf-8")
    write_cases(pytester, [case("a", **{"assert": [{"type": "python", "value": f"file://{evil}:f"}]})])

    _refused(_run(pytester), f"'value' of 'python': {'file://' + str(evil)!r} is outside the suite's folder")
    assert main(["validate", str(pytester.path / "cases.jsonl")]) == 1
    assert not marker.exists()  # neither pytest nor validate imported it


def test_a_case_cannot_import_a_module_the_config_does_not_list(pytester: pytest.Pytester) -> None:
    write_cases(pytester, [case("a", **{"assert": [{"type": "python", "value": "antigravity:f"},
                                                   {"type": "pydantic", "value": "os:PathLike"}]})])
    result = _run(pytester)
    _refused(result, "'value' of 'python': module 'antigravity' is not in the suite config's [checks] "
                     "python_modules (listed: none)")
    assert "'value' of 'pydantic': module 'os' is not in the suite config's [checks] python_modules" in output(result)


def test_listed_modules_and_files_inside_the_suite_may_run(pytester: pytest.Pytester) -> None:
    package = pytester.path / "mychecks"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "polite.py").write_text("def f(output, case):\n    return 'hello' in output\n", "utf-8")
    (pytester.path / "local.py").write_text("def g(output, case):\n    return True\n", "utf-8")
    _config(pytester, '[checks]\npython_modules = ["mychecks"]\n[[checks.rules]]\nslice = "*"\n'
                      'assert = [{ type = "python", value = "mychecks.polite:f" }]\n')
    write_cases(pytester, [case("a", **{"assert": [{"type": "python", "value": "mychecks.polite:f"},
                                                   {"type": "python", "value": "file://local.py:g"}]})])
    pytester.syspathinsert()
    result = _run(pytester, "--prompt-report", "report")
    result.assert_outcomes(passed=1)
    [row] = rows(pytester)
    assert [c["passed"] for c in row["checks"]] == [True, True, True]


def test_the_readme_says_a_suite_can_run_code() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    assert "A suite can run code" in readme
    assert "python_modules" in readme
