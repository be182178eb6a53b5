"""The Jinja2 sandbox every task prompt and ``jinja`` template runs in: no attribute of the data is
reachable, an undefined variable is an error, and what a template may compute is bounded."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sized
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.exceptions import SecurityError
from jinja2.runtime import LoopContext
from jinja2.sandbox import SandboxedEnvironment

from pytest_promptsuite.errors import PromptSuiteError
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.prompts.files.history_filters import MakeFilter
from pytest_promptsuite.safety.deadline import time_budget
from pytest_promptsuite.safety.limits import RENDER_SECONDS
from pytest_promptsuite.safety.limits import TEMPLATE_INT_DIGITS
from pytest_promptsuite.safety.limits import TEMPLATE_OUTPUT
from pytest_promptsuite.safety.limits import TEMPLATE_RANGE


_SAFE_RUNTIME = (LoopContext, jinja2.utils.Cycler, jinja2.utils.Joiner, jinja2.utils.Namespace)
_LOG10_2 = math.log10(2)
_PRINTF_WIDTH = re.compile(r"%[#0 +-]*(\*|\d+)?(?:\.(\*|\d+))?")


class _LimitRefused(SecurityError):
    """Work past one of the template limits, refused; the message names the limit."""


def _refuse(what: str, limit: object) -> _LimitRefused:
    return _LimitRefused(f"{what}, more than {limit}")


def _digits(number: int) -> float:
    return abs(number).bit_length() * _LOG10_2


def _size(value: Any) -> int | None:
    return len(value) if isinstance(value, (str, list, tuple)) else None


def _check_printf(template: str) -> None:
    for match in _PRINTF_WIDTH.finditer(template):
        for part in match.groups():
            if part == "*" or (part is not None and int(part) > TEMPLATE_OUTPUT.value):
                raise _refuse(f"the format {match.group()!r} asks for a field that wide", TEMPLATE_OUTPUT)


def _check_power(left: Any, right: Any) -> None:
    ints = isinstance(left, int) and isinstance(right, int)
    if ints and right > 0 and _digits(left) * right > TEMPLATE_INT_DIGITS.value:
        digits = int(_digits(left) * right)
        raise _refuse(f"{left} ** {right} would have about {digits:,} digits", TEMPLATE_INT_DIGITS)


def _check_times(left: Any, right: Any) -> None:
    if isinstance(left, int) and isinstance(right, int) and _digits(left) + _digits(right) > TEMPLATE_INT_DIGITS.value:
        raise _refuse("the product would have too many digits", TEMPLATE_INT_DIGITS)
    for seq, times in ((left, right), (right, left)):
        size = _size(seq)
        if size is not None and isinstance(times, int) and size * times > TEMPLATE_OUTPUT.value:
            raise _refuse(f"'*' would make {size * times:,} characters or items", TEMPLATE_OUTPUT)


def _check_plus(left: Any, right: Any) -> None:
    sizes = (_size(left), _size(right))
    total = sum(s for s in sizes if s is not None)
    if None not in sizes and total > TEMPLATE_OUTPUT.value:
        raise _refuse(f"'+' would make {total:,} characters or items", TEMPLATE_OUTPUT)


def _check_modulo(left: Any, right: Any) -> None:
    if isinstance(left, str):
        _check_printf(left)


#: The check of each operator the sandbox intercepts, before it computes.
_BINOP_CHECKS: dict[str, Callable[[Any, Any], None]] = {
    "**": _check_power,
    "*": _check_times,
    "+": _check_plus,
    "%": _check_modulo,
}


def _check_binop(operator: str, left: Any, right: Any) -> None:
    check = _BINOP_CHECKS.get(operator)
    if check is not None:
        check(left, right)


def _range(*args: int) -> range:
    numbers = range(*args)
    if len(numbers) > TEMPLATE_RANGE.value:
        raise _refuse(f"range{args} has {len(numbers):,} numbers", TEMPLATE_RANGE)
    return numbers


def _bounded_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    skip = 2 if getattr(function, "jinja_pass_arg", None) is not None else 1  # (context,) value

    @functools.wraps(function)  # keeps Jinja's pass_context / pass_environment marks
    def guarded(*args: Any, **kwargs: Any) -> Any:
        for value in (*args[skip:], *kwargs.values()):  # the filter's parameters, not its value
            if isinstance(value, int) and not isinstance(value, bool) and abs(value) > TEMPLATE_OUTPUT.value:
                raise _refuse(f"filter {name!r} was given {value:,}", TEMPLATE_OUTPUT)
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


def _bounded_output(chunks: Iterator[str]) -> str:
    parts: list[str] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > TEMPLATE_OUTPUT.value:
            raise _refuse(f"the output reached {size:,} characters", TEMPLATE_OUTPUT)
        parts.append(chunk)
    return "".join(parts)


class _Filters(dict[str, Any]):
    """The environment's filters, each bounded as it is installed (Jinja's own and ours)."""

    def __init__(self, filters: Mapping[str, Any]) -> None:
        super().__init__()
        for name, function in filters.items():
            self[name] = function

    def __setitem__(self, name: str, function: Any) -> None:
        super().__setitem__(name, _bounded_filter(name, function))


class _DataSandbox(SandboxedEnvironment):
    """Jinja's sandbox, stricter: only items of the data are reachable, never an attribute (a prompt
    needs no ``input.upper()`` or ``history.pop()``: filters do the work)."""

    # checked at run time, so ``{{ 10 ** 10000000 }}`` is never folded (and computed) while compiling
    intercepted_binops = frozenset({"**", "*", "+", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.globals["range"] = _range
        self.filters = _Filters(self.filters)

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        return isinstance(obj, _SAFE_RUNTIME) and super().is_safe_attribute(obj, attr, value)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        _check_binop(operator, left, right)
        return self.binop_table[operator](left, right)


def sandbox_environment() -> SandboxedEnvironment:
    """Make the environment of task prompts and ``jinja`` templates: sandboxed, strict about undefined
    variables, no autoescape, text kept as written, Jinja's own filters only."""
    return _DataSandbox(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)


