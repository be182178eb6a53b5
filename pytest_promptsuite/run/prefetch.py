"""Start the model calls of the cases pytest will run next, so that serial items make parallel calls."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence
from typing import Any


#: How many windows ahead of the running item calls may start while the calls are ahead of the
#: cases (the answers waiting for their case are what this costs: a few KB each).
AHEAD = 16

#: Returns up to ``n`` items the process will run next (after the current one).
Upcoming = Callable[[int], list[Any]]


class Prefetcher:
    """Keeps the calls of the next ``window`` items started, and more while the calls are ahead.

    ``unfinished()`` counts the calls started and not answered yet (not given: the window alone);
    ``batch()`` holds back the calls started in its block until its end (one wake-up for them all).
    """

    def __init__(
        self,
        start: Callable[[Any], None],
        *,
        window: int,
        ahead: int | None = None,
        unfinished: Callable[[], int] | None = None,
        batch: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext,
    ) -> None:
        self._start = start
        self.window = max(1, window)
        #: At most this many windows of items ahead of the one running (default :data:`AHEAD`).
        self.ahead = AHEAD if ahead is None else max(1, ahead)
        self._unfinished = unfinished
        self._batch = batch
        self._chunk = max(1, self.window // 4)
        self._order: list[Any] = []
        self._position: dict[int, int] = {}
        self._cursor = 0
        self._queue: Upcoming | None = None
        self._started: set[int] = set()
        self._left: set[int] = set()  # items left out of the order: they start nothing

    def plan(self, items: Sequence[Any]) -> None:
        """Plan a serial run: the items run in this order."""
        self._order = list(items)
        self._position = {id(item): i for i, item in enumerate(self._order)}
        self._cursor = 0
        self._queue = None

    def leave_out(self, unwanted: Callable[[Any], bool], *, spent: int = 0) -> None:
        """Take the items that will make no call (a settled slice's) out of a serial run's order, so that the
        window ahead counts the others only; such an item still runs, and starts nothing. ``spent``: the calls
        started for them that reached the endpoint anyway; the window shrinks by as many, so that the calls made
        for cases that will not run stay within one window, however fast the calls are answered."""
        self.window = max(1, self.window - spent)
        if self._queue is not None:
            return
        kept = [item for item in self._order if not unwanted(item)]
        self._cursor = sum(1 for item in self._order[: self._cursor] if not unwanted(item))
        self._left.update(id(item) for item in self._order if unwanted(item))
        self._order = kept
        self._position = {id(item): i for i, item in enumerate(kept)}

    def follow(self, upcoming: Upcoming) -> None:
        """Follow a pytest-xdist worker's queue: the items ahead are whatever it holds right now."""
        self._queue = upcoming

    def start(self) -> None:
        """Start the first window of a serial run's calls (a worker's start as its items arrive)."""
        if self._queue is None and self._order:
            self.advance(self._order[0], None)

    def _starved(self) -> bool:
        """Tell whether fewer than half a window of calls are unfinished: the bound may soon run dry."""
        return self._unfinished is not None and self._unfinished() < self.window // 2

    def _start_chunk(self, items: Sequence[Any]) -> None:
        with self._batch():
            for item in items:
                self._start(item)

    def advance(self, item: Any, nextitem: Any | None) -> None:
        """Start the calls of ``item`` and the window after it (and more while :meth:`_starved`)."""
        if self._queue is not None:
            self._advance_queue(item, nextitem)
            return
        position = self._position.get(id(item))
        if id(item) in self._left:
            return
        if position is None:  # not planned (a plugin reordered after collection): just this one
            self._start_chunk([item])
            return
        # the window is topped up in halves: fewer, larger chunks of calls to start
        want = position + self.window if self._cursor - position <= self.window // 2 else 0
        limit = min(len(self._order), position + self.window * self.ahead)
        self._cursor = max(self._cursor, position)
        while self._cursor < limit and (self._cursor < want or self._starved()):
            end = min(limit, self._cursor + self._chunk)
            self._start_chunk(self._order[self._cursor : end])
            self._cursor = end

    def _advance_queue(self, item: Any, nextitem: Any | None) -> None:
        assert self._queue is not None
        count = self.window * (self.ahead if self._starved() else 1)
        ahead = [item, *([nextitem] if nextitem is not None else []), *self._queue(count)]
        fresh = []
        for other in ahead:
            if id(other) not in self._started:
                self._started.add(id(other))
                fresh.append(other)
        for index in range(0, len(fresh), self._chunk):
            self._start_chunk(fresh[index : index + self._chunk])


def xdist_queue(plugins: Iterable[object], items: Sequence[Any]) -> Upcoming | None:
    """Return a peek into a pytest-xdist worker's queue of item indices, or None outside a worker.

    pytest-xdist has no public API for this: its ``WorkerInteractor`` keeps the indices the controller
    sent in ``torun`` (a deque behind ``torun.lock()``). If that shape changes, only ``nextitem`` is prefetched.
    """
    for plugin in plugins:
        torun = getattr(plugin, "torun", None)
        lock = getattr(torun, "lock", None)
        if torun is None or not callable(lock):
            continue

        def upcoming(n: int, lock: Callable[[], Any] = lock) -> list[Any]:
            with lock() as queue:
                indices = list(itertools.islice(queue, n))
            return [items[i] for i in indices if isinstance(i, int) and 0 <= i < len(items)]

        return upcoming
    return None
