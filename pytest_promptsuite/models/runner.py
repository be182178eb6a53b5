"""Runs model calls: inline for models without I/O, else on one event loop in a background thread, at most
``concurrency`` in flight per model and started ahead of the items pytest runs next."""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import functools
import threading
import weakref
from collections.abc import Callable
from collections.abc import Coroutine
from collections.abc import Hashable
from collections.abc import Iterable
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import TypeVar

from pytest_promptsuite.config.settings import DEFAULT_BATCH_TIMEOUT_S
from pytest_promptsuite.config.settings import DEFAULT_CONCURRENCY
from pytest_promptsuite.config.tables import Prices
from pytest_promptsuite.errors import EndpointError
from pytest_promptsuite.errors import ModelError
from pytest_promptsuite.models.cache import CachingModel
from pytest_promptsuite.models.cache import HeldCache
from pytest_promptsuite.models.cache import ResponseStores
from pytest_promptsuite.models.model_api import Model
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.model_api import Response
from pytest_promptsuite.models.model_api import is_sync
from pytest_promptsuite.models.spend import Allowance
from pytest_promptsuite.models.spend import BudgetedModel


if TYPE_CHECKING:
    import asyncio

    from pytest_promptsuite.models.batch.requests import BatchAnswers
    from pytest_promptsuite.models.concurrency import AdaptiveConcurrency


T = TypeVar("T")
_PrefetchKey = tuple[int, Hashable]
#: What the loop runs for one call: the model (its bound), the call, the future it settles.
_Call = Callable[[], Coroutine[Any, Any, Response]]
_Pending = tuple[Model, _Call, "concurrent.futures.Future[Response]"]


@dataclasses.dataclass(frozen=True)
class Attached:
    """The layers of a model with I/O, outermost first: the response stores (if any), the run's
    batch answers (batch mode), the budget, the model itself."""

    outer: Model
    caching: CachingModel | None
    answers: BatchAnswers | None
    budget: BudgetedModel


def _threadsafe(coro: Coroutine[Any, Any, T], loop: asyncio.AbstractEventLoop) -> concurrent.futures.Future[T]:
    """Start ``coro`` on ``loop`` (another thread's), as a future this thread can wait on."""
    import asyncio

    return asyncio.run_coroutine_threadsafe(coro, loop)


def _batch_answers(model: Model) -> BatchAnswers:
    """Answer ``model``'s calls from the run's batch job (a batch run imports the batch modules, no other)."""
    from pytest_promptsuite.models.batch.requests import BatchAnswers

    return BatchAnswers(model)


def _cancelled() -> BaseException:
    """Return the error that ends a task as cancelled (asyncio is loaded by then: the loop runs)."""
    import asyncio

    return asyncio.CancelledError()


def _semaphore(limit: int) -> asyncio.Semaphore:
    import asyncio

    return asyncio.Semaphore(limit)


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


def _cancel_task(
    loop: asyncio.AbstractEventLoop, task: asyncio.Task[Response], future: concurrent.futures.Future[Response]
) -> None:
    if future.cancelled() and not loop.is_closed():
        loop.call_soon_threadsafe(task.cancel)


