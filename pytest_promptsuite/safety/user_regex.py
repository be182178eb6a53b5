"""A suite's own regexes (the regex check, refusal and fake-model patterns, JSON Schema patterns): compiled
by the ``regex`` package, every search bounded by its ``timeout=``, which holds in any thread."""

from __future__ import annotations

import functools
import re
import time
import warnings
from typing import TYPE_CHECKING
from typing import Union

from pytest_promptsuite.safety.deadline import BudgetExceeded
from pytest_promptsuite.safety.limits import Limit


if TYPE_CHECKING:
    import regex

#: A compiled user regex; a ``re`` pattern (a third party's :class:`.FakeRule`) is searched through ``regex`` too.
Pattern = Union["regex.Pattern[str]", "re.Pattern[str]"]
Match = Union["regex.Match[str]", "re.Match[str]"]


def user_regex(source: str, flags: int = 0) -> regex.Pattern[str]:
    """Compile a suite's regex (``re``'s flags); a bad one raises :class:`re.error` with ``regex``'s reason.

    ``re``'s warnings (``Possible nested set``), which ``-W error`` would raise, are not shown.
    """
    import regex

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return regex.compile(source, flags)
        except regex.error as exc:
            raise re.error(str(exc)) from None  # its reason and position, as re says them


@functools.lru_cache(maxsize=256)
def _from_re(source: str, flags: int) -> regex.Pattern[str]:
    return user_regex(source, flags)  # re's flags are regex's, bit for bit


class RegexBudget:
    """One time budget for a run of searches: past ``limit`` in all, a search raises :class:`BudgetExceeded`
    naming ``what`` and the limit."""

    def __init__(self, limit: Limit, what: str) -> None:
        self.limit = limit
        self.what = what
        self.deadline = time.monotonic() + float(limit.value)

    def search(self, pattern: Pattern | str, text: str) -> Match | None:
        """Return ``pattern``'s first match in ``text``, or None."""
        return self._run(pattern, text, full=False)

    def fullmatch(self, pattern: Pattern | str, text: str) -> Match | None:
        """Return the match of ``pattern`` over the whole of ``text``, or None."""
        return self._run(pattern, text, full=True)

    def _run(self, pattern: Pattern | str, text: str, *, full: bool) -> Match | None:
        if isinstance(pattern, str):
            compiled = _from_re(pattern, 0)
        elif isinstance(pattern, re.Pattern):
            compiled = _from_re(pattern.pattern, pattern.flags)
        else:
            compiled = pattern
        left = self.deadline - time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            return compiled.fullmatch(text, timeout=left) if full else compiled.search(text, timeout=left)
        except TimeoutError:
            raise BudgetExceeded(f"{self.what} ran longer than {self.limit}") from None
