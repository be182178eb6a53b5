"""One OpenAI Batch job through the model's client: upload the request file, create the job, poll it, download
its output and error files, cancel it on Ctrl-C; every failure an EndpointError, scrubbed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import httpx

from pytest_promptsuite.errors import EndpointError
from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.models.batch.requests import BatchLine
from pytest_promptsuite.models.batch.requests import read_outputs


#: A job's statuses after which it changes no more.
FINAL = frozenset({"completed", "failed", "expired", "cancelled"})
_TRIES = 4


@dataclass
class JobResult:
    """What a finished job gave: its id and status, each answered line by ``custom_id`` (output
    and error files), and why the lines it did not answer have no answer."""

    batch_id: str
    status: str
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
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
    ) -> None:
        self.model = model
        self.progress = progress or (lambda line: None)
        self.poll_s = poll_s
        self.max_poll_s = max_poll_s
        self.batch_id: str | None = None

    async def _request(self, method: str, path: str, **kwargs: Any) -> bytes:
        """Call the Batch API once, retried on 429, 5xx and dropped connections."""
        where = f"{method} {self.model.public_base_url}{path}"
        client: httpx.AsyncClient = self.model.client()
        for attempt in range(_TRIES):
            try:
                reply = await client.request(method, self.model.target(path), **kwargs)
            except httpx.TransportError as exc:
                if attempt + 1 < _TRIES:
                    await asyncio.sleep(0.2 * 2**attempt)
                    continue
                raise EndpointError(f"{where} failed: {self.model.scrub(str(exc) or type(exc).__name__)}") from None
            if reply.status_code < 400:
                return reply.content
            if (reply.status_code == 429 or reply.status_code >= 500) and attempt + 1 < _TRIES:
                await asyncio.sleep(0.2 * 2**attempt)
                continue
            text, _ = self.model._error_text(reply.content)
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
        """Send ``lines`` as one job to ``endpoint`` (``/v1/chat/completions``) and wait for it."""
        data = "".join(encode(line.to_dict(), compact=True, scrub=False) + "\n" for line in lines)
        upload = {"file": ("promptsuite-batch.jsonl", data.encode("utf-8"), "application/jsonl")}
        uploaded = await self._json("POST", "/files", data={"purpose": "batch"}, files=upload)
        create = {"input_file_id": uploaded.get("id"), "endpoint": endpoint, "completion_window": "24h"}
        job = await self._json("POST", "/batches", json={**create, "metadata": {"source": "pytest-promptsuite"}})
        self.batch_id = str(job.get("id"))
        job = await self._wait(job)  # Ctrl-C: the runner cancels this, then the job
        result = JobResult(self.batch_id, str(job.get("status")), reason=_reason(job))
        for key in ("output_file_id", "error_file_id"):
            file_id = job.get(key)
            if isinstance(file_id, str) and file_id:
                content = await self._request("GET", f"/files/{file_id}/content")
                result.outputs.update(read_outputs(content, f"batch {self.batch_id} {key[:-8]} file"))
        return result

    async def _wait(self, job: dict[str, Any]) -> dict[str, Any]:
        """Poll until the job ends, the wait growing by half each time up to ``max_poll_s``."""
        delay, last = self.poll_s, ""
        while str(job.get("status")) not in FINAL:
            await asyncio.sleep(delay)
            delay = min(self.max_poll_s, delay * 1.5)
            job = await self._json("GET", f"/batches/{self.batch_id}")
            line = _progress(job)
            if line != last:
                self.progress(line)
                last = line
        return job

    async def cancel(self) -> None:
        """Ask the endpoint to cancel the job (Ctrl-C); a failure to do so is not an error."""
        if self.batch_id is None:
            return
        try:
            await self._request("POST", f"/batches/{self.batch_id}/cancel", timeout=10.0)
            self.progress(f"batch {self.batch_id}: cancel requested")
        except EndpointError:
            pass


def _progress(job: dict[str, Any]) -> str:
    counts = job.get("request_counts")
    counts = counts if isinstance(counts, dict) else {}
    done, total, failed = (counts.get(k, 0) for k in ("completed", "total", "failed"))
    return f"batch {job.get('id')}: {job.get('status')}, {done:,} of {total:,} done, {failed:,} failed"


def _reason(job: dict[str, Any]) -> str:
    """Say why a finished job left requests unanswered, in the endpoint's words where it gave some."""
    status = str(job.get("status"))
    errors = job.get("errors")
    data = errors.get("data") if isinstance(errors, dict) else None
    said = "; ".join(str(e.get("message") or e.get("code")) for e in data or [] if isinstance(e, dict))
    what = {
        "failed": "the batch failed",
        "expired": "the batch expired before this request ran",
        "cancelled": "the batch was cancelled",
    }.get(status, f"the batch ended {status!r} without it")
    return f"{what}{': ' + said if said else ''}"
