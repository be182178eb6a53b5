"""The ``promptsuite`` command, called through ``main`` (no pytest inside it): validate, render, schema.

``render --format text`` shows each prompt as it will be sent, messages under their roles, no escapes;
checked against the expected text of the example suites in ``tests/unit/cli/test_main/`` (regenerate with
``promptsuite render --prompt-suite example_suites/NAME --format text > tests/unit/cli/test_main/NAME.txt``
when a change is meant)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.cases.case_schema import json_schema as case_schema
from pytest_promptsuite.cli.main import main
from pytest_promptsuite.config.suite import json_schema as config_schema


def _suite(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def test_validate_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _suite(
        tmp_path, '{"case_id": "a", "input": "x", "slice": "s"}\n{"case_id": "b", "input": "y", "slice": "t"}\n'
    )
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out == "ok: 2 cases in 2 slices (s, t), 2 items (1 variant x 1 repeat)\n"


def test_validate_counts_the_items_of_every_variant_and_repeat(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _suite(
        tmp_path, '{"case_id": "a", "input": "x", "slice": "s"}\n{"case_id": "b", "input": "y", "slice": "t"}\n'
    )
    (tmp_path / "promptsuite.toml").write_text(
        '[variants.v1]\ntemplate = "A: {input}"\n[variants.v2]\ntemplate = "B: {input}"\n', encoding="utf-8"
    )
    assert main(["validate", str(path), "--prompt-repeat", "3"]) == 0
    assert capsys.readouterr().out == "ok: 2 cases in 2 slices (s, t), 12 items (2 variants x 3 repeats)\n"


def test_validate_reports_every_problem_of_every_stage_in_one_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines, checks, template fields, tools and renders: each stage goes on with what is good so far."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "promptsuite.toml").write_text('[template]\ntemplate = "Q: {product}"\n', encoding="utf-8")
    tool = {"type": "function", "function": {"name": "nope"}}
    cases = [
        {"case_id": "a", "input": "x", "slice": "s", "vars": {"product": "p"}},
        {"case_id": "b", "input": "y", "slice": "s", "must_inlcude": ["y"]},
        {"case_id": "c", "input": "z", "slice": "t", "assert": [{"type": "regexx", "value": "z"}]},
        {"case_id": "d", "input": "z", "slice": "t"},
        {"case_id": "e", "input": "z", "slice": "t", "vars": {"product": "p"}, "tool_choice": tool},
    ]
    _suite(tmp_path, "".join(json.dumps(case) + "\n" for case in cases))
    assert main(["validate", "cases.jsonl"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "cases.jsonl:2: unknown key 'must_inlcude' (did you mean 'must_include'?)"
    assert err[1].startswith("cases.jsonl:3: case 'c': assert[0]: unknown check type 'regexx' (did you mean 'regex'?)")
    assert err[2].startswith("promptsuite.toml:2: template.template reads the field 'product', which 2 of 4 cases")
    assert err[3] == "cases.jsonl:5: case 'e': 'tool_choice' names the tool 'nope', which is not defined"
    assert err[4:] == ["4 problems found"]


def test_validate_reports_render_failures_with_the_lines_of_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = '[template]\nrenderer = "jinja"\ntemplate = "Q: {{ input + 1 }}"\n'
    (tmp_path / "promptsuite.toml").write_text(config, encoding="utf-8")
    _suite(tmp_path, '{"case_id": "a", "input": "x", "slice": "s"}\n{"case_id": "b", "slice": "s"}\n')
    assert main(["validate", "cases.jsonl"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "cases.jsonl:2: missing required field 'input'",
        'cases.jsonl:1: a: template: TypeError: can only concatenate str (not "int") to str',
        "2 problems found",
    ]


def test_validate_reads_the_lines_of_a_suite_whose_config_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "promptsuite.toml").write_text('[model]\nspek = "fake"\nmax_retriez = 2\n', encoding="utf-8")
    _suite(tmp_path, '{"case_id": "a", "input": "x", "slice": "s"}\n{"case_id": "b", "input": "y"}\n')
    assert main(["validate", "cases.jsonl"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("promptsuite.toml:2: unknown key 'model.spek'")
    assert err[1].startswith("promptsuite.toml:3: unknown key 'model.max_retriez'")
    assert err[2:] == ["cases.jsonl:2: missing required field 'slice'", "3 problems found"]


def test_validate_reports_every_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _suite(
        tmp_path, '{"case_id": "a", "input": "x"}\n{"case_id": "a", "input": "x", "slice": "s", "tagz": []}\n'
    )
    assert main(["validate", str(path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"{path}:1: missing required field 'slice'",
        f"{path}:2: unknown key 'tagz' (did you mean 'tags'?)",
        "2 problems found",
    ]


NO_JUDGE = "no judge model: configure [models.judge] in the suite config or pass --prompt-judge SPEC"
RUBRIC_CASES = (
    '{"case_id": "a", "input": "x", "slice": "s", "assert": [{"type": "llm-rubric", "value": "polite"}]}\n'
    '{"case_id": "b", "input": "x", "slice": "s"}\n'
    '{"case_id": "c", "input": "x", "slice": "s", "assert": [{"type": "assert-set", "assert": '
    '[{"type": "contains", "value": "x"}, {"type": "not-llm-rubric", "value": "rude"}]}]}\n'
)


def test_validate_stops_at_a_rubric_check_with_no_judge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _suite(tmp_path, RUBRIC_CASES)
    assert main(["validate", str(path)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{path}:1: case 'a': assert[0] (llm-rubric): {NO_JUDGE}",
        f"{path}:3: case 'c': assert[0].assert[1] (not-llm-rubric): {NO_JUDGE}",
        "2 problems found",
    ]


def test_validate_passes_a_rubric_check_with_a_judge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _suite(tmp_path, RUBRIC_CASES)
    (tmp_path / "promptsuite.toml").write_text('[suite]\ncases = ["cases.jsonl"]\n[models.judge]\nspec = "fake"\n')
    assert main(["validate", str(tmp_path / "promptsuite.toml")]) == 0
    assert capsys.readouterr().out.startswith("ok: 3 cases")


def test_validate_stops_at_a_suite_rubric_check_with_no_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _suite(tmp_path, '{"case_id": "a", "input": "x", "slice": "s"}\n')
    (tmp_path / "promptsuite.toml").write_text(
        '[suite]\ncases = ["cases.jsonl"]\n[[checks]]\nassert = [{ type = "llm-rubric", value = "polite" }]\n'
    )
    assert main(["validate", str(tmp_path / "promptsuite.toml")]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{path}:1: case 'a': [[checks]][0].assert[0] (llm-rubric): {NO_JUDGE}",
        "1 problem found",
    ]


def test_validate_example_suite(capsys: pytest.CaptureFixture[str]) -> None:
    example = Path(__file__).parents[3] / "example_suites" / "customer_support"
    assert main(["validate", str(example)]) == 0
    assert capsys.readouterr().out.startswith("ok: 35 cases in 5 slices")


def test_validate_missing_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "nope.jsonl"]) == 1
    assert "nope.jsonl: no such file or folder" in capsys.readouterr().err


def test_render_shows_each_case_prompt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _suite(
        tmp_path, '{"case_id": "a", "input": "x", "slice": "s"}\n{"case_id": "b", "input": "y", "slice": "s"}\n'
    )
    assert main(["render", "--prompt-suite", str(path), "--case-id", "b"]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert json.loads(line)["case_id"] == "b"


def test_render_unknown_case_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _suite(tmp_path, '{"case_id": "a", "input": "x", "slice": "s"}\n')
    assert main(["render", "--prompt-suite", str(path), "--case-id", "zz"]) == 1
    assert capsys.readouterr().err == "no case with id 'zz'; the nearest of the 1 ids: a\n"


def test_render_unknown_case_id_names_the_near_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [f'{{"case_id": "{i}", "input": "x", "slice": "s"}}\n' for i in ("missing-001", "order-001", "order-002")]
    path = _suite(tmp_path, "".join(lines))
    assert main(["render", "--prompt-suite", str(path), "--case-id", "refund-001", "--case-id", "order-01"]) == 1
    assert capsys.readouterr().err.splitlines(keepends=True) == [
        "no case with id 'order-01' (did you mean 'order-001'?)\n",
        "no case with id 'refund-001'; the nearest of the 3 ids: order-001, order-002, missing-001\n",
    ]


def test_the_command_never_imports_pytest(tmp_path: Path) -> None:
    """``promptsuite`` loads our hooks (built-ins and installed plugins) through pluggy alone."""
    path = _suite(tmp_path, '{"case_id": "a", "input": "x", "slice": "s", "assert": [{"type": "is-json"}]}\n')
    code = (
        "import sys; from pytest_promptsuite.cli.main import main; "
        f"status = main(['validate', {str(path)!r}]); "
        "print(status, 'pytest' in sys.modules, '_pytest' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert done.stdout.splitlines()[-1] == "0 False False"


@pytest.mark.parametrize(("what", "made"), [("config", config_schema), ("case", case_schema)])
def test_the_command_prints_the_schema(what: str, made: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", what]) == 0
    assert json.loads(capsys.readouterr().out) == made()


def test_cli_request_not_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    request = tmp_path / "request.json"
    request.write_text("{not json", encoding="utf-8")
    assert main(["render", "--request", str(request)]) == 1
    answer = json.loads(capsys.readouterr().out)
    assert answer["error"]["type"] == "TemplateError"
    assert "not valid JSON" in answer["error"]["message"]


def test_cli_request_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "--request", str(tmp_path / "nope.json")]) == 1
    answer = json.loads(capsys.readouterr().out)
    assert "nope.json" in answer["error"]["message"]


ROOT = Path(__file__).parents[3]
EXPECTED = Path(__file__).with_suffix("")


def _template_suite(folder: Path, template: str, cases: str) -> None:
    (folder / "promptsuite.toml").write_text(template, encoding="utf-8")
    (folder / "cases.jsonl").write_text(cases, encoding="utf-8")


@pytest.mark.parametrize("suite", sorted(p.stem for p in EXPECTED.glob("*.txt")))
def test_render_text_of_the_example_suites(
    suite: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    assert main(["render", "--prompt-suite", f"example_suites/{suite}", "--format", "text"]) == 0
    assert capsys.readouterr().out == (EXPECTED / f"{suite}.txt").read_text(encoding="utf-8")


def test_the_expected_texts_cover_every_example_suite() -> None:
    suites = {p.name for p in (ROOT / "example_suites").iterdir() if (p / "promptsuite.toml").is_file()}
    assert suites == {p.stem for p in EXPECTED.glob("*.txt")}


def test_render_jsonl_is_one_object_a_line_with_case_variant_prompt_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _template_suite(
        tmp_path,
        '[template]\ntemplate = "Say: {input}"\n[variants.a]\n[variants.b]\ntemplate = "B {input}"\n',
        '{"case_id": "c", "input": "hi\\nthere", "slice": "s"}\n',
    )
    assert main(["render", "--prompt-suite", ".", "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows == [
        {"case_id": "c", "variant": "a", "prompt": "Say: hi\nthere", "error": None},
        {"case_id": "c", "variant": "b", "prompt": "B hi\nthere", "error": None},
    ]


def test_render_text_shows_newlines_and_roles_without_escapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prompts.yml").write_text(
        "prompts:\n  - task: t\n    messages:\n      - type: system\n        content: 'Be brief.'\n"
        "      - type: user\n        content: '{{ input }}'\n",
        encoding="utf-8",
    )
    _template_suite(
        tmp_path,
        '[template]\ntask_prompts = "prompts.yml"\ntask = "t"\n',
        '{"case_id": "c", "input": "line one\\nline \\"two\\"", "slice": "s"}\n',
    )
    assert main(["render", "--prompt-suite", "."]) == 0  # not a terminal: JSON lines by default
    assert json.loads(capsys.readouterr().out)["prompt"][1]["content"] == 'line one\nline "two"'
    assert main(["render", "--prompt-suite", ".", "--format", "text"]) == 0
    assert capsys.readouterr().out == (
        '=== cases.jsonl:1: c [s] ===\n[system]\nBe brief.\n[user]\nline one\nline "two"\n\n'
    )


def test_render_exits_1_when_a_case_fails_to_render(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure that only shows when the case renders (here a sandbox limit) is that case's
    error: render prints it and exits 1; the other cases still render."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.j2").write_text("{% for i in range(n) %}x{% endfor %}", encoding="utf-8")
    _template_suite(
        tmp_path,
        '[template]\ntemplate_file = "p.j2"\nrenderer = "jinja"\n',
        '{"case_id": "ok", "input": "hi", "slice": "s", "vars": {"n": 2}}\n'
        '{"case_id": "huge", "input": "hi", "slice": "s", "vars": {"n": 100000000000}}\n',
    )
    assert main(["render", "--prompt-suite", ".", "--format", "jsonl"]) == 1
    rows = {r["case_id"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert rows["ok"]["prompt"] == "xx" and rows["ok"]["error"] is None
    assert rows["huge"]["prompt"] is None and "sandbox" in rows["huge"]["error"]


def test_render_uses_the_conftest_filters_pytest_uses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "conftest.py").write_text(
        "def pytest_promptsuite_make_jinja_filter(name):\n"
        "    if name == 'shout':\n        return lambda value: str(value).upper() + '!'\n",
        encoding="utf-8",
    )
    (tmp_path / "p.j2").write_text("{{ input | shout }}", encoding="utf-8")
    _template_suite(
        tmp_path,
        '[template]\ntemplate_file = "p.j2"\nrenderer = "jinja"\n',
        '{"case_id": "c", "input": "hi", "slice": "s"}\n',
    )
    assert main(["render", "--prompt-suite", ".", "--format", "jsonl"]) == 0
    assert json.loads(capsys.readouterr().out)["prompt"] == "HI!"
    assert main(["validate", "."]) == 0


def test_validate_names_a_misspelled_threshold_slice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _suite(
        tmp_path, '{"case_id": "a", "input": "x", "slice": "injection"}\n{"case_id": "b", "input": "y", "slice": "t"}\n'
    )
    (tmp_path / "promptsuite.toml").write_text("[thresholds.slices]\nt = 0.9\ninjecton = 1.0\n", encoding="utf-8")
    assert main(["validate", str(tmp_path)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{tmp_path / 'promptsuite.toml'}:3: [thresholds.slices] 'injecton' matches no case's slice "
        "(did you mean 'injection'?); the slices: injection, t",
        "1 problem found",
    ]


@pytest.mark.parametrize("target", [".", "promptsuite.toml"], ids=["folder", "config"])
def test_validate_reads_the_case_files_of_a_folder_whose_config_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "promptsuite.toml").write_text('[model]\nspek = "fake"\n', encoding="utf-8")
    _suite(tmp_path, '{"case_id": "a", "input": "x"}\n')
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "summary.json").write_text("{}", encoding="utf-8")
    (tmp_path / "report" / "results.jsonl").write_text('{"not": "a case"}\n', encoding="utf-8")  # a report's
    assert main(["validate", target]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("promptsuite.toml:2: unknown key 'model.spek'")
    lines = ["cases.jsonl:1: missing required field 'slice'"] if target == "." else []
    assert err[1:] == [*lines, f"{1 + len(lines)} problems found" if lines else "1 problem found"]
