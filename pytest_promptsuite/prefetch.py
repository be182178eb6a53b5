"""Starts the model calls of the cases pytest will run next, so serial items mean parallel calls.

pytest runs one item at a time. Before an item runs, :meth:`Prefetcher.advance` starts the calls
of the items that follow it, up to ``window`` items ahead; the runner's concurrency bound decides
how many are in flight, and the window (a few times that bound) keeps the bound full. The items
ahead are, in a serial run, the rest of ``session.items``; in a pytest-xdist worker, the indices
the controller has already sent to that worker (its own queue), so a worker never calls the model
for another worker's case. This module only sees items as opaque objects: the plugin passes a
``start(item)`` callback that knows how to make a case's request.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence
from typing import Any


__all__ = ["Prefetcher", "xdist_queue"]

#: Returns up to ``n`` items the process will run next (after the current one).
Upcoming = Callable[[int], list[Any]]


class Prefetcher:
    """Keeps the calls of the next ``window`` items started."""

    def __init__(self, start: Callable[[Any], None], *, window: int) -> None:
        self._start = start
        self.window = max(1, window)
        self._order: list[Any] = []
        self._position: dict[int, int] = {}
        self._cursor = 0
        self._queue: Upcoming | None = None
        self._started: set[int] = set()

    def plan(self, items: Sequence[Any]) -> None:
        """A serial run: the items run in this order."""
        self._order = list(items)
        self._position = {id(item): i for i, item in enumerate(self._order)}
        self._cursor = 0
        self._queue = None

    def follow(self, upcoming: Upcoming) -> None:
        """A pytest-xdist worker: the items ahead are whatever its queue holds right now."""
        self._queue = upcoming

    def start(self) -> None:
        """The run is known: start the first window of a serial run's calls (a worker's queue is
        still empty then; its calls start as items arrive)."""
        if self._queue is None and self._order:
            self.advance(self._order[0], None)

    def advance(self, item: Any, nextitem: Any | None) -> None:
        """``item`` is about to run: make sure its call and those of the window after it started."""
        if self._queue is not None:
            ahead = [item, *([nextitem] if nextitem is not None else []), *self._queue(self.window)]
            for other in ahead:
                if id(other) not in self._started:
                    self._started.add(id(other))
                    self._start(other)
            return
        position = self._position.get(id(item))
        if position is None:  # not planned (a plugin reordered after collection): just this one
            self._start(item)
            return
        if self._cursor - position > self.window // 2:
            return  # top up in halves: fewer, larger batches of calls to start
        end = min(len(self._order), position + self.window)
        for index in range(max(self._cursor, position), end):
            self._start(self._order[index])
        self._cursor = max(self._cursor, end)


def xdist_queue(plugins: Iterable[object], items: Sequence[Any]) -> Upcoming | None:
    """A peek into a pytest-xdist worker's queue of item indices, or None outside a worker.

    pytest-xdist has no public API for this: its ``WorkerInteractor`` keeps the indices the
    controller sent in ``torun`` (a deque behind ``torun.lock()``). If that shape changes, the
    caller falls back to prefetching ``nextitem`` only.
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
