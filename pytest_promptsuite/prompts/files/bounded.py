"""What a Jinja template may compute: the limits the sandbox of :mod:`.jinja` enforces.

Jinja's sandbox keeps templates away from Python's internals but not from work: ``{{ 10 **
10000000 }}`` is folded at compile time (20 s of CPU, outside any sandbox check), ``{{ 'a' *
10**8 }}`` allocates 100 MB and nested ``range(100000)`` loops run for ever. Here the operators
that can build something huge (``**``, ``*``, ``+``, ``%``) are checked before they run (and
are therefore never folded at compile time), ``range`` gives at most
:data:`~..formats.limits.TEMPLATE_RANGE` numbers, every filter's numbers and results are
bounded, the output is counted as it is produced, and a render runs with a time budget.
Each refusal names its limit.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sized
from typing import Any

from jinja2.exceptions import SecurityError

from pytest_promptsuite.safety.limits import TEMPLATE_INT_DIGITS
from pytest_promptsuite.safety.limits import TEMPLATE_OUTPUT
from pytest_promptsuite.safety.limits import TEMPLATE_RANGE


__all__ = [
    "BOUNDED_BINOPS", "LimitRefused", "bounded_binop", "bounded_filter", "bounded_output", "bounded_range",
]

#: The operators :func:`bounded_binop` checks (the sandbox's ``intercepted_binops``).
BOUNDED_BINOPS = frozenset({"**", "*", "+", "%"})
_LOG10_2 = math.log10(2)
_PRINTF_WIDTH = re.compile(r"%[#0 +-]*(\*|\d+)?(?:\.(\*|\d+))?")


def _digits(number: int) -> float:
    return abs(number).bit_length() * _LOG10_2


def _size(value: Any) -> int | None:
    return len(value) if isinstance(value, (str, list, tuple)) else None


class LimitRefused(SecurityError):
    """The sandbox refused work past one of the template limits; the message names it."""


def _refuse(what: str, limit: object) -> LimitRefused:
    return LimitRefused(f"{what}, more than {limit}")


def _check_printf(template: str) -> None:
    for match in _PRINTF_WIDTH.finditer(template):
        for part in match.groups():
            if part == "*" or (part is not None and int(part) > TEMPLATE_OUTPUT.value):
                raise _refuse(f"the format {match.group()!r} asks for a field that wide", TEMPLATE_OUTPUT)


def bounded_binop(operator: str, left: Any, right: Any) -> None:
    """Refuse (SecurityError) ``left operator right`` when its result would pass a limit."""
    ints = isinstance(left, int) and isinstance(right, int)
    if operator == "**" and ints and right > 0 and _digits(left) * right > TEMPLATE_INT_DIGITS.value:
        raise _refuse(f"{left} ** {right} would have about {int(_digits(left) * right):,} digits",
                      TEMPLATE_INT_DIGITS)
    if operator == "*":
        if ints and _digits(left) + _digits(right) > TEMPLATE_INT_DIGITS.value:
            raise _refuse("the product would have too many digits", TEMPLATE_INT_DIGITS)
        for seq, times in ((left, right), (right, left)):
            size = _size(seq)
            if size is not None and isinstance(times, int) and size * times > TEMPLATE_OUTPUT.value:
                raise _refuse(f"'*' would make {size * times:,} characters or items", TEMPLATE_OUTPUT)
    if operator == "+":
        sizes = (_size(left), _size(right))
        if None not in sizes and sum(s for s in sizes if s is not None) > TEMPLATE_OUTPUT.value:
            raise _refuse(f"'+' would make {sum(s for s in sizes if s is not None):,} characters or items",
                          TEMPLATE_OUTPUT)
    if operator == "%" and isinstance(left, str):
        _check_printf(left)


def bounded_range(*args: int) -> range:
    """``range`` for templates: at most :data:`TEMPLATE_RANGE` numbers."""
    numbers = range(*args)
    if len(numbers) > TEMPLATE_RANGE.value:
        raise _refuse(f"range{args} has {len(numbers):,} numbers", TEMPLATE_RANGE)
    return numbers


def _check_argument(name: str, value: Any) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > TEMPLATE_OUTPUT.value:
        raise _refuse(f"filter {name!r} was given {value:,}", TEMPLATE_OUTPUT)


def bounded_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` (a Jinja filter) refusing numbers above :data:`TEMPLATE_OUTPUT` (widths,
    counts) and a result longer than it; ``replace`` and ``format`` are checked before they run."""

    skip = 2 if getattr(function, "jinja_pass_arg", None) is not None else 1  # (context,) value

    @functools.wraps(function)  # keeps Jinja's pass_context / pass_environment marks
    def guarded(*args: Any, **kwargs: Any) -> Any:
        for value in (*args[skip:], *kwargs.values()):  # the filter's parameters, not its value
            _check_argument(name, value)
        values = [a for a in args if isinstance(a, str)]
        if name == "format" and values:
            _check_printf(values[0])
        if name == "replace" and len(values) >= 3:
            text, old, new = values[-3:]
            hits = text.count(old) if old else len(text) + 1
            if hits * len(new) > TEMPLATE_OUTPUT.value:
                raise _refuse(f"filter 'replace' would add {hits * len(new):,} characters", TEMPLATE_OUTPUT)
        result = function(*args, **kwargs)
        if isinstance(result, Sized) and not isinstance(result, dict) and len(result) > TEMPLATE_OUTPUT.value:
            raise _refuse(f"filter {name!r} made {len(result):,} items", TEMPLATE_OUTPUT)
        return result

    return guarded


def bounded_output(chunks: Iterator[str]) -> str:
    """The rendered text of ``chunks``, refused once it passes :data:`TEMPLATE_OUTPUT`."""
    parts: list[str] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > TEMPLATE_OUTPUT.value:
            raise _refuse(f"the output reached {size:,} characters", TEMPLATE_OUTPUT)
        parts.append(chunk)
    return "".join(parts)
