"""action.yml's own scripts run in order by bash, as a runner runs a composite action's steps (its ``uses:``
steps and the pip install left out), against the loopback GitHub server: the job's status is the gate's, the
comment is created and then updated, the job summary is written, the token shows nowhere."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.github_api import REPO
from tests.github_api import TOKEN
from tests.github_api import GitHubServer
from tests.suite import Suite


ACTION = Path(__file__).resolve().parents[2] / "action.yml"
CASES = [{"case_id": f"r-{i}", "input": f"refund {i}", "slice": "refund", "must_include": ["REFUND"]} for i in range(5)]
GOOD = {"rules": [{"match": "refund", "reply": "REFUND done"}]}
WORSE = {"rules": [{"match": "refund [0-2]", "reply": "no"}, {"match": "refund", "reply": "REFUND"}]}
_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


class Job:
    """One run of the action's steps: its inputs, the runner's files and the steps' outputs."""

    def __init__(self, workdir: Path, github: GitHubServer, inputs: dict[str, str]) -> None:
        self.workdir = workdir
        self.temp = workdir / "runner-temp"
        self.temp.mkdir(exist_ok=True)
        action = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
        defaults = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
        self.inputs = {**defaults, "token": TOKEN, **inputs}
        self.steps: list[dict[str, Any]] = action["runs"]["steps"]
        self.outputs: dict[str, dict[str, str]] = {}
        self.summary = workdir / "step-summary.md"
        event = {"pull_request": {"number": 5, "base": {"ref": "main"}, "head": {"repo": {"full_name": REPO}}}}
        (workdir / "event.json").write_text(json.dumps(event))
        self.environ = {
            **os.environ,
            **github.environ(),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "RUNNER_TEMP": str(self.temp),
            "GITHUB_STEP_SUMMARY": str(self.summary),
            "GITHUB_EVENT_PATH": str(workdir / "event.json"),
            "GITHUB_WORKFLOW_REF": f"{REPO}/.github/workflows/prompts.yml@refs/pull/5/merge",
        }
        self.environ.pop("GITHUB_TOKEN")  # only the steps that are given the token have it

    def _value(self, expression: str) -> str:
        """Return what the runner puts for one expression of the action's steps."""
        if expression.startswith("inputs."):
            return self.inputs[expression.removeprefix("inputs.")]
        if expression.startswith("steps."):
            _, step, _, name = expression.split(".")
            return self.outputs.get(step, {}).get(name, "")
        return {"github.action_path": str(ACTION.parent), "runner.temp": str(self.temp)}[expression]

    def _expand(self, text: str) -> str:
        return _EXPRESSION.sub(lambda m: self._value(m.group(1)), text)

    def _wanted(self, step: dict[str, Any], failed: bool) -> bool:
        """Tell whether a step runs: with no ``if``, only while no step failed (the runner's ``success()``)."""
        if "run" not in step or step.get("name") == "Install pytest-promptsuite":
            return False
        condition = str(step.get("if", "success()")).replace("always() && ", "")
        if condition in ("always()", "success()"):
            return condition == "always()" or not failed
        match = re.fullmatch(r"inputs\.([\w-]+) == '(.*)'", condition)
        assert match is not None, f"a condition this runner does not know: {condition}"
        return self.inputs[match[1]] == match[2]

    def run(self) -> int:
        """Run the script steps (each in bash as a runner does); return the job's status: 1 when a step failed."""
        failed = False
        for step in self.steps:
            if not self._wanted(step, failed):
                continue
            output = self.temp / "output.txt"
            output.write_text("")
            env = {**self.environ, "GITHUB_OUTPUT": str(output)}
            env.update({k: self._expand(str(v)) for k, v in (step.get("env") or {}).items()})
            done = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", self._expand(step["run"])],
                cwd=self.workdir,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            self.log = getattr(self, "log", "") + done.stdout + done.stderr
            if "id" in step:
                self.outputs[step["id"]] = dict(line.split("=", 1) for line in output.read_text().splitlines())
            failed = failed or done.returncode != 0
        return int(failed)


@pytest.mark.slow
def test_the_actions_steps_gate_the_job_and_keep_one_comment(
    suite: Suite, github: GitHubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.cases(CASES)
    suite.write("rules.json", json.dumps(GOOD))
    suite.run("--prompt-model", "fake:rules.json", "--prompt-report", "main-report")
    files = {
        p.relative_to(suite.path / "main-report").as_posix(): p.read_text()
        for p in (suite.path / "main-report").iterdir()
    }
    github.state.add_run("prompts.yml", "main", 8, files)
    suite.write("rules.json", json.dumps(WORSE))
    inputs = {"suite": "cases.jsonl", "args": "--prompt-model fake:rules.json -p no:cacheprovider -q"}

    first = Job(suite.path, github, inputs)
    assert first.run() == 1, first.log  # the gate failed: a real drop
    assert first.outputs["suite"] == {"baseline": "true", "status": "1"}
    assert "promptsuite: comment created on pull request #5" in first.log
    assert "promptsuite gate: FAILED" in first.summary.read_text(encoding="utf-8")
    suite.write("rules.json", json.dumps(GOOD))
    second = Job(suite.path, github, inputs)
    assert second.run() == 0, second.log  # the pull request's next push: fixed
    assert "promptsuite: comment updated on pull request #5" in second.log
    [comment] = github.state.comments[5]
    assert comment["body"].startswith("<!-- promptsuite-comment:promptsuite-report -->\n### ✅ promptsuite: passed")
    assert TOKEN not in first.log + second.log
    for file in suite.path.rglob("*"):
        assert not file.is_file() or TOKEN.encode() not in file.read_bytes(), file


@pytest.mark.slow
def test_without_a_baseline_or_a_comment_the_job_is_still_the_gates(suite: Suite, github: GitHubServer) -> None:
    suite.cases(CASES)
    suite.write("rules.json", json.dumps(WORSE))
    job = Job(
        suite.path, github, {"suite": "cases.jsonl", "args": "--prompt-model fake:rules.json", "comment": "false"}
    )
    assert job.run() == 1, job.log
    assert job.outputs["suite"] == {"baseline": "false", "status": "1"}
    assert "promptsuite: no baseline: none of the latest 10 successful runs of prompts.yml on main" in job.log
    assert github.state.comments == {}
