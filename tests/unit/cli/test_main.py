"""The ``promptsuite`` command, called through ``main`` (no pytest inside it)."""

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
    assert capsys.readouterr().out == "ok: 2 cases in 2 slices (s, t)\n"


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
    assert "no case with id zz" in capsys.readouterr().err


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