def _used_filters(env: SandboxedEnvironment, source: str) -> set[str]:
    names = set()
    for node in env.parse(source).find_all(nodes.Filter):
        names.add(node.name)
        if node.name == "map" and node.args and isinstance(node.args[0], nodes.Const):  # map('name')
            if isinstance(node.args[0].value, str):
                names.add(node.args[0].value)
    return names


def install_filters(env: SandboxedEnvironment, sources: Iterable[str], make_filter: MakeFilter) -> None:
    """Ask ``make_filter`` for every filter the templates use and install what it makes over Jinja's
    filter of that name; a name it answers None for keeps Jinja's, if any."""
    names: set[str] = set()
    for source in sources:
        try:
            names |= _used_filters(env, source)
        except (jinja2.TemplateSyntaxError, RecursionError):
            pass  # reported with its location when the template is compiled
    for name in sorted(names):
        made = make_filter(name)
        if made is not None:
            env.filters[name] = made


def _template_error(where: str | None, exc: Exception) -> TemplateError:
    if isinstance(exc, _LimitRefused):
        text = f"refused by the sandbox: {exc}"
    elif isinstance(exc, SecurityError):
        text = (
            f"refused by the sandbox: {exc} (templates may read items of the row, "
            "e.g. turn['content'], but no attributes or methods)"
        )
    elif isinstance(exc, jinja2.UndefinedError):
        match = re.fullmatch(r"'([^']+)' is undefined", str(exc))
        text = f"undefined variable {match.group(1)!r}" if match else str(exc)
    elif isinstance(exc, PromptSuiteError):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}"
    return TemplateError(f"{where}: {text}" if where else text)


def compile_template(env: SandboxedEnvironment, source: str, where: str | None) -> jinja2.Template:
    """Compile ``source``; a syntax error or an unknown filter is a TemplateError naming ``where``."""
    try:
        return env.from_string(source)
    except jinja2.TemplateSyntaxError as exc:  # unknown filters too (TemplateAssertionError)
        text = f"line {exc.lineno} of the template: {exc.message}"
        raise TemplateError(f"{where}: {text}" if where else text) from exc
    except RecursionError:  # Jinja's parser recurses once per bracket or parenthesis
        text = "the template nests its expressions deeper than Jinja's parser can read"
        raise TemplateError(f"{where}: {text}" if where else text) from None


def render_template(template: jinja2.Template, row: Mapping[str, Any], where: str | None) -> str:
    """Render a compiled template with ``row`` as its context, its output and time bounded; every
    failure is a TemplateError."""
    try:
        with time_budget(RENDER_SECONDS, "the template"):
            return _bounded_output(template.root_render_func(template.new_context(dict(row))))
    except Exception as exc:  # jinja2 errors, ours from a filter, anything a filter raised
        raise _template_error(where, exc) from exc
