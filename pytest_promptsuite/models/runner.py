"""Runs model calls: inline for models without I/O, else on one background event loop.

The runner alone decides which: :meth:`ModelRunner.attach` takes every model of a run and
returns it as calls will reach it (an inline model as it is; a model with I/O behind the
response stores, with its concurrency bound). Calls to models with I/O run on one event loop in
a daemon thread, at most ``concurrency`` of them at once per model. The plugin starts calls for
the items pytest will reach next (:meth:`ModelRunner.prefetch`, keyed by the case's key); when an
item runs, :meth:`ModelRunner.call` hands it the future of that very request, so pytest running
items one by one never means calls made one by one.

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
from collections.abc import Hashable
from collections.abc import Iterator
from typing import Any
from typing import TypeVar

from ..errors import EndpointError
from .base import Model
from .base import ModelRequest
from .base import Response
from .base import is_sync
from .cache import CachingModel
from .cache import ResponseStores


__all__ = ["DEFAULT_CONCURRENCY", "ModelRunner"]

T = TypeVar("T")
DEFAULT_CONCURRENCY = 8
_PrefetchKey = tuple[int, Hashable]
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
        self._io_models: dict[int, Model] = {}
        self._unusable: dict[int, EndpointError] = {}
        self._prefetched: dict[_PrefetchKey, tuple[ModelRequest, concurrent.futures.Future[Response]]]
        self._prefetched = {}
        self._batch: list[_Pending] | None = None
        #: The first fatal error of any model (the plugin stops the run on it).
        self.fatal: EndpointError | None = None
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
        """How many calls of ``model`` may be in flight at once."""
        return self._limits.get(id(model), self.concurrency)

    def attach(self, model: Model, *, concurrency: int | None = None, stores: ResponseStores | None = None,
               prefetched: bool = True) -> Model:
        """``model`` as the run calls it: a model without I/O (``generate_sync``) as it is, called
        inline; any other behind the response ``stores`` (when there are any), with at most
        ``concurrency`` calls in flight (default: the runner's). ``prefetched``: the cases' own
        model, whose calls start ahead (a judge's calls start when a check needs them)."""
        if is_sync(model):
            return model  # answers at once: nothing to cache, bound or wait for
        if stores:
            model = CachingModel(model, cache=stores.cache, replay=stores.replay, record=stores.record)
        if concurrency is not None:
            self.set_concurrency(model, concurrency)
        if prefetched:
            self._io_models[id(model)] = model
        return model

    def prefetch_window(self) -> int:
        """How many items ahead to start calls for: a few times the largest concurrency bound of
        the models with I/O, 0 when every model answers inline (nothing to prefetch)."""
        if not self._io_models:
            return 0
        return 4 * max(self.limit(model) for model in self._io_models.values())

    # -- calls --------------------------------------------------------------------------------

    async def _bounded(self, model: Model, request: ModelRequest) -> Response:
        ident = id(model)
        semaphore = self._semaphores.get(ident)
        if semaphore is None:
            semaphore = self._semaphores[ident] = asyncio.Semaphore(self.limit(model))
        self._check_usable(ident)
        async with semaphore:
            self._check_usable(ident)
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

    def prefetch(self, model: Model, request: ModelRequest, *, key: Hashable) -> None:
        """Start the call that ``call(model, request, key=key)`` will want (``key`` names the
        case's run), unless it is started already; a no-op for an inline model."""
        if is_sync(model):
            return
        slot = (id(model), key)
        if slot not in self._prefetched:
            self._prefetched[slot] = (request, self.submit(model, request))

    def call(self, model: Model, request: ModelRequest, *, key: Hashable | None = None) -> Response:
        """Answer ``request`` with ``model``: inline without I/O, else the call prefetched for
        ``key`` with this very request (or a new one). Interrupted while waiting (Ctrl-C), the
        call is cancelled."""
        if is_sync(model):
            return model.generate_sync(request)
        found = self._prefetched.pop((id(model), key), None) if key is not None else None
        if found is not None and (found[0] is request or found[0] == request) and not found[1].cancelled():
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
        """Cancel what is pending, close the models' connections and stop the event loop."""
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
