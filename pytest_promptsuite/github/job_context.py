"""What a GitHub Actions job tells a step about itself: the repository, the API, the pull request, its base
branch, whether it comes from a fork, and the workflow file."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.github.rest import DEFAULT_API


@dataclass(frozen=True)
class JobContext:
    """The job's repository (``owner/name``), API URL, pull request (number, base branch, from a fork) and
    workflow file, read from the variables GitHub Actions sets."""

    repo: str
    api_url: str = DEFAULT_API
    pull_request: int | None = None
    base_branch: str | None = None
    fork: bool = False
    workflow: str | None = None
    ref_name: str | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> JobContext:
        """Read the context from ``environ``; ConfigError naming the variable when ``GITHUB_REPOSITORY`` is not set
        or the event file cannot be read."""
        repo = environ.get("GITHUB_REPOSITORY")
        if not repo:
            raise ConfigError("GITHUB_REPOSITORY is not set: run this step in a GitHub Actions job")
        event = _event(environ.get("GITHUB_EVENT_PATH"))
        found = event.get("pull_request")
        pull: dict[str, Any] = found if isinstance(found, dict) else {}
        return cls(
            repo=repo,
            api_url=environ.get("GITHUB_API_URL") or DEFAULT_API,
            pull_request=_int(pull.get("number")),
            base_branch=_at(pull, "base", "ref"),
            fork=bool(pull) and _at(pull, "head", "repo", "full_name") not in (None, repo),
            workflow=_workflow_file(environ.get("GITHUB_WORKFLOW_REF")),
            ref_name=environ.get("GITHUB_REF_NAME") or None,
        )


def _event(path: str | None) -> dict[str, Any]:
    """Read the event's payload (``GITHUB_EVENT_PATH``); an empty one when the variable is not set."""
    if not path:
        return {}
    try:
        found = decode(Path(path).read_text(encoding="utf-8"), strict=False)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"GITHUB_EVENT_PATH {path}: cannot read the event ({exc})") from None
    return found if isinstance(found, dict) else {}


def _at(value: Any, *keys: str) -> str | None:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _workflow_file(ref: str | None) -> str | None:
    """Return the workflow's file name of ``GITHUB_WORKFLOW_REF`` (``owner/repo/.github/workflows/F.yml@ref``)."""
    if not ref:
        return None
    path = ref.partition("@")[0]
    return path.rpartition("/")[2] or None
