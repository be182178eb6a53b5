"""Finding and fetching the baseline against the loopback GitHub server: the newest successful run with the
artifact, its origin, none found, an artifact that would unpack outside its folder or past its size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.github import baseline_artifact
from pytest_promptsuite.github.baseline_artifact import Wanted
from pytest_promptsuite.github.baseline_artifact import fetch_baseline
from pytest_promptsuite.github.rest import GitHubClient
from pytest_promptsuite.github.rest import GitHubError
from pytest_promptsuite.safety.limits import Limit
from tests.github_api import REPO
from tests.github_api import TOKEN
from tests.github_api import GitHubServer


WANTED = Wanted("prompts.yml", "main", "promptsuite-report")


def test_the_newest_successful_run_with_the_artifact_is_fetched_with_its_origin(
    github: GitHubServer, tmp_path: Path
) -> None:
    github.state.add_run("prompts.yml", "main", 1, {"results.jsonl": "old\n"})
    github.state.add_run("prompts.yml", "main", 2, {"results.jsonl": "new\n", "sub/summary.json": "{}"})
    github.state.add_run("prompts.yml", "main", 3, None)  # the newest: its artifact expired or was never made
    github.state.add_run("other.yml", "main", 4, {"results.jsonl": "another workflow\n"})
    with GitHubClient(REPO, TOKEN, github.api_url) as client:
        origin = fetch_baseline(client, WANTED, tmp_path / "base")
    assert (tmp_path / "base" / "results.jsonl").read_text() == "new\n"
    assert (tmp_path / "base" / "sub" / "summary.json").is_file()
    assert origin is not None and origin["commit"] == f"{2:040x}" and origin["branch"] == "main"
    assert json.loads((tmp_path / "base" / "origin.json").read_text()) == origin
    blob = [token for _, path, token in github.state.seen if path.startswith("/blob/")]
    assert blob == [None]  # the redirect to another origin did not carry the token


def test_no_run_with_the_artifact_is_none_and_writes_nothing(github: GitHubServer, tmp_path: Path) -> None:
    github.state.add_run("prompts.yml", "main", 1, None)
    with GitHubClient(REPO, TOKEN, github.api_url) as client:
        assert fetch_baseline(client, WANTED, tmp_path / "base") is None
        assert fetch_baseline(client, Wanted("prompts.yml", "dev", "promptsuite-report"), tmp_path / "base") is None
    assert not (tmp_path / "base").exists()


@pytest.mark.parametrize("name", ["../escape.txt", "/etc/evil", "a/../../b"])
def test_a_member_outside_the_folder_is_refused(github: GitHubServer, tmp_path: Path, name: str) -> None:
    github.state.add_run("prompts.yml", "main", 1, {name: "x", "results.jsonl": "\n"})
    with GitHubClient(REPO, TOKEN, github.api_url) as client, pytest.raises(ConfigError, match="a path outside"):
        fetch_baseline(client, WANTED, tmp_path / "base")
    assert not (tmp_path / "escape.txt").exists()


def test_an_artifact_past_the_limits_is_refused(
    github: GitHubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    github.state.add_run("prompts.yml", "main", 1, {"results.jsonl": "y" * 5000})
    monkeypatch.setattr(baseline_artifact, "ARTIFACT_UNPACKED", Limit("unpacked baseline size", 4000, "bytes"))
    with GitHubClient(REPO, TOKEN, github.api_url) as client, pytest.raises(ConfigError, match="unpacks past"):
        fetch_baseline(client, WANTED, tmp_path / "base")
    monkeypatch.setattr(baseline_artifact, "ARTIFACT_BYTES", Limit("baseline artifact size", 100, "bytes"))
    with GitHubClient(REPO, TOKEN, github.api_url) as client, pytest.raises(GitHubError, match="larger than"):
        fetch_baseline(client, WANTED, tmp_path / "base")


def test_bad_credentials_are_an_error_with_githubs_message(github: GitHubServer, tmp_path: Path) -> None:
    github.state.add_run("prompts.yml", "main", 1, {"results.jsonl": "\n"})
    with GitHubClient(REPO, "ghp_" + "x" * 30, github.api_url) as client, pytest.raises(GitHubError) as raised:
        fetch_baseline(client, WANTED, tmp_path / "base")
    assert raised.value.status == 401 and "Bad credentials" in str(raised.value)


def test_a_zip_that_cannot_be_downloaded_is_an_error_with_its_status(github: GitHubServer, tmp_path: Path) -> None:
    github.state.add_run("prompts.yml", "main", 1, {"results.jsonl": "\n"})
    github.state.zips.clear()
    with GitHubClient(REPO, TOKEN, github.api_url) as client, pytest.raises(GitHubError) as raised:
        fetch_baseline(client, WANTED, tmp_path / "base")
    assert raised.value.status == 500 and "/actions/artifacts/10/zip: HTTP 500" in str(raised.value)
