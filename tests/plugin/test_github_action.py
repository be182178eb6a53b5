"""The action's steps end to end against the loopback GitHub server: fetch main's report, run the suite against
it, comment, comment again (one comment, updated); a fork and a read-only token are one line and exit 0; the
token is in no output and no file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_promptsuite.cli.main import main
from tests.github_api import REPO
from tests.github_api import TOKEN
from tests.github_api import GitHubServer
from tests.suite import Suite


CASES = [{"case_id": f"r-{i}", "input": f"refund {i}", "slice": "refund", "must_include": ["REFUND"]} for i in range(5)]


def _environ(github: GitHubServer, tmp: Path, monkeypatch: pytest.MonkeyPatch, head: str = REPO) -> None:
    event = {"pull_request": {"number": 12, "base": {"ref": "main"}, "head": {"repo": {"full_name": head}}}}
    (tmp / "event.json").write_text(json.dumps(event))
    more = {
        "GITHUB_EVENT_PATH": str(tmp / "event.json"),
        "GITHUB_WORKFLOW_REF": f"{REPO}/.github/workflows/prompts.yml@refs/pull/12/merge",
    }
    for name, value in github.environ(**more).items():
        monkeypatch.setenv(name, value)


def _step(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(list(args)) == 0
    return capsys.readouterr().out


def _zip_report(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8") for p in folder.rglob("*") if p.is_file()}


def test_the_steps_fetch_the_baseline_and_keep_one_comment_up_to_date(
    suite: Suite, github: GitHubServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    suite.cases(CASES)
    suite.write("rules.json", json.dumps({"rules": [{"match": "refund", "reply": "REFUND done"}]}))
    suite.run("--prompt-model", "fake:rules.json", "--prompt-report", "main-report")
    github.state.add_run("prompts.yml", "main", 41, _zip_report(suite.path / "main-report"))
    _environ(github, suite.path, monkeypatch)

    said = _step(capsys, "github", "baseline", "--out", "baseline")
    run_url = f"https://github.com/{REPO}/actions/runs/41"
    assert said == f"promptsuite: baseline: {run_url} (commit 000000000000 on main) in baseline\n"
    suite.write(
        "rules.json",
        json.dumps({"rules": [{"match": "refund [0-2]", "reply": "no"}, {"match": "refund", "reply": "REFUND"}]}),
    )
    suite.run("--prompt-model", "fake:rules.json", "--prompt-report", "report", "--prompt-baseline", "baseline")
    _step(capsys, "comment", "report", "--baseline", "baseline", "--out", "comment.md")
    assert "promptsuite: comment created on pull request #12" in _step(capsys, "github", "post", "comment.md")
    assert "promptsuite: comment updated on pull request #12" in _step(capsys, "github", "post", "comment.md")
    [comment] = github.state.comments[12]
    assert "promptsuite: regressed" in comment["body"] and "**Newly failing (3)**" in comment["body"]
    assert "Baseline: commit `000000000000`, on main," in comment["body"]
    for file in suite.path.rglob("*"):
        assert not file.is_file() or TOKEN.encode() not in file.read_bytes(), file


def test_a_pull_request_from_a_fork_is_one_line_and_no_call(
    tmp_path: Path, github: GitHubServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _environ(github, tmp_path, monkeypatch, head="someone/prompts")
    (tmp_path / "comment.md").write_text("<!-- promptsuite-comment -->\nbody")
    said = _step(capsys, "github", "post", str(tmp_path / "comment.md"))
    assert said.count("\n") == 1 and "a pull request from a fork runs with a read-only token" in said
    assert github.state.seen == []


def test_a_read_only_token_is_one_line_and_exit_0(
    tmp_path: Path, github: GitHubServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _environ(github, tmp_path, monkeypatch)
    github.state.read_only = True
    (tmp_path / "comment.md").write_text("<!-- promptsuite-comment -->\nbody")
    said = _step(capsys, "github", "post", str(tmp_path / "comment.md"))
    assert said.count("\n") == 1 and "GitHub refused it (HTTP 403)" in said and TOKEN not in said


def test_no_baseline_is_said_not_an_error(
    tmp_path: Path, github: GitHubServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _environ(github, tmp_path, monkeypatch)
    said = _step(capsys, "github", "baseline", "--out", str(tmp_path / "b"))
    assert "no baseline: none of the latest 10 successful runs of prompts.yml on main has an artifact" in said
    github.state.add_run("prompts.yml", "main", 1, {"../x": ""})
    said = _step(capsys, "github", "baseline", "--out", str(tmp_path / "b"))
    assert "no baseline: the baseline artifact holds '../x', a path outside its folder" in said
    assert not (tmp_path / "b").exists()


def test_without_a_token_or_a_pull_request_the_steps_say_so(
    tmp_path: Path, github: GitHubServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _environ(github, tmp_path, monkeypatch)
    monkeypatch.delenv("GITHUB_TOKEN")
    (tmp_path / "c.md").write_text("x")
    assert "no GITHUB_TOKEN" in _step(capsys, "github", "post", str(tmp_path / "c.md"))
    assert "no GITHUB_TOKEN" in _step(capsys, "github", "baseline", "--out", str(tmp_path / "b"))
    monkeypatch.delenv("GITHUB_EVENT_PATH")
    monkeypatch.delenv("GITHUB_WORKFLOW_REF")
    assert "not on a pull request" in _step(capsys, "github", "post", str(tmp_path / "c.md"))
    assert "names no base branch or workflow file" in _step(capsys, "github", "baseline", "--out", str(tmp_path / "b"))
    monkeypatch.delenv("GITHUB_REPOSITORY")
    capsys.readouterr()
    assert main(["github", "post", str(tmp_path / "c.md")]) == 1
    assert "GITHUB_REPOSITORY is not set" in capsys.readouterr().err


def test_another_refusal_and_an_unreadable_event_are_said(
    tmp_path: Path, github: GitHubServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _environ(github, tmp_path, monkeypatch)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_" + "n0tTheT0ken" * 3)
    (tmp_path / "c.md").write_text("<!-- promptsuite-comment -->\nbody")
    said = _step(capsys, "github", "post", str(tmp_path / "c.md"))
    assert "HTTP 401: Bad credentials; the gate decides the job" in said and "n0tTheT0ken" not in said
    (tmp_path / "event.json").write_text("{")
    capsys.readouterr()
    assert main(["github", "post", str(tmp_path / "c.md")]) == 1
    assert "event.json: cannot read the event" in capsys.readouterr().err