class ModelRunner:
    """One event loop in a daemon thread, shared by every model of a run."""

    def __init__(self, concurrency: int = DEFAULT_CONCURRENCY, *, workers: int = 1) -> None:
        self.concurrency = concurrency
        #: pytest-xdist workers running a runner each: an adaptive bound spaces its attempts by their number.
        self.workers = workers
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._limits: dict[int, int] = {}
        self._semaphores: dict[int, asyncio.Semaphore | AdaptiveConcurrency] = {}
        #: The adaptive bound of each model attached with ``adaptive`` (``concurrency = "auto"``).
        self.adaptive: dict[int, AdaptiveConcurrency] = {}
        self._models: dict[int, Model] = {}
        self._io_models: dict[int, Model] = {}
        self._unusable: dict[int, EndpointError] = {}
        self._prefetched: dict[_PrefetchKey, tuple[ModelRequest, concurrent.futures.Future[Response]]]
        self._prefetched = {}
        #: The calls that passed the bound (sent to the endpoint), whatever became of them.
        self._sent: weakref.WeakSet[concurrent.futures.Future[Response]] = weakref.WeakSet()
        #: The calls released before they passed the bound: none of them passes it after (see :meth:`release`).
        self._withheld: weakref.WeakSet[concurrent.futures.Future[Response]] = weakref.WeakSet()
        self._batch: list[_Pending] | None = None
        self._submitted = 0  # written by the main thread only
        self._finished = 0  # written by the loop thread only
        #: The first fatal error of any model (the plugin stops the run on it).
        self.fatal: EndpointError | None = None
        self.prefetch_hits = 0
        #: What the run may still spend (``--prompt-max-calls``, each model's ``budget_usd``).
        self.allowance = Allowance()
        #: Each model with I/O as :meth:`attach` layered it, by the id of what it returned.
        self.attached: dict[int, Attached] = {}
        self._held: list[HeldCache] = []

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        import asyncio  # a run whose models all answer inline never starts a loop, nor imports asyncio

        if self._loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="promptsuite-models", daemon=True)
            thread.start()
            self._loop, self._thread = loop, thread
        return self._loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the background loop and wait for its result."""
        return _threadsafe(coro, self._ensure_loop()).result()

    def set_concurrency(self, model: Model, limit: int) -> None:
        """Allow at most ``limit`` calls of ``model`` in flight, and as many connections (``limit_connections``)."""
        if limit < 1:
            raise ValueError("concurrency must be at least 1")
        self._limits[id(model)] = limit
        attached = self.attached.get(id(model))
        pool = getattr(attached.budget.inner if attached is not None else model, "limit_connections", None)
        if callable(pool):
            pool(limit)

    def limit(self, model: Model) -> int:
        """Return how many calls of ``model`` may be in flight at once."""
        return self._limits.get(id(model), self.concurrency)

    def attach(
        self,
        model: Model,
        *,
        concurrency: int | None = None,
        stores: ResponseStores | None = None,
        prefetched: bool = True,
        batch: bool = False,
        budget_usd: float | None = None,
        prices: Prices | None = None,
        adaptive: bool = False,
    ) -> Model:
        """Return ``model`` as the run calls it: a model without I/O as it is, called inline.

        Any other goes within the run's budget (:mod:`.spend`), answered from the batch job when ``batch``, behind
        the response ``stores``, with at most ``concurrency`` calls in flight (``adaptive``: at most that, the bound
        found by :class:`.AdaptiveConcurrency` from the answers of a model that takes them, ``pace``).
        ``prefetched``: the cases' own model, whose calls start ahead (a judge's calls start when a check needs them).
        """
        if is_sync(model):
            return model  # answers at once: nothing to cache, bound or wait for
        budgeted = BudgetedModel(model, self.allowance, budget_usd=budget_usd, prices=prices)
        answers = _batch_answers(budgeted) if batch else None
        outer: Model = answers or budgeted
        caching = self._caching(outer, stores) if stores else None
        if caching is not None:
            outer = caching
        self.attached[id(outer)] = Attached(outer, caching, answers, budgeted)
        self.set_concurrency(outer, self.concurrency if concurrency is None else concurrency)
        if adaptive:
            self._adapt(model, outer)
        if prefetched:
            self._io_models[id(outer)] = outer
        return outer

    def _caching(self, outer: Model, stores: ResponseStores) -> CachingModel:
        """Put the response stores in front of ``outer`` (the cache's answers stored by the main thread,
        ``flush_stores``, not the loop's)."""
        cache = None
        if stores.cache is not None:
            cache = HeldCache(stores.cache.root)
            self._held.append(cache)
        return CachingModel(outer, cache=cache, replay=stores.replay, record=stores.record)

    def _adapt(self, model: Model, outer: Model) -> None:
        """Bound ``outer``'s calls adaptively: ``model`` paces its own attempts (retries too) when it can, else
        the bound holds its calls at their start (no answer moves it)."""
        from pytest_promptsuite.models.concurrency import AdaptiveConcurrency  # concurrency = "auto" only

        bound = self.adaptive[id(outer)] = AdaptiveConcurrency(self.limit(outer), workers=self.workers)
        retry = getattr(model, "retry", None)
        bound.max_pause_s = getattr(retry, "max_retry_after_s", bound.max_pause_s)
        pace = getattr(model, "pace", None)
        if callable(pace):
            pace(bound)
        else:
            self._semaphores[id(outer)] = bound

    def prefetch_window(self) -> int:
        """Return how many items ahead to start calls for: a few times the largest concurrency bound of
        the models with I/O, 0 when every model answers inline (nothing to prefetch)."""
        if not self._io_models:
            return 0
        return 4 * max(self.limit(model) for model in self._io_models.values())

    async def _bounded(
        self, model: Model, call: _Call, future: concurrent.futures.Future[Response] | None = None
    ) -> Response:
        ident = id(model)
        semaphore = self._semaphores.get(ident)
        if semaphore is None:
            semaphore = self._semaphores[ident] = _semaphore(self.limit(model))
        self._check_usable(ident)
        async with semaphore:
            self._check_usable(ident)
            if future is not None:
                if future in self._withheld:  # released while it waited: never sent (it is counted as saved)
                    raise _cancelled()
                self._sent.add(future)  # on its way to the endpoint: made, even if cancelled now
            try:
                return await call()
            except EndpointError as exc:
                if exc.fatal and ident not in self._unusable:
                    self._unusable[ident] = exc
                    if self.fatal is None:
                        self.fatal = exc
                raise

    def call_counts(self) -> dict[str, dict[str, Any]]:
        """Return, per model spec, its bound and what its calls met: ``concurrency`` (a number, or ``auto`` with
        ``max_concurrency``), ``reached`` (the most calls in flight, auto only), ``attempts`` and ``refused`` (429s)."""
        counts: dict[str, dict[str, Any]] = {}
        for ident, layers in self.attached.items():
            inner = layers.budget.inner
            attempts = getattr(inner, "attempts", None)
            if not isinstance(attempts, int) or layers.answers is not None:
                continue  # no count of its attempts, or answered by a batch job
            spec = str(getattr(inner, "spec", type(inner).__name__))
            bound = self.adaptive.get(ident)
            entry = counts.setdefault(spec, {"attempts": 0, "refused": 0})
            entry["attempts"] += attempts
            entry["refused"] += getattr(inner, "refused", 0)
            entry["unreadable_usage"] = entry.get("unreadable_usage", 0) + getattr(inner, "unreadable_usage", 0)
            if bound is None:
                entry["concurrency"] = self.limit(layers.outer)
            else:
                entry.update(concurrency="auto", max_concurrency=bound.ceiling)
                entry["reached"] = max(entry.get("reached", 0), bound.reached)
        return counts

    def _check_usable(self, ident: int) -> None:
        first = self._unusable.get(ident)
        if first is not None:
            raise EndpointError(f"skipped call: endpoint unusable: {first}", status=first.status, fatal=True)

    def submit(self, model: Model, request: ModelRequest) -> concurrent.futures.Future[Response]:
        """Start a call on the loop; its future resolves to the response or the ModelError.

        Cancelling the future cancels the call. Inside :meth:`batch_submits` the call starts when the
        batch ends, together with the others (one wake-up of the loop thread for all).
        """
        self._models.setdefault(id(model), model)
        future: concurrent.futures.Future[Response] = concurrent.futures.Future()
        call = self._call_of(model, request, future)
        if call is None:
            return future
        self._submitted += 1
        if self._batch is not None:
            self._batch.append((model, call, future))
        else:
            self._ensure_loop().call_soon_threadsafe(self._spawn, [(model, call, future)])
        return future

    def _call_of(
        self, model: Model, request: ModelRequest, future: concurrent.futures.Future[Response]
    ) -> _Call | None:
        """Return what the loop runs for ``request``, the response stores' lookup made here.
        A call that needs no loop (a cache hit, a replay miss, an endpoint already unusable) settles ``future`` at
        once, and None is returned.
        """
        attached = self.attached.get(id(model))
        if attached is None or attached.caching is None:
            return functools.partial(model.generate, request)
        try:
            self._check_usable(id(model))
            key, stored = attached.caching.lookup(request)
        except ModelError as exc:
            future.set_exception(exc)
            return None
        if stored is not None:
            future.set_result(stored)
            return None
        return functools.partial(attached.caching.fetch, request, key)

    @contextlib.contextmanager
    def batch_submits(self) -> Iterator[None]:
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
        """Start one task per call on the loop, tied to its future both ways (result, cancel)."""
        loop = self._loop
        assert loop is not None
        for model, call, future in pending:
            if future.cancelled():
                self._finished += 1
                continue
            task = loop.create_task(self._bounded(model, call, future))
            task.add_done_callback(functools.partial(self._settle, future))
            future.add_done_callback(functools.partial(_cancel_task, loop, task))

    def _settle(self, future: concurrent.futures.Future[Response], task: asyncio.Task[Response]) -> None:
        self._finished += 1
        _settle(future, task)

    def unfinished(self) -> int:
        """Return how many calls were submitted and are not answered (nor cancelled) yet."""
        return self._submitted - self._finished

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
        finally:
            self.flush_stores()

    def flush_stores(self) -> None:
        """Write the answers the response cache holds (on the main thread: see :class:`HeldCache`)."""
        for cache in self._held:
            cache.flush()

    def batch(
        self,
        calls: Iterable[tuple[Model, ModelRequest]],
        *,
        write_to: Path | None = None,
        results: Path | None = None,
        progress: Callable[[str], None] | None = None,
        time_limit_s: float = DEFAULT_BATCH_TIMEOUT_S,
    ) -> int:
        """Answer ``calls`` in batch mode before the cases run; return how many requests were batched.

        A job per model and endpoint (each cancelled past ``time_limit_s``), a results file (``results``), or
        none (``write_to``: the request file is written, and each call then ends as not sent).
        """
        from pytest_promptsuite.models.batch.dispatch import answer_in_batches

        return answer_in_batches(
            self.attached,
            self.allowance,
            calls,
            write_to=write_to,
            results=results,
            progress=progress,
            time_limit_s=time_limit_s,
            submit=lambda coro: _threadsafe(coro, self._ensure_loop()),
        )

    def release(self, unused: Callable[[Hashable], bool]) -> list[Hashable]:
        """Cancel the prefetched calls whose key is ``unused`` (cases that will not run); return the keys of
        those that had reached the endpoint already (made, and paid for)."""
        released = [(slot[1], self._prefetched.pop(slot)[1]) for slot in list(self._prefetched) if unused(slot[1])]
        reached = self._withhold(released) if released else []
        for _, future in released:
            future.cancel()
        return reached

    def _withhold(self, released: list[tuple[Hashable, concurrent.futures.Future[Response]]]) -> list[Hashable]:
        """Return the keys of the ``released`` calls that passed the bound, and keep the others from passing it:
        decided on the event loop, where a call passes the bound, so that a call counted as not made is never
        sent (a cancel from this thread reaches the loop later, and a call may pass the bound in between)."""

        async def withhold() -> list[Hashable]:
            self._withheld.update(future for _, future in released if future not in self._sent)
            return [key for key, future in released if future in self._sent]

        return _threadsafe(withhold(), self._ensure_loop()).result()

    def cancel_pending(self) -> int:
        """Cancel every prefetched call nobody collected (``-x``, Ctrl-C, end of run)."""
        cancelled = 0
        for _, future in self._prefetched.values():
            if future.cancel():
                cancelled += 1
        self._prefetched.clear()
        return cancelled

    def close(self) -> None:
        """Cancel what is pending, close the models' connections and stop the event loop; store
        the answers the cache holds."""
        self.cancel_pending()
        if self._loop is not None and self._thread is not None:
            models = {**self._models, **{ident: layers.outer for ident, layers in self.attached.items()}}
            for model in models.values():
                close = getattr(model, "aclose", None)
                if close is not None:
                    try:
                        _threadsafe(close(), self._loop).result(timeout=5)
                    except Exception:  # closing sockets must never mask the run's outcome
                        pass
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            self._loop.close()
            self._loop = self._thread = None
        self._models.clear()
        self.flush_stores()
