"""Helpers of the hostile tests: cases, an endpoint config, and checks of what a run printed and wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.suite import Suite


#: The API key of the hostile tests: it must appear in no file and no output, ever.
SECRET = "sk-hostile-NEVER-WRITE-ME-5f2e8d41"

#: A YAML file whose aliases expand to 9 ** 9 strings (the "billion laughs" attack).
BILLION_LAUGHS = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
prompts: [{task: x, content: *i}]
"""


def case(case_id: str, text: str = "hello", **fields: Any) -> dict[str, Any]:
    """A case in slice ``s``."""
    return {"case_id": case_id, "input": text, "slice": "s", **fields}


def endpoint(base_url: str, **fields: Any) -> dict[str, dict[str, Any]]:
    """A config whose model is the loopback server at ``base_url``, ``fields`` added. Its timeout is long: the
    tests that count requests must not see a retry because a loaded machine answered a call late."""
    return {"model": {"spec": "openai:loop", "base_url": base_url, "timeout_s": 60, **fields}}


def output(result: pytest.RunResult) -> str:
    """Everything the run printed."""
    return result.stdout.str() + "\n" + result.stderr.str()


def assert_clean(result: pytest.RunResult) -> None:
    """No traceback and no internal error in what the run printed."""
    text = output(result)
    assert "Traceback" not in text, text
    assert "INTERNALERROR" not in text, text


def assert_reports_agree(suite: Suite, result: pytest.RunResult, report: str = "report") -> None:
    """summary.json, summary.md and the exit status tell the same verdict."""
    passed = suite.summary(report)["gate"]["passed"]
    markdown = (suite.path / report / "summary.md").read_text(encoding="utf-8")
    assert ("promptsuite gate: PASSED" in markdown) == passed
    assert (result.ret == 0) == passed, (result.ret, passed)


def assert_secret_nowhere(
    root: Path, result: pytest.RunResult | None = None, secret: str = SECRET, written_by_user: tuple[str, ...] = ()
) -> int:
    """The secret is in no file under ``root`` (but those the user wrote it into) and not in
    the run's output; returns how many files were searched (so a test can check it searched)."""
    files = [path for path in root.rglob("*") if path.is_file() and path.name not in written_by_user]
    for path in files:
        assert secret.encode() not in path.read_bytes(), path
    if result is not None:
        assert secret not in output(result)
    return len(files)
