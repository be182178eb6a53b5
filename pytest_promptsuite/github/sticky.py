"""The sticky comment: a pull request's one comment of a suite, found by its hidden marker line and updated in
place, never posted twice."""

from __future__ import annotations

from typing import Any
from typing import Literal

from pytest_promptsuite.github.rest import GitHubClient


def _first_line(comment: dict[str, Any]) -> str:
    body = comment.get("body")
    return body.partition("\n")[0].strip() if isinstance(body, str) else ""


def find_sticky(client: GitHubClient, number: int, marker: str) -> int | None:
    """Return the id of the pull request's comment whose first line is ``marker``, None when there is none."""
    for comment in client.comments(number):
        if _first_line(comment) == marker and isinstance(comment.get("id"), int):
            return int(comment["id"])
    return None


def post_sticky(client: GitHubClient, number: int, body: str) -> tuple[Literal["created", "updated"], int]:
    """Update the comment that starts with ``body``'s first line (its marker), else create it; return which
    was done and the comment's id."""
    marker = body.partition("\n")[0].strip()
    found = find_sticky(client, number, marker)
    if found is not None:
        client.update_comment(found, body)
        return "updated", found
    created = client.create_comment(number, body)
    return "created", int(created.get("id") or 0)
