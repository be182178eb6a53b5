"""The GitLab recipe of docs/guides/ci.md, its script run by bash as a GitLab job runs it, against a loopback
server speaking the GitLab endpoints it calls: main's artifact is the baseline, the merge request gets one
note, updated on the next push, and the job's status is the gate's."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
import yaml
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.responses import Response
from starlette.routing import Route

from tests.github_api import serve_app
from tests.suite import Suite


DOCS = Path(__file__).resolve().parents[2] / "docs" / "guides" / "ci.md"
TOKEN = "glpat-" + "L00pbackT0ken" * 2
CASES = [{"case_id": f"r-{i}", "input": f"refund {i}", "slice": "refund", "must_include": ["REFUND"]} for i in range(5)]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not all(map(shutil.which, ("curl", "jq", "unzip"))), reason="needs curl, jq and unzip"),
]


def _script() -> str:
    """Return the recipe's script as the docs show it."""
    text = DOCS.read_text(encoding="utf-8")
    block = text[text.index("prompt-suite:\n  image: python") :]
    return str(yaml.safe_load(block[: block.index("```")])["prompt-suite"]["script"][0])


async def _body(request: Request) -> str:
    """Return the ``body`` of a form-encoded request (as curl's ``--data-urlencode`` sends it)."""
    return parse_qs((await request.body()).decode("utf-8"))["body"][0]


def _gitlab(notes: list[dict[str, Any]], artifact: bytes, seen: list[str]) -> Starlette:
    async def download(request: Request) -> Response:
        seen.append(f"artifact {request.path_params['ref']} {request.query_params['job']}")
        if request.headers.get("job-token") != "job-token":
            return JSONResponse({"message": "401 Unauthorized"}, status_code=401)
        return Response(artifact, media_type="application/zip")

    async def mr_notes(request: Request) -> Response:
        if request.headers.get("private-token") != TOKEN:
            return JSONResponse({"message": "401 Unauthorized"}, status_code=401)
        if request.method == "POST":
            note = {"id": len(notes) + 1, "body": await _body(request)}
            notes.append(note)
            return JSONResponse(note, status_code=201)
        return JSONResponse(notes)

    async def note(request: Request) -> Response:
        if request.headers.get("private-token") != TOKEN:
            return JSONResponse({"message": "401 Unauthorized"}, status_code=401)
        found = next(n for n in notes if n["id"] == int(request.path_params["id"]))
        found["body"] = await _body(request)
        return JSONResponse(found)

    base = "/api/v4/projects/{project}"
    return Starlette(
        routes=[
            Route(base + "/jobs/artifacts/{ref}/download", download),
            Route(base + "/merge_requests/{iid:int}/notes", mr_notes, methods=["GET", "POST"]),
            Route(base + "/merge_requests/{iid:int}/notes/{id:int}", note, methods=["PUT"]),
        ]
    )


def _zip(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for file in folder.rglob("*"):
            archive.write(file, "report/" + file.relative_to(folder).as_posix())
    return buffer.getvalue()


def test_the_gitlab_recipe_notes_the_merge_request_once_and_gates(suite: Suite) -> None:
    suite.cases(CASES, name="tests/prompts/cases.jsonl")
    suite.write("tests/prompts/promptsuite.toml", '[model]\nspec = "fake:rules.json"\n')
    suite.write("tests/prompts/rules.json", json.dumps({"rules": [{"match": "refund", "reply": "REFUND done"}]}))
    suite.run("--prompt-report", "main-report", paths=["tests/prompts"])
    notes: list[dict[str, Any]] = [{"id": 1, "body": "LGTM"}]
    seen: list[str] = []
    with serve_app(_gitlab(notes, _zip(suite.path / "main-report"), seen), "loopback-gitlab") as url:
        environ = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "CI_API_V4_URL": f"{url}/api/v4",
            "CI_PROJECT_ID": "42",
            "CI_MERGE_REQUEST_IID": "7",
            "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
            "CI_JOB_NAME": "prompt-suite",
            "CI_JOB_TOKEN": "job-token",
            "PROMPTSUITE_TOKEN": TOKEN,
        }
        worse = {"rules": [{"match": "refund [0-2]", "reply": "no"}, {"match": "refund", "reply": "REFUND"}]}
        statuses = []
        for rules in (worse, {"rules": [{"match": "refund", "reply": "REFUND done"}]}):
            suite.write("tests/prompts/rules.json", json.dumps(rules))
            done = subprocess.run(
                ["bash", "-eo", "pipefail", "-c", _script()],
                cwd=suite.path,
                env=environ,
                capture_output=True,
                text=True,
            )
            statuses.append(done.returncode)
            assert TOKEN not in done.stdout + done.stderr
    assert statuses == [1, 0]  # the drop fails the job; the fix passes it
    assert seen == ["artifact main prompt-suite"] * 2
    assert [n["body"].split("\n")[0] for n in notes] == ["LGTM", "<!-- promptsuite-comment -->"]
    assert "### ✅ promptsuite: passed" in notes[1]["body"] and "Baseline: commit and age unknown." in notes[1]["body"]
