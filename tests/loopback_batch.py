"""The OpenAI Batch API for the loopback server (``tests/loopback.py``), on 127.0.0.1 only.

``POST /v1/files`` (multipart ``purpose=batch``), ``POST /v1/batches``, ``GET /v1/batches/{id}``,
``POST /v1/batches/{id}/cancel`` and ``GET /v1/files/{id}/content``. A job answers each line as
the server's chat and completion endpoints would (the echo), in the background while it is
polled. Knobs (:class:`BatchKnobs`): ``delay_s`` before a job starts and ``line_s`` per line;
``fail`` (the job fails validation with that message); ``expire_after`` (the job expires after
that many lines: the rest have no answer); ``null_counts`` (the job shows ``request_counts`` as
null when created and each count null while polled); ``broken_polls`` (a poll of a job answers a
JSON list, not the job); ``broken_error_file`` (a job's error file cannot be downloaded: a 500);
``bomb`` (a size in bytes): every file is downloaded as ``gzip, gzip`` that decodes to the file
followed by blank lines up to that size (:mod:`tests.bombs`).
A line whose prompt holds ``[[batch-error]]``
is answered in the error file with a 400, one holding ``[[batch-lost]]`` is in neither file; one
holding ``[[batch-twice]]`` is answered twice in the output file (the second answer differs), one
holding ``[[batch-both]]`` in the output file and the error file, and one holding
``[[batch-garbled]]`` gets an output line cut in half (not JSON), one holding ``[[batch-nameless]]``
an output line without its ``custom_id``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.responses import Response
from starlette.routing import Route

from tests.bombs import bomb


__all__ = ["BatchApi", "BatchKnobs"]

#: (body, chat?) -> the completion's JSON, and the prompt a body holds.
Answer = Callable[[dict[str, Any], bool], dict[str, Any]]
PromptOf = Callable[[dict[str, Any]], str]


@dataclass
class BatchKnobs:
    """How the batch jobs behave; see the module docstring."""

    delay_s: float = 0.0
    line_s: float = 0.0
    fail: str | None = None
    expire_after: int | None = None
    null_counts: bool = False
    broken_polls: bool = False
    broken_error_file: bool = False
    bomb: int | None = None


@dataclass
class BatchStats:
    """What the batch API saw."""

    uploads: int = 0
    created: int = 0
    cancelled: int = 0
    polls: int = 0
    lines: int = 0
    endpoints: list[str] = field(default_factory=list)


def _multipart(content_type: str, body: bytes) -> dict[str, bytes]:
    """The parts of a ``multipart/form-data`` body by name (starlette's parser needs an extra)."""
    boundary = content_type.partition("boundary=")[2].strip('"').encode()
    parts: dict[str, bytes] = {}
    for chunk in body.split(b"--" + boundary)[1:-1]:
        head, _, content = chunk.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        name = head.partition(b'name="')[2].partition(b'"')[0].decode()
        parts[name] = content.removesuffix(b"\r\n")
    return parts


class BatchApi:
    """Files and batch jobs, kept in memory."""

    def __init__(self, answer: Answer, prompt_of: PromptOf) -> None:
        self._answer = answer
        self._prompt_of = prompt_of
        self.knobs = BatchKnobs()
        self.stats = BatchStats()
        self.files: dict[str, bytes] = {}
        self.jobs: dict[str, dict[str, Any]] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def reset(self, **knobs: Any) -> None:
        """Forget files, jobs and counts; set fresh knobs."""
        for task in self._tasks.values():
            task.cancel()
        self.knobs = BatchKnobs(**knobs)
        self.stats = BatchStats()
        self.files, self.jobs, self._tasks = {}, {}, {}

    def routes(self) -> list[Route]:
        """The Batch API's routes."""
        return [
            Route("/v1/files", self.upload, methods=["POST"]),
            Route("/v1/files/{file_id}/content", self.content, methods=["GET"]),
            Route("/v1/batches", self.create, methods=["POST"]),
            Route("/v1/batches/{batch_id}", self.retrieve, methods=["GET"]),
            Route("/v1/batches/{batch_id}/cancel", self.cancel, methods=["POST"]),
        ]

    def _file(self, data: bytes) -> str:
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = data
        return file_id

    async def upload(self, request: Request) -> Response:
        form = _multipart(request.headers.get("content-type", ""), await request.body())
        data = form.get("file")
        if form.get("purpose") != b"batch" or data is None:
            return JSONResponse({"error": {"message": "purpose must be batch, with a file"}}, status_code=400)
        self.stats.uploads += 1
        file_id = self._file(data)
        return JSONResponse({"id": file_id, "object": "file", "bytes": len(data), "purpose": "batch"})

    async def content(self, request: Request) -> Response:
        file_id = request.path_params["file_id"]
        if self.knobs.broken_error_file and any(job["error_file_id"] == file_id for job in self.jobs.values()):
            return JSONResponse({"error": {"message": "the file store is down"}}, status_code=500)
        data = self.files.get(file_id)
        if data is None:
            return JSONResponse({"error": {"message": "no such file"}}, status_code=404)
        if self.knobs.bomb is not None:
            packed = bomb(data, self.knobs.bomb)
            return Response(packed, media_type="application/jsonl", headers={"content-encoding": "gzip, gzip"})
        return Response(data, media_type="application/jsonl")

    async def create(self, request: Request) -> Response:
        body = await request.json()
        source = self.files.get(str(body.get("input_file_id")))
        if source is None:
            return JSONResponse({"error": {"message": "no such input file"}}, status_code=400)
        self.stats.created += 1
        self.stats.endpoints.append(str(body.get("endpoint")))
        batch_id = f"batch_{len(self.jobs) + 1}"
        lines = [json.loads(line) for line in source.decode("utf-8").splitlines() if line.strip()]
        job: dict[str, Any] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": body.get("endpoint"),
            "status": "validating",
            "input_file_id": body.get("input_file_id"),
            "created_at": int(time.time()),
            "output_file_id": None,
            "error_file_id": None,
            "errors": None,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
        }
        self.jobs[batch_id] = job
        self._tasks[batch_id] = asyncio.ensure_future(self._process(job, lines))
        return JSONResponse({**job, "request_counts": None} if self.knobs.null_counts else job)

    async def retrieve(self, request: Request) -> Response:
        job = self.jobs.get(request.path_params["batch_id"])
        if job is None:
            return JSONResponse({"error": {"message": "no such batch"}}, status_code=404)
        self.stats.polls += 1
        if self.knobs.broken_polls:
            return JSONResponse([job["id"]])
        if self.knobs.null_counts:
            return JSONResponse({**job, "request_counts": dict.fromkeys(job["request_counts"])})
        return JSONResponse(job)

    async def cancel(self, request: Request) -> Response:
        job = self.jobs.get(request.path_params["batch_id"])
        if job is None:
            return JSONResponse({"error": {"message": "no such batch"}}, status_code=404)
        self.stats.cancelled += 1
        if job["status"] not in ("completed", "failed", "expired", "cancelled"):
            job["status"] = "cancelling"
        return JSONResponse(job)

    async def _process(self, job: dict[str, Any], lines: list[dict[str, Any]]) -> None:
        knobs = self.knobs
        await asyncio.sleep(knobs.delay_s)
        if knobs.fail is not None:
            job.update(status="failed", errors={"object": "list", "data": [{"code": "invalid", "message": knobs.fail}]})
            return
        if job["status"] == "validating":
            job["status"] = "in_progress"
        outputs: list[str] = []
        errors: list[str] = []
        for number, line in enumerate(lines):
            if job["status"] == "cancelling" or (knobs.expire_after is not None and number >= knobs.expire_after):
                break
            if knobs.line_s:
                await asyncio.sleep(knobs.line_s)
            elif number % 500 == 499:
                await asyncio.sleep(0)  # let polls in
            self.stats.lines += 1
            self._line(job, line, outputs, errors)
        final = "cancelled" if job["status"] == "cancelling" else "in_progress"
        if knobs.expire_after is not None and final != "cancelled" and len(lines) > knobs.expire_after:
            final = "expired"
        job["status"] = "finalizing" if final == "in_progress" else final
        job["output_file_id"] = self._file("".join(outputs).encode("utf-8")) if outputs else None
        job["error_file_id"] = self._file("".join(errors).encode("utf-8")) if errors else None
        if final == "in_progress":
            job["status"] = "completed"

    def _line(self, job: dict[str, Any], line: dict[str, Any], outputs: list[str], errors: list[str]) -> None:
        body = line.get("body", {})
        prompt = self._prompt_of(body)
        counts = job["request_counts"]
        if "[[batch-lost]]" in prompt:
            return
        if "[[batch-error]]" in prompt:
            counts["failed"] += 1
            errors.append(_error_line(line["custom_id"]))
            return
        counts["completed"] += 1
        chat = str(line.get("url", "")).endswith("/chat/completions")
        answered = _output_line(line["custom_id"], self._answer(body, chat))
        if "[[batch-garbled]]" in prompt:
            answered = answered[: len(answered) // 2] + "\n"
        if "[[batch-nameless]]" in prompt:
            answered = answered.replace(json.dumps(line["custom_id"]), "null")
        outputs.append(answered)
        if "[[batch-twice]]" in prompt:
            again = {"model": body.get("model"), "messages": [{"role": "user", "content": "another answer"}]}
            outputs.append(_output_line(line["custom_id"], self._answer(again, chat)))
        if "[[batch-both]]" in prompt:
            errors.append(_error_line(line["custom_id"]))


def _output_line(custom_id: str, answer: dict[str, Any]) -> str:
    """An output file's line: a request answered with ``answer``."""
    response = {"status_code": 200, "request_id": "q", "body": answer}
    return json.dumps({"id": "r", "custom_id": custom_id, "error": None, "response": response}) + "\n"


def _error_line(custom_id: str) -> str:
    """An error file's line: a request refused with a 400."""
    error = {"error": {"message": "Invalid request: batch-error", "type": "invalid_request_error"}}
    return (
        json.dumps({"id": "r", "custom_id": custom_id, "error": None, "response": {"status_code": 400, "body": error}})
        + "\n"
    )
