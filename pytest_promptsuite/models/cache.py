"""The response stores around an async model: the response cache (a folder of answers) and
cassettes (a committed JSONL file, recorded and replayed), both keyed by :func:`cache_key`."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonlines

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import ModelError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.formats.jsonl import appender
from pytest_promptsuite.formats.jsonl import read_jsonl
from pytest_promptsuite.models.model_api import Model
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.model_api import Response
from pytest_promptsuite.models.model_api import Usage
from pytest_promptsuite.models.tool_calls import calls_from_dicts
from pytest_promptsuite.safety.scrub import scrub


#: Part of every key: bump it when the key's inputs or an entry's meaning change.
CACHE_FORMAT_VERSION = 1
#: The response cache's folder, in the folder the run was invoked from, unless ``--prompt-cache`` names one.
DEFAULT_CACHE_DIR = ".promptsuite_cache"
#: What a key hashes (one encoder: ``json.dumps`` with arguments builds one a call).
_KEYED = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
#: How a cassette writes an entry: sorted keys (reviewable diffs), scrubbed.
_ENTRY = functools.partial(encode, sort_keys=True)
#: Why an answer is kept in no file: scrubbed, the checks of a hit or a replay would see another answer.
WITHHELD = (
    "the answer held credential-like text (a key, a URL's user:password@, a Bearer token or a key-like query "
    "parameter), which no file keeps, and a replay must not check a scrubbed copy"
)


def model_identity(model: Model) -> dict[str, Any]:
    """Return the model part of a key: ``cache_identity()`` where the model has one, else its spec."""
    identity = getattr(model, "cache_identity", None)
    if callable(identity):
        return dict(identity())
    return {"model": model.spec}


def cache_key(identity: Mapping[str, Any], request: ModelRequest) -> str:
    """Return the content address of one answer (sha256 hex); nothing secret goes into it."""
    data = {
        "format_version": CACHE_FORMAT_VERSION,
        "identity": dict(identity),
        "prompt": request.prompt,
        "params": dict(request.params),
        "repeat": request.repeat,
    }
    if request.salt:  # only then: the keys of every other call stay as they were
        data["salt"] = request.salt
    return hashlib.sha256(_KEYED.encode(data).encode("utf-8", "surrogatepass")).hexdigest()


def _response_dict(response: Response) -> dict[str, Any]:
    stored: dict[str, Any] = {
        "text": response.text,
        "finish_reason": response.finish_reason,
        "usage": response.usage.to_dict() if response.usage else None,
        "latency_ms": response.latency_ms,
    }
    if response.tool_calls:  # only then: the entries of answers without calls stay as they were
        stored["tool_calls"] = [call.to_dict() for call in response.tool_calls]
    if response.model is not None:  # likewise: the entries of answers that name no model stay as they were
        stored["model"] = response.model
    return stored


def _verbatim(stored: Mapping[str, Any]) -> bool:
    """Tell whether an answer as a file keeps it (:func:`_response_dict`) passes the scrubber unchanged:
    only then does a cache hit or a replay give the checks what the model said."""
    text = encode(stored, scrub=False)
    return scrub(text) == text


def _response_from(raw: Mapping[str, Any]) -> Response:
    """Return a stored answer as a cache hit: ``cached=True`` and no latency."""
    usage = raw.get("usage")
    if not isinstance(raw["text"], str):
        raise TypeError("its 'text' is not a string")
    usage = (
        Usage(usage.get("prompt_tokens"), usage.get("completion_tokens"), usage.get("total_tokens"))
        if isinstance(usage, dict)
        else None
    )
    calls = calls_from_dicts(raw["tool_calls"]) if "tool_calls" in raw else ()
    served = raw.get("model")
    return Response(
        raw["text"],
        raw.get("finish_reason"),
        usage,
        latency_ms=None,
        cached=True,
        tool_calls=calls,
        model=served if isinstance(served, str) else None,
    )


class ResponseCache:
    """A content-addressed folder of answers, ``ROOT/v1/ab/abcdef....json``, written atomically."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._folder = root / f"v{CACHE_FORMAT_VERSION}"
        self.stores = 0
        self.write_errors = 0
        #: Answers not stored because the scrubber would change them (:data:`WITHHELD`).
        self.withheld = 0
        self._ready = False

    def _path(self, key: str) -> Path:
        return self._folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> Response | None:
        """Return the stored answer for ``key`` as a cache hit, or None (a miss, or a file not ours)."""
        try:
            return _response_from(decode(self._path(key).read_bytes().decode("utf-8"), strict=False)["response"])
        except (OSError, ValueError, KeyError, TypeError):
            return None  # absent, or a half-written / foreign file: a miss, never a crash

    def put(self, key: str, response: Response, *, case_id: str = "") -> None:
        """Store an answer, unless it is empty (an empty answer is often a glitch) or not :func:`_verbatim`
        (it is asked again next time: a miss, never a scrubbed hit)."""
        if not response.text and not response.tool_calls:
            return
        stored = _response_dict(response)
        if not _verbatim(stored):
            self.withheld += 1
            return
        path = self._path(key)
        entry = {"format_version": CACHE_FORMAT_VERSION, "key": key, "case_id": case_id, "response": stored}
        try:
            self._prepare()
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        except OSError:  # a read-only checkout: the cache is an optimisation, never a failure
            self.write_errors += 1
            return
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(encode(entry))
            os.replace(tmp, path)
        except OSError:
            Path(tmp).unlink(missing_ok=True)
            self.write_errors += 1
            return
        self.stores += 1

    def _prepare(self) -> None:
        if self._ready:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        ignore = self.root / ".gitignore"
        if not ignore.exists():  # like .pytest_cache: never committed by accident
            ignore.write_text("# created by pytest-promptsuite\n*\n", encoding="utf-8")
        self._ready = True


