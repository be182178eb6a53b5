"""Hostile and careless input files (findings 6, 8, 9, 11): each is a clear ``path:line`` error
(before collection for a config, at collection for a case file), never a traceback, a hang or a
silently wrong result; files and code come from inside the suite's folder only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_promptsuite.cli.main import main
from tests.hostile.support import BILLION_LAUGHS
from tests.hostile.support import assert_clean
from tests.hostile.support import case
from tests.hostile.support import output
from tests.suite import Suite


def _refused(result: pytest.RunResult, message: str) -> None:
    assert_clean(result)
    assert result.ret in (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERRUPTED), output(result)
    assert message in output(result), output(result)


# -- finding 6: YAML bombs ----------------------------------------------------------------------


def test_a_billion_laughs_prompts_file_is_refused_at_once(suite: Suite) -> None:
    suite.write("prompts.yml", BILLION_LAUGHS)
    suite.config({"template": {"task_prompts": "prompts.yml", "task": "x"}})
    suite.cases([case("a")])
    _refused(suite.run(), "prompts.yml:6: YAML aliases expand to more than the YAML alias expansion limit")


# -- finding 8: silent wrong results -----------------------------------------------------------


def test_a_link_leaving_a_listed_folder_is_refused_and_one_inside_is_followed(suite: Suite) -> None:
    folder, outside = suite.path / "suite", suite.path / "outside"
    suite.cases([case("a")], "suite/a.jsonl")
    suite.cases([case("b")], "outside/b.jsonl")
    suite.cases([case("c")], "suite/inner/c.jsonl")
    os.symlink(outside / "b.jsonl", folder / "link.jsonl")
    os.symlink(folder / "inner", folder / "alias")  # inside: followed (its case ids then repeat)
    result = suite.run("--collect-only", "-q", paths=["suite"])

    assert_clean(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    text = output(result)
    assert f"suite/link.jsonl: a link to {outside / 'b.jsonl'}, outside the suite's folder {folder}" in text
    assert "suite/inner/c.jsonl:1: duplicate case_id 'c' (first defined at suite/alias/c.jsonl:1)" in text
    assert main(["validate", str(folder)]) == 1


@pytest.mark.parametrize("value", ["-1", "5.0", "nan"])
def test_slice_thresholds_outside_0_to_1_are_refused(suite: Suite, value: str) -> None:
    suite.config(f'[thresholds.slices]\n"s" = {value}\n')
    suite.cases([case("a")])
    message = (
        "promptsuite.toml:2: thresholds.slices.s = nan: not a finite number"
        if value == "nan"
        else "promptsuite.toml:2: thresholds.slices.s: Input should be"
    )
    _refused(suite.run(), message)


def test_fake_rules_in_a_config_stay_in_the_suite_but_an_option_may_name_any(suite: Suite) -> None:
    suite.write("rules.json", '{"default": "ruled"}')
    suite.config({"model": {"spec": "fake:../rules.json"}}, "suite/promptsuite.toml")
    suite.cases([case("a")], "suite/cases.jsonl")
    _refused(suite.run(paths=["suite"]), "model.spec = 'fake:../rules.json' points outside the suite's folder")

    suite.config("[model]\n", "suite/promptsuite.toml")
    allowed = suite.run("--prompt-model", "fake:rules.json", "--prompt-report", "report", paths=["suite"])
    assert_clean(allowed)
    assert [row["output"] for row in suite.rows()] == ["ruled"]


@pytest.mark.parametrize("where", ["absolute", "parent"])
def test_a_schema_path_outside_the_suite_is_refused(suite: Suite, where: str) -> None:
    schema = suite.path.parent / f"schema-{where}.json"
    schema.write_text('{"type": "object"}', encoding="utf-8")
    value = str(schema) if where == "absolute" else f"../{schema.name}"
    suite.cases([case("a", **{"assert": [{"type": "is-json", "value": value}]})])
    _refused(
        suite.run(),
        f"cases.jsonl:1: case 'a': assert[0]: 'value' of 'is-json': {value!r} is outside the suite's folder",
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            '{"case_id": "a", "input": "x", "slice": "s", "must_not_include": ["sk-"], "must_not_include": []}',
            "cases.jsonl:1: duplicate key 'must_not_include': a key may appear once in an object (columns 46 and 75)",
        ),
        (
            '{"case_id": "a", "input": "x", "slice": "s", "assert": [{"type": "contains", "value": "y", '
            '"weight": NaN}]}',
            "cases.jsonl:1: invalid JSON: NaN is not a JSON number (JSON has no NaN or Infinity) (column 102)",
        ),
        (
            '{"case_id": "a", "input": [""], "slice": "s"}',
            "cases.jsonl:1: 'input[0]' is empty (every turn needs text, as 'input' does)",
        ),
        (
            '{"case_id": "a", "input": "x", "slice": "s", "vars": ' + "[" * 70 + "]" * 70 + "}",
            "cases.jsonl:1: nested deeper than the depth limit of 64 levels (column 117)",
        ),
    ],
    ids=["duplicate-key", "nan-weight", "empty-turn", "deep"],
)
def test_case_lines_that_would_be_silently_wrong_are_errors(suite: Suite, line: str, message: str) -> None:
    suite.cases(line + "\n")
    _refused(suite.run(), message)


def test_a_nan_weight_in_the_config_is_refused(suite: Suite) -> None:
    suite.config('[[checks]]\nassert = [{ type = "contains", value = "x", weight = nan }]\n')
    suite.cases([case("a")])
    _refused(suite.run(), "promptsuite.toml:2: checks[0].assert[0].weight = nan: not a finite number")


def test_reports_and_cassettes_kept_in_the_suite_folder_are_not_collected(suite: Suite) -> None:
    folder = suite.path / "suite"
    suite.cases([case("a", "x", metadata={"m": 1})], "suite/cases.jsonl")
    suite.write("suite/rules.json", '{"default": "x"}')
    suite.config({"model": {"spec": "fake:rules.json"}}, "suite/promptsuite.toml")
    first = suite.run("--prompt-report", "suite/report", "--prompt-record", "suite/cassette.jsonl", paths=["suite"])
    assert_clean(first)
    first.assert_outcomes(passed=1)
    assert (folder / "report" / "results.jsonl").is_file()

    second = suite.run("--prompt-report", "suite/report", paths=["suite"])
    assert_clean(second)
    second.assert_outcomes(passed=1)  # not results.jsonl, review.jsonl or the cassette as cases
    assert main(["validate", str(folder)]) == 0
    named = suite.run(paths=["suite/report/results.jsonl"])
    _refused(
        named, "suite/report/results.jsonl:1: this is a results.jsonl of a pytest-promptsuite report, not a case file"
    )


# -- finding 9: tracebacks instead of path:line -------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'[model]\nspec = "fake"\n# caf\xe9\n', "promptsuite.toml:3: not valid UTF-8 (byte 0xe9 at column 6)"),
        (
            b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n",
            "promptsuite.toml:1: nested deeper than the depth limit of 64 levels",
        ),
        (
            b'[[checks]]\nassert = [{ type = "levenshtein", value = "x", threshold = nan }]\n',
            "promptsuite.toml:2: checks[0].assert[0].threshold = nan: not a finite number",
        ),
    ],
    ids=["not-utf8", "deep", "nan-levenshtein"],
)
def test_a_broken_config_is_a_usage_error_with_the_line(suite: Suite, data: bytes, message: str) -> None:
    (suite.path / "promptsuite.toml").write_bytes(data)
    suite.cases([case("a")])
    _refused(suite.run(), message)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "schema.json",
            "[" * 1000 + "]" * 1000,
            "the schema file 'SCHEMA' is not JSON: nested deeper than the depth limit of 64 levels (line 1, column 65)",
        ),
        (
            "schema.json",
            '{"$ref": "https://example.com/evil.json"}',
            "$ref 'https://example.com/evil.json' names another document, and schemas are never fetched",
        ),
        (
            "schema.json",
            '{"type": "object", "type": "array"}',
            "is not JSON: duplicate key 'type': a key may appear once in an object (line 1, column 2 and line 1, "
            "column 20)",
        ),
    ],
    ids=["deep-schema", "remote-ref", "duplicate-schema-key"],
)
def test_bad_schema_files_are_collection_errors(suite: Suite, name: str, text: str, message: str) -> None:
    suite.write(name, text)
    suite.cases([case("a", **{"assert": [{"type": "is-json", "value": name}]})])
    _refused(suite.run(), message.replace("SCHEMA", str(suite.path / name)))


def test_deep_fake_rules_are_a_clear_error(suite: Suite) -> None:
    suite.write("rules.json", '{"rules": ' + "[" * 1000 + "]" * 1000 + "}")
    suite.cases([case("a")])
    result = suite.run("--prompt-model", "fake:rules.json")
    assert_clean(result)
    words = "rules.json:1: the fake model's rules are not valid JSON: nested deeper than the depth limit"
    assert words in output(result)


@pytest.mark.parametrize("variants", [False, True])
def test_an_unknown_variant_is_a_collection_error(suite: Suite, variants: bool) -> None:
    if variants:
        suite.config({"variants.v1": {"template": "{input}"}})
    suite.cases([case("a")])
    result = suite.run("--prompt-variant", "nope")
    words = "has no such variant" if variants else "has no [variants] table, so no such variant"
    _refused(result, f"--prompt-variant nope: {'promptsuite.toml' if variants else 'a case file'}")
    assert words in output(result)


def test_a_cassette_that_is_not_utf8_is_a_usage_error(suite: Suite) -> None:
    (suite.path / "cassette.jsonl").write_bytes(b'{"key": "k", "response": {"text": "caf\xe9"}}\n')
    suite.cases([case("a")])
    _refused(
        suite.run("--prompt-replay", "cassette.jsonl"),
        "cassette.jsonl:1: not a cassette entry (not valid UTF-8 (byte 0xe9 at column 39)",
    )


# -- finding 11: code in suites -----------------------------------------------------------------

MARKER_CHECK = """\
from pathlib import Path
Path({marker!r}).write_text("ran")
def f(output, case):
    return True
