"""``promptsuite github baseline`` and ``promptsuite github comment``: the action's steps that talk to GitHub,
each saying what it did in one line and never failing the job (the gate decides it)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from pytest_promptsuite.errors import PromptSuiteError
from pytest_promptsuite.github.baseline_artifact import Wanted
from pytest_promptsuite.github.baseline_artifact import fetch_baseline
from pytest_promptsuite.github.job_context import JobContext
from pytest_promptsuite.github.rest import GitHubClient
from pytest_promptsuite.github.rest import GitHubError
from pytest_promptsuite.github.rest import read_token
from pytest_promptsuite.github.sticky import post_sticky
from pytest_promptsuite.safety.scrub import printable


_FORK = (
    "promptsuite: no comment: a pull request from a fork runs with a read-only token (the job summary and the "
    "report artifact have the results); the gate decides the job"
)


def _say(out: TextIO, line: str) -> int:
    """Print one line, scrubbed; return 0 (these steps never fail the job)."""
    print(printable(line), file=out)
    return 0


def _client(context: JobContext, environ: Mapping[str, str]) -> GitHubClient | None:
    token = read_token(environ)
    return None if token is None else GitHubClient(context.repo, token, context.api_url)


def _wanted(context: JobContext, artifact: str, branch: str | None, workflow: str | None) -> Wanted | str:
    """Return what to look for, or why nothing can be looked for."""
    branch = branch or context.base_branch or context.ref_name
    workflow = workflow or context.workflow
    if not branch or not workflow:
        return "promptsuite: no baseline: the job names no base branch or workflow file (give --branch and --workflow)"
    return Wanted(workflow, branch, artifact)


def run_baseline(
    out_dir: Path,
    artifact: str,
    environ: Mapping[str, str],
    out: TextIO,
    *,
    branch: str | None = None,
    workflow: str | None = None,
) -> int:
    """Download the baseline report into ``out_dir`` (with its ``origin.json``), or say why there is none."""
    context = JobContext.from_environ(environ)
    wanted = _wanted(context, artifact, branch, workflow)
    if isinstance(wanted, str):
        return _say(out, wanted)
    client = _client(context, environ)
    if client is None:
        return _say(out, "promptsuite: no baseline: no GITHUB_TOKEN to look for one with")
    try:
        with client:
            origin = fetch_baseline(client, wanted, out_dir)
    except PromptSuiteError as exc:
        shutil.rmtree(out_dir, ignore_errors=True)  # nothing half unpacked is taken for a baseline
        return _say(out, f"promptsuite: no baseline: {exc}")
    if origin is None:
        return _say(
            out,
            f"promptsuite: no baseline: none of the latest {wanted.runs} successful runs of {wanted.workflow} on "
            f"{wanted.branch} has an artifact {wanted.artifact!r}; the run is gated on its thresholds alone",
        )
    commit = str(origin.get("commit") or "?")[:12]
    return _say(
        out, f"promptsuite: baseline: {origin.get('run_url')} (commit {commit} on {wanted.branch}) in {out_dir}"
    )


def run_post(body_file: Path, environ: Mapping[str, str], out: TextIO, *, number: int | None = None) -> int:
    """Create or update the pull request's sticky comment from ``body_file``, or say why not."""
    context = JobContext.from_environ(environ)
    number = number or context.pull_request
    if number is None:
        return _say(out, "promptsuite: no comment: this job is not on a pull request")
    if context.fork:
        return _say(out, _FORK)
    client = _client(context, environ)
    if client is None:
        return _say(out, "promptsuite: no comment: no GITHUB_TOKEN to comment with")
    body = body_file.read_text(encoding="utf-8")
    try:
        with client:
            done, comment_id = post_sticky(client, number, body)
    except GitHubError as exc:
        return _say(out, _refused(exc))
    return _say(out, f"promptsuite: comment {done} on pull request #{number} (comment {comment_id})")


def _refused(exc: GitHubError) -> str:
    """Say why the comment was not posted, in one line: a 403 is a read-only token (a fork's pull request, or no
    ``pull-requests: write`` permission)."""
    if exc.status == 403:
        return (
            "promptsuite: no comment: GitHub refused it (HTTP 403): the token is read-only, as on a pull request "
            "from a fork, or the job lacks `permissions: pull-requests: write`; the gate decides the job"
        )
    return f"promptsuite: no comment: {exc}; the gate decides the job"