class Cassette:
    """A committed JSONL file of answers, ``mode`` ``"record"`` or ``"replay"``; a recording goes to
    ``PATH.partial`` until :meth:`finalize`. An answer that is not :func:`_verbatim` is recorded as
    ``withheld`` (no ``response``): its replay is an error that says why."""

    def __init__(self, path: Path, mode: str) -> None:
        if mode not in ("record", "replay"):
            raise ValueError(mode)
        self.path = path
        self.partial = path.with_name(path.name + ".partial")
        self._entries = self._read(path) if mode == "replay" else {}
        self._fd: int | None = None
        self._writer: jsonlines.Writer | None = None

    @staticmethod
    def _read(path: Path) -> dict[str, dict[str, Any]]:
        entries: dict[str, dict[str, Any]] = {}
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ConfigError(f"--prompt-replay {path}: cannot read the cassette: {exc.strerror}") from exc
        for line in read_jsonl(data, strict=False):
            if line.problem is not None:
                raise ConfigError(f"{path}:{line.number}: not a cassette entry ({line.problem})")
            try:
                entry = line.value
                entries[entry["key"]] = entry
                if not isinstance(entry.get("withheld"), str):
                    _response_from(entry["response"])
            except (ValueError, KeyError, TypeError) as exc:
                what = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
                raise ConfigError(f"{path}:{line.number}: not a cassette entry ({what})") from exc
        return entries

    def start(self) -> None:
        """Begin a recording (once, before any pytest-xdist worker starts)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.partial.write_text("", encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"--prompt-record {self.path}: cannot write: {exc.strerror}") from exc

    def get(self, key: str) -> Response | None:
        """Return the recorded answer for ``key``, or None (none recorded, or :meth:`withheld`)."""
        entry = self._entries.get(key)
        return None if entry is None or self.withheld(key) else _response_from(entry["response"])

    def withheld(self, key: str) -> bool:
        """Tell whether the answer for ``key`` was recorded without its text (:data:`WITHHELD`)."""
        entry = self._entries.get(key)
        return entry is not None and isinstance(entry.get("withheld"), str)

    def add(self, key: str, request: ModelRequest, identity: Mapping[str, Any], response: Response) -> None:
        """Append one answer as one line in one ``write`` (safe with several writers)."""
        entry = {
            "key": key,
            "case_id": request.case_id,
            "repeat": request.repeat,
            "model": dict(identity),
            "prompt": request.prompt,
            "params": dict(request.params),
        }
        stored = _response_dict(response)
        if _verbatim(stored):
            entry["response"] = stored
        else:
            entry["withheld"] = WITHHELD
        try:
            if self._writer is None:
                self._fd = os.open(self.partial, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                self._writer = appender(self._fd, _ENTRY)
            self._writer.write(entry)
        except OSError as exc:
            raise ModelError(
                f"case {request.case_id}: --prompt-record {self.path}: cannot write: {exc.strerror}"
            ) from exc

    def close(self) -> None:
        """Close the recording's file (safe to call twice)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = self._writer = None

    def finalize(self) -> int:
        """Write the recording to ``PATH``, sorted by case, repeat and key, one line a key; return the
        count (0: nothing was recorded and ``PATH`` is left alone)."""
        self.close()
        entries = self._read(self.partial) if self.partial.exists() else {}
        self.partial.unlink(missing_ok=True)
        if not entries:
            return 0
        ordered = sorted(entries.values(), key=lambda e: (e.get("case_id", ""), e.get("repeat", 0), e["key"]))
        tmp = self.path.with_name(self.path.name + ".tmp")
        with jsonlines.open(tmp, "w", dumps=_ENTRY) as out:
            out.write_all(ordered)
        os.replace(tmp, self.path)
        return len(ordered)


