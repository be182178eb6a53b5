"""One OpenAI Batch job through the model's client: upload the request file, create the job, poll it (within
an overall time limit), download its output and error files, cancel it; every failure an EndpointError, scrubbed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import httpx

from pytest_promptsuite.config.settings import DEFAULT_BATCH_TIMEOUT_S
from pytest_promptsuite.errors import EndpointError
from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.models.batch.requests import BatchLine
from pytest_promptsuite.models.batch.requests import BatchOutputs
from pytest_promptsuite.models.body import read_body
from pytest_promptsuite.safety.limits import BATCH_FILE_BYTES
from pytest_promptsuite.safety.limits import RESPONSE_BYTES
from pytest_promptsuite.safety.limits import Limit


#: A job's statuses after which it changes no more.
FINAL = frozenset({"completed", "failed", "expired", "cancelled"})
_TRIES = 4


@dataclass
class JobResult:
    """What a finished job gave: its id and status, each answered line by ``custom_id`` (output
    and error files), and why the lines it did not answer have no answer."""

    batch_id: str
    status: str
    outputs: BatchOutputs = field(default_factory=BatchOutputs)
    reason: str = ""


class BatchJob:
    """Runs one batch job for an OpenAI-compatible model, through the model's own client."""

    def __init__(
        self,
        model: Any,
        *,
        progress: Callable[[str], None] | None = None,
        poll_s: float = 0.5,
        max_poll_s: float = 30.0,
        time_limit_s: float = DEFAULT_BATCH_TIMEOUT_S,
    ) -> None:
        self.model = model
        self.progress = progress or (lambda line: None)
        self.poll_s = poll_s
        self.max_poll_s = max_poll_s
        self.time_limit_s = time_limit_s
        self.batch_id: str | None = None
        #: The job's last status seen (None before it is created).
        self.status: str | None = None

    async def _request(self, method: str, path: str, limit: Limit = RESPONSE_BYTES, **kwargs: Any) -> bytes:
        """Call the Batch API once, retried on 429, 5xx and dropped connections; read at most ``limit`` of it."""
        where = f"{method} {self.model.public_base_url}{path}"
        client: httpx.AsyncClient = self.model.client()
        for attempt in range(_TRIES):
            try:
                async with client.stream(method, self.model.target(path), **kwargs) as reply:
                    content = await read_body(reply, limit, where)
            except httpx.DecodingError as exc:
                raise EndpointError(f"{where}: undecodable answer: {self.model.scrub(str(exc))}") from None
            except httpx.TransportError as exc:
                if attempt + 1 < _TRIES:
                    await asyncio.sleep(0.2 * 2**attempt)
                    continue
                raise EndpointError(f"{where} failed: {self.model.scrub(str(exc) or type(exc).__name__)}") from None
            if reply.status_code < 400:
                return content
            if (reply.status_code == 429 or reply.status_code >= 500) and attempt + 1 < _TRIES:
                await asyncio.sleep(0.2 * 2**attempt)
                continue
            text, _ = self.model._error_text(content)
            raise EndpointError(f"HTTP {reply.status_code} from {where}: {text}", status=reply.status_code)
        raise AssertionError("unreachable")

    async def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        content = await self._request(method, path, **kwargs)
        try:
            data = decode(content.decode("utf-8"), strict=False)
        except (UnicodeDecodeError, JsonError):
            data = None
        if not isinstance(data, dict):
            raise EndpointError(f"{method} {self.model.public_base_url}{path}: the answer is not a JSON object")
        return data

    async def run(self, lines: list[BatchLine], endpoint: str) -> JobResult:
        """Send ``lines`` as one job to ``endpoint`` (``/v1/chat/completions``) and wait for it, at most
        ``time_limit_s`` from now (an EndpointError past it: the caller cancels the job)."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        data = "".join(encode(line.to_dict(), compact=True, scrub=False) + "\n" for line in lines)
        upload = {"file": ("promptsuite-batch.jsonl", data.encode("utf-8"), "application/jsonl")}
        uploaded = await self._json("POST", "/files", data={"purpose": "batch"}, files=upload)
        create = {"input_file_id": uploaded.get("id"), "endpoint": endpoint, "completion_window": "24h"}
        job = await self._json("POST", "/batches", json={**create, "metadata": {"source": "pytest-promptsuite"}})
        if not isinstance(job.get("id"), str) or not job["id"]:
            raise EndpointError(f"POST {self.model.public_base_url}/batches: the answer has no batch id")
        self.batch_id, self.status = job["id"], str(job.get("status"))
        try:  # Ctrl-C, SIGTERM or any failure: the runner cancels this, then the job
            job = await asyncio.wait_for(self._wait(job), self.time_limit_s - (loop.time() - started))
        except TimeoutError:
            raise EndpointError(
                f"batch {self.batch_id} did not end within {self.time_limit_s:g} s (--prompt-batch-timeout): cancelled"
            ) from None
        result = JobResult(self.batch_id, self.status, reason=_reason(job))
        for key in ("output_file_id", "error_file_id"):
            file_id = job.get(key)
            if isinstance(file_id, str) and file_id:
                where = f"batch {self.batch_id} {key[:-8]} file"
                try:  # one file lost loses not the other's answers
                    content = await self._request("GET", f"/files/{file_id}/content", BATCH_FILE_BYTES)
                except EndpointError as exc:
                    result.reason += f"; the {where} could not be downloaded: {exc}"
                    continue
                result.outputs.read(content, where)
        return result

    async def _wait(self, job: dict[str, Any]) -> dict[str, Any]:
        """Poll until the job ends, the wait growing by half each time up to ``max_poll_s``."""
        delay, last = self.poll_s, ""
        while self.status not in FINAL:
            await asyncio.sleep(delay)
            delay = min(self.max_poll_s, delay * 1.5)
            job = await self._json("GET", f"/batches/{self.batch_id}")
            self.status = str(job.get("status"))
            line = _progress(job)
            if line != last:
                self.progress(line)
                last = line
        return job

    async def cancel(self) -> None:
        """Ask the endpoint to cancel the job where it still runs; a failure to do so is not an error."""
        if self.batch_id is None or self.status in FINAL:
            return
        try:
            await self._request("POST", f"/batches/{self.batch_id}/cancel", timeout=10.0)
            self.progress(f"batch {self.batch_id}: cancel requested")
        except EndpointError:
            pass


def _progress(job: dict[str, Any]) -> str:
    """Say how far the job is; a count the endpoint gives as null (or not a number) is left out."""
    counts = job.get("request_counts")
    done, total, failed = (_count(counts, key) for key in ("completed", "total", "failed"))
    line = f"batch {job.get('id')}: {job.get('status')}"
    if done is not None and total is not None:
        line += f", {done:,} of {total:,} done"
    return line if failed is None else f"{line}, {failed:,} failed"


def _count(counts: Any, key: str) -> int | None:
    """Return one of ``request_counts``' counts, None where the endpoint gave none (servers type them optional)."""
    value = counts.get(key) if isinstance(counts, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _items(value: Any) -> list[Any]:
    """Return ``value`` if it is a list, else no items (the endpoint gave something else)."""
    return value if isinstance(value, list) else []


def _reason(job: dict[str, Any]) -> str:
    """Say why a finished job left requests unanswered, in the endpoint's words where it gave some."""
    status = str(job.get("status"))
    errors = job.get("errors")
    data = errors.get("data") if isinstance(errors, dict) else None
    said = "; ".join(str(e.get("message") or e.get("code")) for e in _items(data) if isinstance(e, dict))
    what = {
        "failed": "the batch failed",
        "expired": "the batch expired before this request ran",
        "cancelled": "the batch was cancelled",
    }.get(status, f"the batch ended {status!r} without it")
    return f"{what}{': ' + said if said else ''}"
