"""The sticky comment against the loopback GitHub server: created once, then updated, never a second one; a
marker of another suite is left alone; the token sent as a header and never shown."""

from __future__ import annotations

import pytest

from pytest_promptsuite.github.rest import GitHubClient
from pytest_promptsuite.github.rest import GitHubError
from pytest_promptsuite.github.sticky import post_sticky
from pytest_promptsuite.report.pr_comment import marker
from tests.github_api import REPO
from tests.github_api import TOKEN
from tests.github_api import GitHubServer


def test_the_first_post_creates_and_each_later_one_updates_the_same_comment(github: GitHubServer) -> None:
    github.state.comments[7] = [{"id": i, "body": f"chatter {i}"} for i in range(1, 151)]  # two pages and more
    github.state.comments[7].insert(3, {"id": 999, "body": marker("other") + "\nanother suite's"})
    with GitHubClient(REPO, TOKEN, github.api_url) as client:
        done, first = post_sticky(client, 7, marker() + "\nrun 1")
        assert done == "created"
        assert post_sticky(client, 7, marker() + "\nrun 2") == ("updated", first)
        assert post_sticky(client, 7, marker() + "\nrun 3") == ("updated", first)
    ours = [c for c in github.state.comments[7] if c["body"].startswith(marker() + "\n")]
    assert ours == [{"id": first, "body": marker() + "\nrun 3"}]
    assert github.state.comments[7][3]["body"].endswith("another suite's")
    assert {token for _, _, token in github.state.seen} == {f"Bearer {TOKEN}"}


def test_a_read_only_token_is_a_403_that_names_no_token(github: GitHubServer) -> None:
    github.state.read_only = True
    with GitHubClient(REPO, TOKEN, github.api_url) as client, pytest.raises(GitHubError) as raised:
        post_sticky(client, 7, marker() + "\nbody")
    assert raised.value.status == 403
    assert "HTTP 403: Resource not accessible by integration" in str(raised.value)
    assert github.state.comments[7] == []


def test_a_wrong_token_and_no_server_are_errors_that_never_show_the_token(github: GitHubServer) -> None:
    wrong = "ghp_" + "Wr0ngT0kenValue" * 2
    with GitHubClient(REPO, wrong, github.api_url) as client, pytest.raises(GitHubError) as raised:
        post_sticky(client, 7, marker())
    assert raised.value.status == 401 and wrong not in str(raised.value)
    with GitHubClient(REPO, wrong, "http://127.0.0.1:9/") as client, pytest.raises(GitHubError) as raised:
        post_sticky(client, 7, marker())
    assert raised.value.status is None and "no answer" in str(raised.value) and wrong not in str(raised.value)
