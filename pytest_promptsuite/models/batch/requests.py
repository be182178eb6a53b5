"""Batch requests and answers: a call as a line of a Batch API request file, the output file's lines
read back, and :class:`BatchAnswers`, the model layer that answers each call from them."""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import Protocol

import jsonlines

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import EndpointError
from pytest_promptsuite.errors import ModelError
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.formats.jsonl import read_jsonl
from pytest_promptsuite.models.base import Model
from pytest_promptsuite.models.base import ModelRequest
from pytest_promptsuite.models.base import Response
from pytest_promptsuite.models.cache import cache_key
from pytest_promptsuite.models.cache import model_identity
from pytest_promptsuite.models.spend import NotIssued
from pytest_promptsuite.safety.scrub import scrub_cut


class NotSent(NotIssued):
    """The call was written to a batch request file (``--prompt-batch-file``), not sent."""


class _Batchable(Protocol):
    """A model whose requests can go in a batch file (:class:`~.openai.OpenAIModel`)."""

    def _url_and_body(self, request: ModelRequest) -> tuple[str, dict[str, Any]]: ...

    def _parse(self, content: bytes, where: str, latency_ms: float) -> Response: ...


def custom_id(identity: Mapping[str, Any], request: ModelRequest) -> str:
    """Return a request's id in a batch: its case id and 16 hex digits of its cache key."""
    return f"{request.case_id or 'call'}#{cache_key(identity, request)[:16]}"


@dataclass(frozen=True)
class BatchLine:
    """One request of a batch file."""

    custom_id: str
    url: str
    body: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """Return the line as the Batch API reads it."""
        return {"custom_id": self.custom_id, "method": "POST", "url": self.url, "body": self.body}


class BatchAnswers:
    """A model with I/O whose calls the run's batch answered get that answer (or its error); any other
    (a later turn of a multi-turn case) is sent as usual."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.spec = inner.spec
        self.identity = model_identity(inner)
        #: The batch's answer for each ``custom_id``.
        self.answers: dict[str, Response | ModelError] = {}

    def __repr__(self) -> str:
        return f"BatchAnswers({self.inner!r})"

    def __getattr__(self, name: str) -> Any:  # cache_identity, deterministic, aclose ...
        return getattr(self.inner, name)

    @property
    def batchable(self) -> bool:
        """Whether requests of this model can go in a batch file (an OpenAI-compatible model)."""
        return callable(getattr(self.inner, "_url_and_body", None))

    def line(self, request: ModelRequest) -> BatchLine:
        """Return the batch file's line for ``request``: the endpoint's path from ``/v1`` and the body."""
        model: _Batchable = self.inner  # type: ignore[assignment]
        url, body = model._url_and_body(request)
        base = str(getattr(self.inner, "_path", ""))
        path = url[len(base) :] if base and url.startswith(base) else "/" + url.split("/", 3)[-1]
        return BatchLine(custom_id(self.identity, request), "/v1" + path.split("?")[0], body)

    def answer(self, raw: Mapping[str, Any], where: str) -> Response:
        """Read a Batch API output line's ``response``; an EndpointError if it failed."""
        status = raw.get("status_code")
        body = raw.get("body")
        if status != 200 or not isinstance(body, dict):
            error = body.get("error") if isinstance(body, dict) else None
            text = error.get("message") if isinstance(error, dict) else None
            raise EndpointError(
                f"HTTP {status} in {where}: {text or scrub_cut(encode(body, scrub=False), 500).text}",
                status=status if isinstance(status, int) else None,
            )
        model: _Batchable = self.inner  # type: ignore[assignment]
        response = model._parse(encode(body, scrub=False).encode("utf-8"), where, 0.0)
        return Response(response.text, response.finish_reason, response.usage, latency_ms=None)

    async def generate(self, request: ModelRequest) -> Response:
        """Return the batch's answer for ``request``, else the inner model's."""
        if self.answers:
            found = self.answers.get(custom_id(self.identity, request))
            if isinstance(found, ModelError):
                # a copy: the shared one would keep every call's frames alive on its traceback
                raise copy.copy(found).with_traceback(None)
            if found is not None:
                return found
        return await self.inner.generate(request)


def write_requests(path: Path, lines: Iterable[BatchLine]) -> None:
    """Write a batch request file (JSONL, scrubbed)."""
    try:
        with jsonlines.open(path, "w", dumps=functools.partial(encode, compact=True)) as out:
            out.write_all(line.to_dict() for line in lines)
    except OSError as exc:
        raise ConfigError(f"--prompt-batch-file {path}: cannot write ({exc.strerror or exc})") from exc


def read_outputs(data: bytes, where: str) -> dict[str, dict[str, Any]]:
    """Read a Batch API output (or error) file's lines by ``custom_id``."""
    found: dict[str, dict[str, Any]] = {}
    for line in read_jsonl(data, strict=False):
        value = line.value
        if line.problem is not None or not isinstance(value, dict) or not isinstance(value.get("custom_id"), str):
            raise ConfigError(f"{where}:{line.number}: not a batch output line ({line.problem or 'no custom_id'})")
        found[value["custom_id"]] = value
    return found


def answers_from(
    answers: BatchAnswers, wanted: Iterable[str], outputs: Mapping[str, Mapping[str, Any]], where: str, missing: str
) -> dict[str, Response | ModelError]:
    """Return each wanted ``custom_id``'s answer from output lines; ``missing`` says why one has none."""
    found: dict[str, Response | ModelError] = {}
    for ident in wanted:
        raw = outputs.get(ident)
        if raw is None:
            found[ident] = EndpointError(f"no answer for {ident} in {where}: {missing}")
            continue
        error = raw.get("error")
        response = raw.get("response")
        try:
            if isinstance(response, dict):
                found[ident] = answers.answer(response, where)
            else:
                message = error.get("message") if isinstance(error, dict) else error
                code = error.get("code") if isinstance(error, dict) else None
                found[ident] = EndpointError(f"{where}: {code + ': ' if code else ''}{message or 'failed'}")
        except ModelError as exc:
            found[ident] = exc
    return found
