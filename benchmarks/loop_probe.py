"""A pytest plugin for ``bench_endpoint.py --profile-loop``: where the calls' time goes in one run.

Loaded with ``-p loop_probe`` (``benchmarks/`` on ``PYTHONPATH``), it prints to stderr at the end:

- each thread's CPU seconds from the end of collection on (the main thread running the cases, the
  runner's ``promptsuite-models`` thread running the event loop), against the wall time: two
  threads share one GIL, so their sum near the wall time means the process was GIL-bound;
- the event loop's callbacks (every ``asyncio`` handle run on that thread): how many, their total
  time, the slowest, and how many took over 5 ms (the GIL's switch interval: a callback that long
  holds back every call waiting on the loop, as asyncio's debug mode ``slow_callback_duration``
  would warn);
- the event loop's lag: a timer due every 10 ms on the loop thread, and how late each one ran
  (median, 99th percentile, worst): how long an answer that arrived waits before the loop
  thread handles it, which is what the main thread's work costs the calls (holding the GIL);
- with the same timer, the calls started and not answered yet, until the last calls started: never
  below the concurrency bound means the prefetch always had a call waiting for a free slot (the
  bound never ran dry for lack of started calls);
- the cases whose call had already finished when pytest reached them, and how long the others
  waited (the main thread waiting means the calls are behind; not waiting means they are ahead),
  apart from the time it took storing answers in the response cache (``HeldCache``).
"""

from __future__ import annotations

import asyncio.events
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.models.runner import ModelRunner


_LOOP_THREAD = "promptsuite-models"
_callbacks: list[float] = []
_waits: list[float] = []
_ready = [0]
_stores: list[float] = []
_start: dict[str, float] = {}
_lags: list[float] = []
_unfinished: list[tuple[float, int]] = []  # (when, calls started and not answered)
_runners: list[ModelRunner] = []
_BEAT_S = 0.010
_run = asyncio.events.Handle._run
_call = ModelRunner.call
_flush = ModelRunner.flush_stores
_spawn = ModelRunner._spawn


def _timed_run(self: asyncio.events.Handle) -> None:
    if threading.current_thread().name != _LOOP_THREAD:
        _run(self)
        return
    begin = time.perf_counter()
    try:
        _run(self)
    finally:
        _callbacks.append(time.perf_counter() - begin)


def _timed_call(self: ModelRunner, model: Any, request: Any, *, key: Any = None) -> Any:
    found = self._prefetched.get((id(model), key))
    if found is not None and found[1].done():
        _ready[0] += 1
    begin = time.perf_counter()
    try:
        return _call(self, model, request, key=key)
    finally:
        _waits.append(time.perf_counter() - begin)


def _first_spawn(self: ModelRunner, pending: Any) -> None:
    if "spawned" not in _start:
        _start["spawned"] = time.monotonic()
        _runners.append(self)
        loop = self._loop
        assert loop is not None
        loop.call_later(_BEAT_S, _beat, self, loop.time() + _BEAT_S)
    _start["last_spawn"] = time.monotonic()
    _spawn(self, pending)


def _beat(runner: ModelRunner, due: float) -> None:
    """On the loop thread: how late this timer ran, the calls unfinished; the next beat."""
    loop = runner._loop
    assert loop is not None
    now = loop.time()
    _lags.append(now - due)
    _unfinished.append((time.monotonic(), runner.unfinished()))
    if "stop" not in _start:
        loop.call_at(now + _BEAT_S, _beat, runner, now + _BEAT_S)


def _timed_flush(self: ModelRunner) -> None:
    begin = time.perf_counter()
    try:
        _flush(self)
    finally:
        _stores.append(time.perf_counter() - begin)


asyncio.events.Handle._run = _timed_run  # type: ignore[method-assign]
ModelRunner.call = _timed_call  # type: ignore[method-assign]
ModelRunner.flush_stores = _timed_flush  # type: ignore[method-assign]
ModelRunner._spawn = _first_spawn  # type: ignore[method-assign]


def _thread_cpu(native_id: int | None) -> float | None:
    try:
        fields = Path(f"/proc/self/task/{native_id}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    import os

    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.hookimpl(tryfirst=True)  # before the plugin's own, which starts the first calls
def pytest_collection_finish() -> None:
    """Calls start now: the clocks start too."""
    _start["wall"], _start["main"] = time.monotonic(), time.thread_time()
    loop = next((t for t in threading.enumerate() if t.name == _LOOP_THREAD), None)
    _start["loop"] = (loop and _thread_cpu(loop.native_id)) or 0.0


def pytest_sessionfinish() -> None:
    """Print the figures (the runner's thread still runs: it closes at unconfigure)."""
    _start["stop"] = time.monotonic()
    lags = sorted(_lags) or [0.0]
    queued = sorted(n for when, n in _unfinished if when < _start.get("last_spawn", 0.0)) or [0]
    bound = max((r.limit(m) for r in _runners for m in r._io_models.values()), default=0)
    wall = time.monotonic() - _start.get("wall", time.monotonic())
    main = time.thread_time() - _start.get("main", 0.0)
    thread = next((t for t in threading.enumerate() if t.name == _LOOP_THREAD), None)
    loop_cpu = _thread_cpu(thread.native_id) if thread is not None else None
    loop = "not started" if loop_cpu is None else f"{loop_cpu - _start.get('loop', 0.0):.2f} s"
    slow = sorted(_callbacks)
    first = _start.get("spawned", 0.0) - _start.get("wall", 0.0)
    lines = [
        f"    from the end of collection: wall {wall:.2f} s; CPU: main thread {main:.2f} s, event loop thread {loop}; "
        f"the first calls started on the loop {1000 * first:.0f} ms after it",
        f"    event loop callbacks: {len(slow):,}, {sum(slow):.2f} s in all, slowest "
        f"{1000 * (slow[-1] if slow else 0):.1f} ms, {sum(d > 0.005 for d in slow)} over 5 ms, "
        f"99th percentile {1000 * (slow[int(0.99 * (len(slow) - 1))] if slow else 0):.2f} ms",
        f"    event loop lag (a timer every {1000 * _BEAT_S:.0f} ms, how late it ran): median "
        f"{1000 * lags[len(lags) // 2]:.2f} ms, 99th percentile {1000 * lags[int(0.99 * (len(lags) - 1))]:.2f} ms, "
        f"worst {1000 * lags[-1]:.1f} ms, over {len(lags):,} timers",
        f"    calls started and not answered, until the last ones started: min {queued[0]}, median "
        f"{queued[len(queued) // 2]}, below the bound ({bound}) in {sum(n < bound for n in queued)} of "
        f"{len(queued)} samples",
        f"    cases whose call had finished when pytest reached them: {_ready[0]} of {len(_waits)}; "
        f"the main thread waited {sum(_waits) - sum(_stores):.2f} s for calls in all and took "
        f"{sum(_stores):.2f} s storing answers in the response cache",
    ]
    sys.stderr.write("\n".join(lines) + "\n")
