"""Runs model calls: inline for models without I/O, else on one background event loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any
from typing import TypeVar

from .base import Model
from .base import ModelRequest
from .base import Response
from .base import SyncModel


__all__ = ["ModelRunner"]

T = TypeVar("T")


class ModelRunner:
    """One event loop in a daemon thread, shared by every model of a run."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

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

    def call(self, model: Model, request: ModelRequest) -> Response:
        """Answer ``request`` with ``model``; a model without I/O is called inline."""
        if isinstance(model, SyncModel):
            return model.generate_sync(request)
        return self.run(model.generate(request))

    def close(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            self._loop.close()
            self._loop = self._thread = None
