"""Time budgets for what a suite runs in Python on the main thread (templates, the search for JSON in an output),
enforced with ``SIGALRM``; user regexes carry their own (:mod:`.user_regex`)."""

from __future__ import annotations

import signal
import threading
import time
from types import FrameType
from types import TracebackType
from typing import Any

from pytest_promptsuite.errors import PromptSuiteError
from pytest_promptsuite.safety.limits import Limit


class BudgetExceeded(PromptSuiteError):
    """A regex or a template ran longer than its time budget; the message names the limit."""


class _Expired(BaseException):
    """Raised by the alarm inside the block (a BaseException, so no ``except Exception`` swallows it)."""


def budget_available() -> bool:
    """Tell whether :class:`time_budget` can stop a runaway block here (main thread, ``SIGALRM``)."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


class _Alarm:
    """The installed handler and the budget it serves; other alarms go to the handler it replaced.

    Installed once (installing a handler costs ~10 us, too much per regex).
    """

    outer: Any = None
    deadline: float | None = None

    @classmethod
    def handle(cls, signum: int, frame: FrameType | None) -> Any:
        deadline = cls.deadline
        if deadline is not None and time.monotonic() >= deadline - 1e-3:
            cls.deadline = None
            raise _Expired()
        result = cls.outer(signum, frame) if callable(cls.outer) else None
        if cls.deadline is not None:  # an outer alarm came first: re-arm the budget's
            signal.setitimer(signal.ITIMER_REAL, max(cls.deadline - time.monotonic(), 1e-6))
        return result

    @classmethod
    def ensure(cls) -> None:
        if signal.getsignal(signal.SIGALRM) is not _HANDLER:
            cls.outer = signal.signal(signal.SIGALRM, _HANDLER)


#: One object, so that ``getsignal`` can tell whether it is still installed.
_HANDLER = _Alarm.handle


class time_budget:  # lower case: used like a function, ``with time_budget(...)``
    """Run the block for at most ``limit`` seconds, then raise :class:`BudgetExceeded` (unbounded off SIGALRM)."""

    def __init__(self, limit: Limit, what: str) -> None:
        self.seconds = float(limit.value)
        self.limit = limit
        self.what = what
        self.armed = False

    def __enter__(self) -> None:
        if not budget_available() or _Alarm.deadline is not None:
            return  # no signals here, or inside another budget (which stays in force)
        _Alarm.ensure()
        self.start = time.monotonic()
        self.outer_delay, self.outer_interval = signal.getitimer(signal.ITIMER_REAL)
        delay = min(self.seconds, self.outer_delay) if self.outer_delay else self.seconds
        _Alarm.deadline = self.start + self.seconds
        signal.setitimer(signal.ITIMER_REAL, delay)
        self.armed = True

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if not self.armed:
            return
        _Alarm.deadline = None
        signal.setitimer(signal.ITIMER_REAL, 0)
        if self.outer_delay:  # re-arm the outer alarm with the time it had left
            left = self.outer_delay - (time.monotonic() - self.start)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-6), self.outer_interval)
        if isinstance(exc, _Expired):
            raise BudgetExceeded(f"{self.what} ran longer than {self.limit}") from None
