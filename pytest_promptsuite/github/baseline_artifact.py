"""The baseline a pull request is compared with: the report artifact of the base branch's latest successful
run of the same workflow, downloaded, unpacked safely, and stamped with where it came from (``origin.json``)."""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from pathlib import PurePosixPath
from typing import Any

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.github.rest import GitHubClient
from pytest_promptsuite.safety.limits import ARTIFACT_BYTES
from pytest_promptsuite.safety.limits import ARTIFACT_UNPACKED


#: The file beside a baseline's report that says where it came from (read by ``promptsuite comment``).
ORIGIN_FILE = "origin.json"


@dataclass(frozen=True)
class Wanted:
    """Which baseline to look for: the workflow's file, the branch, the artifact's name, how many runs back."""

    workflow: str
    branch: str
    artifact: str
    runs: int = 10


def origin_of(run: dict[str, Any]) -> dict[str, Any]:
    """Return where a run's artifact came from: its commit, branch, time, run id and URL."""
    return {
        "commit": run.get("head_sha"),
        "branch": run.get("head_branch"),
        "created_at": run.get("created_at"),
        "run_id": run.get("id"),
        "run_url": run.get("html_url"),
    }


def find_baseline(client: GitHubClient, wanted: Wanted) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """Return the newest successful run of the workflow on the branch that has the artifact, with the artifact;
    None when none of the latest ``wanted.runs`` has one."""
    for run in client.successful_runs(wanted.workflow, wanted.branch, wanted.runs):
        if not isinstance(run.get("id"), int):
            continue
        found = client.artifacts(run["id"], wanted.artifact)
        if found:
            return run, found[0]
    return None


def fetch_baseline(client: GitHubClient, wanted: Wanted, out: Path) -> dict[str, Any] | None:
    """Download and unpack the baseline into ``out`` with its ``origin.json``; return the origin, None when
    there is no baseline to find."""
    found = find_baseline(client, wanted)
    if found is None:
        return None
    run, artifact = found
    with tempfile.TemporaryFile() as zipped:
        client.download(int(artifact["id"]), zipped, ARTIFACT_BYTES)
        zipped.seek(0)
        unpack(zipped, out)
    origin = origin_of(run)
    (out / ORIGIN_FILE).write_text(encode(origin, indent=2) + "\n", encoding="utf-8")
    return origin


def _safe_name(name: str) -> PurePosixPath:
    """Return a member's path inside the folder; ConfigError for one that would land outside it."""
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise ConfigError(f"the baseline artifact holds {name!r}, a path outside its folder: not unpacked")
    return path


def unpack(zipped: Any, out: Path) -> None:
    """Unpack a zip into ``out`` (made), refusing a member outside it and more than the unpacked limit."""
    with zipfile.ZipFile(zipped) as archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        if sum(m.file_size for m in members) > ARTIFACT_UNPACKED.value:
            raise ConfigError(f"the baseline artifact unpacks past {ARTIFACT_UNPACKED}: not unpacked")
        for member in members:
            target = out.joinpath(*_safe_name(member.filename).parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as source, target.open("wb") as sink:  # reads stop at the declared size
                shutil.copyfileobj(source, sink)
