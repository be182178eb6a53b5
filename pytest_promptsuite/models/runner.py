"""Runs model calls: inline for models without I/O, else on one background event loop.

Calls to models with I/O run on one event loop in a daemon thread, at most ``concurrency`` of
them at once per model. The plugin starts calls for the items pytest will reach next
(:meth:`ModelRunner.prefetch`); when an item runs, :meth:`ModelRunner.call` hands it the future
of its own request, so pytest running items one by one never means calls made one by one.

A call that fails with a *fatal* :class:`~pytest_promptsuite.errors.EndpointError` (wrong base
URL, bad key) marks its model unusable: calls not yet sent fail at once with a short
"skipped call" error instead of each repeating the same failure.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import threading
from collections.abc import Coroutine
from collections.abc import Iterator
from typing import Any
from typing import TypeVar

from ..errors import EndpointError
from .base import Model
from .base import ModelRequest
from .base import Response
from .base import is_sync
from .base import prompt_hash


__all__ = ["DEFAULT_CONCURRENCY", "ModelRunner"]

T = TypeVar("T")
DEFAULT_CONCURRENCY = 8
_PrefetchKey = tuple[int, str, int, str]
_Pending = tuple[Model, ModelRequest, "concurrent.futures.Future[Response]"]


def _settle(future: concurrent.futures.Future[Response], task: asyncio.Task[Response]) -> None:
    """Copy a finished task's outcome to the future the main thread waits on."""
    if future.done():
        return
    try:
        if task.cancelled():
            future.cancel()
        elif task.exception() is not None:
            future.set_exception(task.exception())
        else:
            future.set_result(task.result())
    except concurrent.futures.InvalidStateError:  # cancelled by the main thread meanwhile
        pass


def _cancel_task(loop: asyncio.AbstractEventLoop, task: asyncio.Task[Response],
                 future: concurrent.futures.Future[Response]) -> None:
    if future.cancelled() and not loop.is_closed():
        loop.call_soon_threadsafe(task.cancel)


class ModelRunner:
    """One event loop in a daemon thread, shared by every model of a run."""

    def __init__(self, concurrency: int = DEFAULT_CONCURRENCY) -> None:
        self.concurrency = concurrency
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._limits: dict[int, int] = {}
        self._semaphores: dict[int, asyncio.Semaphore] = {}
        self._models: dict[int, Model] = {}
        self._unusable: dict[int, EndpointError] = {}
        self._prefetched: dict[_PrefetchKey, tuple[ModelRequest, concurrent.futures.Future[Response]]]
        self._prefetched = {}
        self._batch: list[_Pending] | None = None
        #: The first fatal error of any model (the plugin stops the run on it).
        self.fatal: EndpointError | None = None
        self.calls = 0
        self.prefetches = 0
        self.prefetch_hits = 0

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=loop.run_forever, name="promptsuite-models", daemon=True
            )
            thread.start()
            self._loop, self._thread = loop, thread
        return self._loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the background loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self._ensure_loop()).result()

    def set_concurrency(self, model: Model, limit: int) -> None:
        """At most ``limit`` calls of ``model`` in flight (default: the runner's ``concurrency``)."""
        if limit < 1:
            raise ValueError("concurrency must be at least 1")
        self._limits[id(model)] = limit

    def limit(self, model: Model) -> int:
        return self._limits.get(id(model), self.concurrency)

    # -- calls --------------------------------------------------------------------------------

    async def _bounded(self, model: Model, request: ModelRequest) -> Response:
        ident = id(model)
        semaphore = self._semaphores.get(ident)
        if semaphore is None:
            semaphore = self._semaphores[ident] = asyncio.Semaphore(self.limit(model))
        self._check_usable(ident)
        async with semaphore:
            self._check_usable(ident)
            self.calls += 1
            try:
                return await model.generate(request)
            except EndpointError as exc:
                if exc.fatal and ident not in self._unusable:
                    self._unusable[ident] = exc
                    if self.fatal is None:
                        self.fatal = exc
                raise

    def _check_usable(self, ident: int) -> None:
        first = self._unusable.get(ident)
        if first is not None:
            raise EndpointError(
                f"skipped call: endpoint unusable: {first}", status=first.status, fatal=True
            )

    def submit(self, model: Model, request: ModelRequest) -> concurrent.futures.Future[Response]:
        """Start a call on the loop; its future resolves to the response or the ModelError.

        Cancelling the future cancels the call. Inside :meth:`batch` the call starts when the
        batch ends, together with the others (one wake-up of the loop thread for all).
        """
        self._models.setdefault(id(model), model)
        future: concurrent.futures.Future[Response] = concurrent.futures.Future()
        if self._batch is not None:
            self._batch.append((model, request, future))
        else:
            self._ensure_loop().call_soon_threadsafe(self._spawn, [(model, request, future)])
        return future

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Collect the calls submitted in the block and start them at its end, at once."""
        outer = self._batch is not None
        if not outer:
            self._batch = []
        try:
            yield
        finally:
            if not outer:
                pending, self._batch = self._batch or [], None
                if pending:
                    self._ensure_loop().call_soon_threadsafe(self._spawn, pending)

    def _spawn(self, pending: list[_Pending]) -> None:
        """On the loop: one task per call, tied to its future both ways (result, cancel)."""
        loop = self._loop
        assert loop is not None
        for model, request, future in pending:
            if future.cancelled():
                continue
            task = loop.create_task(self._bounded(model, request))
            task.add_done_callback(functools.partial(_settle, future))
            future.add_done_callback(functools.partial(_cancel_task, loop, task))

    @staticmethod
    def _key(model: Model, request: ModelRequest) -> _PrefetchKey:
        return (id(model), request.case_id, request.repeat, prompt_hash(request.prompt))

    def prefetch(self, model: Model, request: ModelRequest) -> None:
        """Start the call ``call(model, request)`` will want, unless it is started already."""
        if is_sync(model):
            return
        key = self._key(model, request)
        if key not in self._prefetched:
            self._prefetched[key] = (request, self.submit(model, request))
            self.prefetches += 1

    def call(self, model: Model, request: ModelRequest) -> Response:
        """Answer ``request`` with ``model``: inline without I/O, else its prefetched call (or a
        new one). Interrupted while waiting (Ctrl-C), the call is cancelled."""
        if is_sync(model):
            return model.generate_sync(request)
        found = self._prefetched.pop(self._key(model, request), None)
        if found is not None and found[0] == request and not found[1].cancelled():
            future = found[1]
            self.prefetch_hits += 1
        else:
            if found is not None:
                found[1].cancel()
            batch, self._batch = self._batch, None  # waited for now: never held back by a batch
            try:
                future = self.submit(model, request)
            finally:
                self._batch = batch
        try:
            return future.result()
        except KeyboardInterrupt:
            self.cancel_pending()  # first, so no waiting call takes the freed slot
            future.cancel()
            raise

    def cancel_pending(self) -> int:
        """Cancel every prefetched call nobody collected (``-x``, Ctrl-C, end of run)."""
        cancelled = 0
        for _, future in self._prefetched.values():
            if future.cancel():
                cancelled += 1
        self._prefetched.clear()
        return cancelled

    def close(self) -> None:
        self.cancel_pending()
        if self._loop is not None and self._thread is not None:
            for model in self._models.values():
                close = getattr(model, "aclose", None)
                if close is not None:
                    try:
                        asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=5)
                    except Exception:  # closing sockets must never mask the run's outcome
                        pass
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            self._loop.close()
            self._loop = self._thread = None
        self._models.clear()
