"""The GitHub REST client the action uses (httpx): issue comments, workflow runs, artifacts; its token is
registered with the scrubber, so no output, file or error can show it."""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Mapping
from typing import Any
from typing import BinaryIO

import httpx

from pytest_promptsuite.errors import PromptSuiteError
from pytest_promptsuite.safety.limits import Limit
from pytest_promptsuite.safety.scrub import register
from pytest_promptsuite.safety.scrub import scrub


#: GitHub's REST API when ``GITHUB_API_URL`` does not say another (GitHub Enterprise Server).
DEFAULT_API = "https://api.github.com"
_HEADERS = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
#: How much of an error body a message quotes.
_QUOTED = 300


class GitHubError(PromptSuiteError):
    """A GitHub API call failed: ``status`` (None when no answer came) and GitHub's own message, scrubbed."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(scrub(message))
        self.status = status


def _said(response: httpx.Response) -> str:
    """Return GitHub's ``message`` of an error answer, else the start of its body."""
    try:
        found = response.json()
    except ValueError:
        found = None
    if isinstance(found, dict) and isinstance(found.get("message"), str):
        return str(found["message"])[:_QUOTED]
    return response.text[:_QUOTED]


class GitHubClient:
    """One ``httpx.Client`` on GitHub's REST API for one repository (``owner/name``), authorized by ``token``."""

    def __init__(self, repo: str, token: str, api_url: str = DEFAULT_API, *, timeout_s: float = 30.0) -> None:
        register(token)  # before any request: no error, log or file can show it from here on
        self.repo = repo
        headers = {**_HEADERS, "Authorization": f"Bearer {token}", "User-Agent": "pytest-promptsuite"}
        # redirects are followed: httpx drops the Authorization header when one leaves the API's origin
        self._http = httpx.Client(
            base_url=api_url.rstrip("/"), headers=headers, timeout=timeout_s, follow_redirects=True
        )

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def _call(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """Make one call; GitHubError (status and GitHub's message) for an error answer or no answer."""
        try:
            response = self._http.request(method, url, **kwargs)
        except httpx.HTTPError as exc:
            raise GitHubError(f"GitHub API {method} {url}: no answer ({type(exc).__name__}: {exc})") from None
        if response.is_error:
            status = response.status_code
            raise GitHubError(f"GitHub API {method} {url}: HTTP {status}: {_said(response)}", status=status)
        return response

    def _pages(self, url: str, key: str | None = None, **params: Any) -> Iterator[dict[str, Any]]:
        """Yield the items of every page of a list (``key``: the list's field in each page's object)."""
        next_url: str | None = url
        query: dict[str, Any] | None = {"per_page": 100, **params}
        while next_url:
            response = self._call("GET", next_url, params=query)
            page = response.json()
            items = page.get(key, []) if key is not None and isinstance(page, dict) else page
            yield from (item for item in items if isinstance(item, dict))
            next_url, query = response.links.get("next", {}).get("url"), None  # the next link holds the query

    def comments(self, number: int) -> Iterator[dict[str, Any]]:
        """Yield the comments of issue or pull request ``number``, oldest first."""
        return self._pages(f"/repos/{self.repo}/issues/{number}/comments")

    def create_comment(self, number: int, body: str) -> dict[str, Any]:
        """Comment on issue or pull request ``number``; return the comment."""
        found: dict[str, Any] = self._call(
            "POST", f"/repos/{self.repo}/issues/{number}/comments", json={"body": body}
        ).json()
        return found

    def update_comment(self, comment_id: int, body: str) -> dict[str, Any]:
        """Replace the body of comment ``comment_id``; return the comment."""
        url = f"/repos/{self.repo}/issues/comments/{comment_id}"
        found: dict[str, Any] = self._call("PATCH", url, json={"body": body}).json()
        return found

    def successful_runs(self, workflow: str, branch: str, limit: int) -> list[dict[str, Any]]:
        """Return the latest successful runs (newest first, at most ``limit``) of ``workflow`` (its file name
        or id) on ``branch``."""
        url = f"/repos/{self.repo}/actions/workflows/{workflow}/runs"
        page = self._call("GET", url, params={"branch": branch, "status": "success", "per_page": limit}).json()
        runs = page.get("workflow_runs", []) if isinstance(page, dict) else []
        return [run for run in runs if isinstance(run, dict)][:limit]

    def artifacts(self, run_id: int, name: str) -> list[dict[str, Any]]:
        """Return the artifacts named ``name`` of run ``run_id`` that have not expired."""
        found = self._pages(f"/repos/{self.repo}/actions/runs/{run_id}/artifacts", "artifacts", name=name)
        return [a for a in found if a.get("name") == name and not a.get("expired")]

    def download(self, artifact_id: int, to: BinaryIO, limit: Limit) -> int:
        """Write artifact ``artifact_id``'s zip into ``to``; return its size. GitHubError past ``limit`` bytes."""
        url = f"/repos/{self.repo}/actions/artifacts/{artifact_id}/zip"
        try:
            with self._http.stream("GET", url) as response:
                if response.is_error:
                    response.read()
                    raise GitHubError(
                        f"GitHub API GET {url}: HTTP {response.status_code}: {_said(response)}",
                        status=response.status_code,
                    )
                return _copy(response, to, url, limit)
        except httpx.HTTPError as exc:
            raise GitHubError(f"GitHub API GET {url}: no answer ({type(exc).__name__}: {exc})") from None


def _copy(response: httpx.Response, to: BinaryIO, url: str, limit: Limit) -> int:
    """Copy a streamed body into ``to``, stopping past ``limit`` bytes."""
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > limit.value:
            raise GitHubError(f"GitHub API GET {url}: the artifact is larger than {limit}")
        to.write(chunk)
    return size


def read_token(environ: Mapping[str, str]) -> str | None:
    """Return the token of ``GITHUB_TOKEN`` (else ``GH_TOKEN``) in ``environ``, None when neither is set."""
    return environ.get("GITHUB_TOKEN") or environ.get("GH_TOKEN") or None
