"""``promptsuite render --format text``: each prompt as it will be sent, messages under their
roles, no escapes; checked against the expected text of the example suites in
``tests/test_render_text/`` (regenerate with ``promptsuite render --prompt-suite
example_suites/NAME --format text > tests/test_render_text/NAME.txt`` when a change is meant)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_promptsuite.cli.main import main


ROOT = Path(__file__).parents[1]
EXPECTED = Path(__file__).with_suffix("")


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


def _suite(folder: Path, template: str, cases: str) -> None:
    (folder / "promptsuite.toml").write_text(template, encoding="utf-8")
    (folder / "cases.jsonl").write_text(cases, encoding="utf-8")


def test_render_jsonl_is_one_object_a_line_with_case_variant_prompt_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _suite(
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
    _suite(
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
    _suite(
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
    _suite(
        tmp_path,
        '[template]\ntemplate_file = "p.j2"\nrenderer = "jinja"\n',
        '{"case_id": "c", "input": "hi", "slice": "s"}\n',
    )
    assert main(["render", "--prompt-suite", ".", "--format", "jsonl"]) == 0
    assert json.loads(capsys.readouterr().out)["prompt"] == "HI!"
    assert main(["validate", "."]) == 0
