"""Batch requests and answers: a call as a line of a Batch API request file, the output file's lines
read back, and :class:`BatchAnswers`, the model layer that answers each call from them."""

from __future__ import annotations

import copy
import dataclasses
import functools
import re
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any
from typing import Protocol

import jsonlines

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import EndpointError
from pytest_promptsuite.errors import ModelError
from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.formats.jsonio import raw_decode
from pytest_promptsuite.formats.jsonl import read_jsonl
from pytest_promptsuite.models.cache import cache_key
from pytest_promptsuite.models.cache import model_identity
from pytest_promptsuite.models.model_api import Model
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.model_api import Response
from pytest_promptsuite.models.spend import NotIssued
from pytest_promptsuite.safety.scrub import registered
from pytest_promptsuite.safety.scrub import scrub_cut


#: How a batch line is written: compact, as a direct call encodes its body, and not scrubbed.
_LINE = functools.partial(encode, compact=True, scrub=False)


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
        return dataclasses.replace(response, latency_ms=None)

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


def write_requests(path: Path, lines: Iterable[BatchLine]) -> dict[str, ModelError]:
    """Write a batch request file (JSONL): each body the very bytes a direct call sends, never rewritten.
    A line that holds a registered secret (the API key) is left out: return each such line's error by ``custom_id``."""
    kept: list[dict[str, Any]] = []
    refused: dict[str, ModelError] = {}
    for line in lines:
        data = line.to_dict()
        text = _LINE(data)
        if any(secret in text for secret in registered()):
            refused[line.custom_id] = ModelError(
                f"the request holds a registered secret (the API key, or a key of the base URL): it is not "
                f"written to {path} (--prompt-batch-file), as no file ever holds one; take it out of the prompt "
                "and params"
            )
        else:
            kept.append(data)
    try:
        with jsonlines.open(path, "w", dumps=_LINE) as out:
            out.write_all(kept)
    except OSError as exc:
        raise ConfigError(f"--prompt-batch-file {path}: cannot write ({exc.strerror or exc})") from exc
    return refused


@dataclass
class BatchOutputs:
    """The lines of a job's output and error files (or a results file) by ``custom_id``, where each
    ``custom_id`` was answered (``file:line``), and the lines that could not be read, kept aside."""

    lines: dict[str, dict[str, Any]] = field(default_factory=dict)
    places: dict[str, list[str]] = field(default_factory=dict)
    #: What is wrong with each unreadable line (``file:line: ...``).
    unreadable: list[str] = field(default_factory=list)
    #: The unreadable line of each ``custom_id`` one names, and the unreadable lines that name none.
    named: dict[str, str] = field(default_factory=dict)
    unnamed: list[str] = field(default_factory=list)

    def read(self, data: bytes, where: str) -> BatchOutputs:
        """Add a file's lines; a line that is not a batch output line goes to ``unreadable``, the others stay."""
        for line in read_jsonl(data, strict=False):
            value = line.value
            place = f"{where}:{line.number}"
            if line.problem is None and isinstance(value, dict) and isinstance(value.get("custom_id"), str):
                self.lines.setdefault(value["custom_id"], value)
                self.places.setdefault(value["custom_id"], []).append(place)
                continue
            problem = f"{place}: not a batch output line ({line.problem or 'no custom_id'})"
            self.unreadable.append(problem)
            ident = _named_id(data[line.start : line.end].decode("utf-8", "replace"))
            if ident is None:
                self.unnamed.append(problem)
            else:
                self.named.setdefault(ident, problem)
                self.places.setdefault(ident, []).append(place)
        return self


def _named_id(text: str) -> str | None:
    """Return the ``custom_id`` an unreadable line still names whole, if it does."""
    found = _CUSTOM_ID.search(text)
    if found is None:
        return None
    try:
        ident, _ = raw_decode(text, found.end())
    except JsonError:
        return None
    return ident if isinstance(ident, str) else None


_CUSTOM_ID = re.compile(r'"custom_id"\s*:\s*(?=")')


def read_outputs(data: bytes, where: str) -> BatchOutputs:
    """Read a Batch API output (or error) file's lines by ``custom_id``."""
    return BatchOutputs().read(data, where)


def answers_from(
    answers: BatchAnswers, wanted: Iterable[str], outputs: BatchOutputs, where: str, missing: str
) -> dict[str, Response | ModelError]:
    """Return each wanted ``custom_id``'s answer from output lines; ``missing`` says why one has none. A
    ``custom_id`` on more than one line has none, nor has one on an unreadable line (the error names it)."""
    if outputs.unnamed:
        more = f" (and {len(outputs.unnamed) - 1:,} more)" if len(outputs.unnamed) > 1 else ""
        missing = f"{missing}; or its line could not be read: {outputs.unnamed[0]}{more}"
    return {ident: _answer_of(answers, ident, outputs, where, missing) for ident in wanted}


def _answer_of(
    answers: BatchAnswers, ident: str, outputs: BatchOutputs, where: str, missing: str
) -> Response | ModelError:
    """Return one ``custom_id``'s answer, or the error that says why it has none."""
    raw = outputs.lines.get(ident)
    places = outputs.places.get(ident, [])
    if len(places) > 1:
        times = "twice" if len(places) == 2 else f"{len(places)} times"
        return EndpointError(f"{ident} answered {times} in {_listed(places)}")
    if raw is None:
        problem = outputs.named.get(ident)
        return EndpointError(f"no answer for {ident}{f': {problem}' if problem else f' in {where}: {missing}'}")
    try:
        return _line_answer(answers, raw, where)
    except ModelError as exc:
        return exc


def _line_answer(answers: BatchAnswers, raw: dict[str, Any], where: str) -> Response | ModelError:
    """Return an output line's answer: its ``response``, else its ``error``."""
    error = raw.get("error")
    response = raw.get("response")
    if isinstance(response, dict):
        return answers.answer(response, where)
    message = error.get("message") if isinstance(error, dict) else error
    code = error.get("code") if isinstance(error, dict) else None
    return EndpointError(f"{where}: {code + ': ' if code else ''}{message or 'failed'}")


def _listed(items: list[str]) -> str:
    """Join ``a, b and c``."""
    return " and ".join([", ".join(items[:-1]), items[-1]]) if len(items) > 1 else "".join(items)
