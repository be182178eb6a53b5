"""Helpers of the hostile tests: write a suite, run it, and read back everything it wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


#: The API key of the hostile tests: it must appear in no file and no output, ever.
SECRET = "sk-hostile-NEVER-WRITE-ME-5f2e8d41"


def write_cases(pytester: pytest.Pytester, rows: list[dict[str, Any]], name: str = "cases") -> Path:
    """A case file of ``rows`` (one JSON object a line, written as UTF-8 text)."""
    text = "\n".join(json.dumps(row, ensure_ascii=False) for row in rows) + "\n"
    path = pytester.path / f"{name}.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def case(case_id: str, text: str = "hello", **fields: Any) -> dict[str, Any]:
    """A case in slice ``s``."""
    return {"case_id": case_id, "input": text, "slice": "s", **fields}


def endpoint_config(pytester: pytest.Pytester, base_url: str, *extra: str) -> None:
    """A ``promptsuite.toml`` whose model is the loopback server (fast retries, short timeout)."""
    lines = ["[model]", 'spec = "openai:loop"', f'base_url = "{base_url}"', "timeout_s = 2", *extra]
    (pytester.path / "promptsuite.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def rows(pytester: pytest.Pytester, report: str = "report") -> list[dict[str, Any]]:
    """The rows of a report's ``results.jsonl``, split on ``\\n`` only."""
    data = (pytester.path / report / "results.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in data.split("\n") if line.strip()]


def summary(pytester: pytest.Pytester, report: str = "report") -> dict[str, Any]:
    """A report's ``summary.json``."""
    data: dict[str, Any] = json.loads((pytester.path / report / "summary.json").read_text(encoding="utf-8"))
    return data


def output(result: pytest.RunResult) -> str:
    """Everything the run printed."""
    return result.stdout.str() + "\n" + result.stderr.str()


def assert_clean(result: pytest.RunResult) -> None:
    """No traceback and no internal error in what the run printed."""
    text = output(result)
    assert "Traceback" not in text, text
    assert "INTERNALERROR" not in text, text


def assert_reports_agree(pytester: pytest.Pytester, result: pytest.RunResult, report: str = "report") -> None:
    """summary.json, summary.md and the exit status tell the same verdict."""
    passed = summary(pytester, report)["gate"]["passed"]
    markdown = (pytester.path / report / "summary.md").read_text(encoding="utf-8")
    assert ("promptsuite gate: PASSED" in markdown) == passed
    assert (result.ret == 0) == passed, (result.ret, passed)


def assert_secret_nowhere(root: Path, result: pytest.RunResult | None = None, secret: str = SECRET,
                          written_by_user: tuple[str, ...] = ()) -> int:
    """The secret is in no file under ``root`` (but those the user wrote it into) and not in
    the run's output; returns how many files were searched (so a test can check it searched)."""
    files = [path for path in root.rglob("*") if path.is_file() and path.name not in written_by_user]
    for path in files:
        assert secret.encode() not in path.read_bytes(), path
    if result is not None:
        assert secret not in output(result)
    return len(files)