"""


def test_a_case_cannot_run_a_python_file_from_outside_the_suite(suite: Suite) -> None:
    marker = suite.path.parent / "marker-outside.txt"
    evil = suite.path.parent / "evil_check.py"
    evil.write_text(MARKER_CHECK.format(marker=str(marker)), encoding="utf-8")
    suite.cases([case("a", **{"assert": [{"type": "python", "value": f"file://{evil}:f"}]})])

    _refused(suite.run(), f"'value' of 'python': {'file://' + str(evil)!r} is outside the suite's folder")
    assert main(["validate", str(suite.path / "cases.jsonl")]) == 1
    assert not marker.exists()  # neither pytest nor validate imported it


def test_a_case_cannot_import_a_module_the_config_does_not_list(suite: Suite) -> None:
    suite.cases(
        [
            case(
                "a",
                **{
                    "assert": [
                        {"type": "python", "value": "antigravity:f"},
                        {"type": "pydantic", "value": "os:PathLike"},
                    ]
                },
            )
        ]
    )
    result = suite.run()
    _refused(
        result,
        "'value' of 'python': module 'antigravity' is not in the suite config's [checks] python_modules (listed: none)",
    )
    assert "'value' of 'pydantic': module 'os' is not in the suite config's [checks] python_modules" in output(result)


def test_listed_modules_and_files_inside_the_suite_may_run(suite: Suite) -> None:
    suite.write("mychecks/__init__.py", "")
    suite.write("mychecks/polite.py", "def f(output, case):\n    return 'hello' in output\n")
    suite.write("local.py", "def g(output, case):\n    return True\n")
    suite.config(
        '[checks]\npython_modules = ["mychecks"]\n[[checks.rules]]\nslice = "*"\n'
        'assert = [{ type = "python", value = "mychecks.polite:f" }]\n'
    )
    suite.cases(
        [
            case(
                "a",
                **{
                    "assert": [
                        {"type": "python", "value": "mychecks.polite:f"},
                        {"type": "python", "value": "file://local.py:g"},
                    ]
                },
            )
        ]
    )
    suite.pytester.syspathinsert()
    result = suite.run("--prompt-report", "report")
    assert_clean(result)
    result.assert_outcomes(passed=1)
    [row] = suite.rows()
    assert [c["passed"] for c in row["checks"]] == [True, True, True]


def test_the_readme_says_a_suite_can_run_code() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    assert "A suite can run code" in readme
    assert "python_modules" in readme
