"""A loopback server speaking the GitHub REST endpoints the action uses: issue comments (list with pages, create,
update), workflow runs, run artifacts, and an artifact's zip behind a redirect to another origin."""

from __future__ import annotations

import contextlib
import io
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.responses import RedirectResponse
from starlette.responses import Response
from starlette.routing import Route


#: The token the server accepts.
TOKEN = "ghs_" + "L00pbackT0ken" * 3
REPO = "octo/prompts"


@dataclass
class GitHubState:
    """What the server holds and has seen: comments by pull request, runs by (workflow, branch), artifacts by run,
    zips by artifact; ``read_only`` refuses writes with 403 as a fork's token is; every request's line and token."""

    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    runs: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    artifacts: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    zips: dict[int, bytes] = field(default_factory=dict)
    read_only: bool = False
    seen: list[tuple[str, str, str | None]] = field(default_factory=list)
    next_id: int = 1000

    def add_run(self, workflow: str, branch: str, run_id: int, files: dict[str, str] | None, **fields: Any) -> None:
        """Add a successful run (newest last); with ``files``, its artifact ``promptsuite-report`` holding them."""
        run = {"id": run_id, "head_sha": f"{run_id:040x}", "head_branch": branch, "created_at": "2026-12-01T00:00:00Z"}
        run["html_url"] = f"https://github.com/{REPO}/actions/runs/{run_id}"
        self.runs.setdefault((workflow, branch), []).insert(0, {**run, **fields})
        if files is not None:
            self.artifacts[run_id] = [{"id": run_id * 10, "name": "promptsuite-report", "expired": False}]
            self.zips[run_id * 10] = zip_of(files)


def zip_of(files: dict[str, str]) -> bytes:
    """Return a zip holding ``files`` (name -> text)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def _app(state: GitHubState) -> Starlette:
    def authorized(request: Request) -> bool:
        token = request.headers.get("authorization")
        state.seen.append((request.method, request.url.path, token))
        return token == f"Bearer {TOKEN}"

    def refused() -> Response:
        return JSONResponse({"message": "Bad credentials"}, status_code=401)

    async def comments(request: Request) -> Response:
        if not authorized(request):
            return refused()
        number = int(request.path_params["number"])
        found = state.comments.setdefault(number, [])
        if request.method == "POST":
            if state.read_only:
                return JSONResponse({"message": "Resource not accessible by integration"}, status_code=403)
            state.next_id += 1
            comment = {"id": state.next_id, "body": (await request.json())["body"]}
            found.append(comment)
            return JSONResponse(comment, status_code=201)
        per_page, page = int(request.query_params.get("per_page", 30)), int(request.query_params.get("page", 1))
        shown = found[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(found):
            headers["link"] = f'<{request.url.replace_query_params(per_page=per_page, page=page + 1)}>; rel="next"'
        return JSONResponse(shown, headers=headers)

    async def comment(request: Request) -> Response:
        if not authorized(request):
            return refused()
        if state.read_only:
            return JSONResponse({"message": "Resource not accessible by integration"}, status_code=403)
        wanted = int(request.path_params["comment_id"])
        for comment in (c for found in state.comments.values() for c in found):
            if comment["id"] == wanted:
                comment["body"] = (await request.json())["body"]
                return JSONResponse(comment)
        return JSONResponse({"message": "Not Found"}, status_code=404)

    async def runs(request: Request) -> Response:
        if not authorized(request):
            return refused()
        key = (request.path_params["workflow"], request.query_params.get("branch", ""))
        found = state.runs.get(key, [])[: int(request.query_params.get("per_page", 30))]
        return JSONResponse({"total_count": len(found), "workflow_runs": found})

    async def artifacts(request: Request) -> Response:
        if not authorized(request):
            return refused()
        name = request.query_params.get("name")
        found = [a for a in state.artifacts.get(int(request.path_params["run_id"]), []) if a["name"] == name]
        return JSONResponse({"total_count": len(found), "artifacts": found})

    async def download(request: Request) -> Response:
        if not authorized(request):
            return refused()
        port = request.url.port
        # another origin (localhost, not 127.0.0.1), as GitHub's blob storage is: the token must not follow
        return RedirectResponse(f"http://localhost:{port}/blob/{request.path_params['artifact_id']}", status_code=302)

    async def blob(request: Request) -> Response:
        state.seen.append((request.method, request.url.path, request.headers.get("authorization")))
        found = state.zips.get(int(request.path_params["artifact_id"]))
        if found is None:
            return Response("blob storage failed", status_code=500)
        return Response(found, media_type="application/zip")

    base = "/repos/{owner}/{name}"
    return Starlette(
        routes=[
            Route(base + "/issues/{number:int}/comments", comments, methods=["GET", "POST"]),
            Route(base + "/issues/comments/{comment_id:int}", comment, methods=["PATCH"]),
            Route(base + "/actions/workflows/{workflow}/runs", runs),
            Route(base + "/actions/runs/{run_id:int}/artifacts", artifacts),
            Route(base + "/actions/artifacts/{artifact_id:int}/zip", download),
            Route("/blob/{artifact_id:int}", blob),
        ]
    )


@dataclass
class GitHubServer:
    """A running fake: its ``api_url`` and ``state``."""

    api_url: str
    state: GitHubState

    def environ(self, **more: str) -> dict[str, str]:
        """Return the variables a GitHub Actions job sets for a step, pointed at this server."""
        return {"GITHUB_REPOSITORY": REPO, "GITHUB_API_URL": self.api_url, "GITHUB_TOKEN": TOKEN, **more}


@contextlib.contextmanager
def serve_app(app: Any, name: str) -> Iterator[str]:
    """Run an ASGI ``app`` in a daemon thread on a free port of 127.0.0.1 while the block runs; yield its URL."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="critical", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True, name=name)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError(f"the {name} server did not start")
        threading.Event().wait(0.005)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextlib.contextmanager
def serve_github() -> Iterator[GitHubServer]:
    """Run the fake in a daemon thread on a free port of 127.0.0.1 while the block runs."""
    state = GitHubState()
    with serve_app(_app(state), "loopback-github") as url:
        yield GitHubServer(url, state)