@dataclass(frozen=True)
class ResponseStores:
    """Where answers are kept besides the endpoint: the response cache and the cassettes."""

    cache: ResponseCache | None = None
    replay: Cassette | None = None
    record: Cassette | None = None

    def __bool__(self) -> bool:
        return any((self.cache, self.replay, self.record))

    def close(self) -> None:
        """Close the cassettes' files (the cache holds none open)."""
        for cassette in (self.record, self.replay):
            if cassette is not None:
                cassette.close()


class CachingModel:
    """An async model behind the stores: a replayed answer, else a cached one, else a call (then stored).
    Only a model with a ``cache_identity()`` uses the cache (another may answer differently each run)."""

    def __init__(
        self,
        inner: Model,
        *,
        cache: ResponseCache | None = None,
        replay: Cassette | None = None,
        record: Cassette | None = None,
    ) -> None:
        self.inner = inner
        self.spec = inner.spec
        self.cache = cache if callable(getattr(inner, "cache_identity", None)) else None
        self.replay = replay
        self.record = record
        self.identity = model_identity(inner)

    def __repr__(self) -> str:
        return f"CachingModel({self.inner!r})"

    @property
    def deterministic(self) -> bool:
        """Replayed answers never vary; otherwise, as the inner model's."""
        return self.replay is not None or bool(getattr(self.inner, "deterministic", False))

    def stored(self, request: ModelRequest) -> bool:
        """Tell whether the call never reaches the model: replayed (or refused) by the cassette, or cached."""
        if self.replay is not None:
            return True
        return self.cache is not None and self.cache.get(cache_key(self.identity, request)) is not None

    async def generate(self, request: ModelRequest) -> Response:
        """Return a replayed answer, else a cached one, else the inner model's (stored and recorded)."""
        key, response = self.lookup(request)
        return response if response is not None else await self.fetch(request, key)

    def lookup(self, request: ModelRequest) -> tuple[str, Response | None]:
        """Return the request's key and its stored answer (replayed, or cached and then recorded) or None;
        a replay miss is a ModelError. The runner looks up on the main thread: the loop never waits for a file."""
        key = cache_key(self.identity, request)
        if self.replay is not None:
            return key, self._replayed(self.replay, key, request)
        response = self.cache.get(key) if self.cache is not None else None
        if response is not None and self.record is not None:
            self.record.add(key, request, self.identity, response)
        return key, response

    def _replayed(self, replay: Cassette, key: str, request: ModelRequest) -> Response:
        """Return the cassette's answer to a request; a ModelError when it holds none (withheld, or never
        recorded: the prompt, params or model changed)."""
        response = replay.get(key)
        if response is None and replay.withheld(key):
            raise ModelError(
                f"case {request.case_id or '?'}: the cassette {replay.path} holds no answer for this "
                f"call: {WITHHELD}; run this case against the endpoint (without --prompt-replay)"
            )
        if response is None:
            where = ", ".join(f"{k} {v}" for k, v in self.identity.items())
            raise ModelError(
                f"case {request.case_id or '?'}: no recorded response in the cassette "
                f"{replay.path} ({where}, repeat {request.repeat}); the prompt, params or "
                "model changed since it was recorded: record it again with --prompt-record"
            )
        return response

    async def fetch(self, request: ModelRequest, key: str) -> Response:
        """Return the inner model's answer to a request :meth:`lookup` found nothing for, stored and recorded."""
        response = await self.inner.generate(request)
        if self.cache is not None:
            self.cache.put(key, response, case_id=request.case_id)
        if self.record is not None:
            self.record.add(key, request, self.identity, response)
        return response

    async def aclose(self) -> None:
        """Close the inner model's connections."""
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()


class HeldCache(ResponseCache):
    """A :class:`ResponseCache` whose stores wait for :meth:`flush`, on the main thread: on the event
    loop's, every call in flight would wait for each file written."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self._held: deque[tuple[str, Response, str]] = deque()  # appended on the loop, taken on the main thread

    def put(self, key: str, response: Response, *, case_id: str = "") -> None:
        """Hold the answer until :meth:`flush`."""
        self._held.append((key, response, case_id))

    def flush(self) -> None:
        """Store the answers held so far."""
        while self._held:  # only this thread takes from it
            key, response, case_id = self._held.popleft()
            super().put(key, response, case_id=case_id)
