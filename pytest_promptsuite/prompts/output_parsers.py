"""Output parsers: a task prompt's ``output_parser`` turns the model's output into what the checks see."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from typing import Union

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import PromptSuiteError
from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.formats.jsonio import find_json
from pytest_promptsuite.prompts.pluggable import check_params
from pytest_promptsuite.prompts.pluggable import split_spec
from pytest_promptsuite.prompts.pluggable import unknown_part
from pytest_promptsuite.safety.deadline import BudgetExceeded
from pytest_promptsuite.safety.deadline import time_budget
from pytest_promptsuite.safety.limits import JSON_SEARCH_SECONDS
from pytest_promptsuite.safety.scrub import scrub_cut


#: The model's output in, the text the checks see out (OutputParserError if it cannot).
OutputParser = Callable[[str], str]
#: ``make_parser(name, params) -> parser | None`` (``pytest_promptsuite_make_output_parser``).
MakeParser = Callable[[str, dict[str, Any]], Union[OutputParser, None]]


class OutputParserError(PromptSuiteError):
    """A model's output the parser could not parse: the case fails, it does not error."""


def strip_prefix(text: str, prefix: str) -> str:
    """Remove ``prefix`` (after leading blanks) and the blanks around the rest; else keep ``text``."""
    stripped = text.lstrip()
    if stripped.startswith(prefix):
        return stripped[len(prefix) :].strip()
    return text


_FENCE = re.compile(r"```(?:json)?[ \t]*\n(.*?)```", re.DOTALL)


def extract_json(text: str) -> str:
    """Find the first JSON value in ``text`` as written: the whole text, a fenced ```` ```json ````
    block, or the first ``{...}`` / ``[...]`` after some prose."""
    for candidate in [text.strip()] + [str(m.group(1)).strip() for m in _FENCE.finditer(text)]:
        try:
            decode(candidate, strict=False)
        except JsonError:
            continue
        return candidate
    try:
        with time_budget(JSON_SEARCH_SECONDS, "output parser 'json'"):
            first = next(find_json(text), None)
    except BudgetExceeded as exc:
        raise OutputParserError(str(exc)) from None
    if first is not None:
        return text[first[1] : first[2]]
    snippet, _, after = scrub_cut(text, 60)
    snippet += "..." if after else ""
    raise OutputParserError(f"output parser 'json': no JSON value in the output {snippet!r}")


def _prefix_parser(prefix: str) -> OutputParser:
    return lambda text: strip_prefix(text, prefix)


def _make_strip_prefix(params: dict[str, Any]) -> OutputParser:
    prefix = params.get("prefix")
    if not isinstance(prefix, str) or not prefix:
        raise ConfigError("output parser 'strip_prefix' needs a non-empty string 'prefix'")
    return _prefix_parser(prefix)


#: name -> (factory from params, the params it takes)
_PARSERS: dict[str, tuple[Callable[[dict[str, Any]], OutputParser], tuple[str, ...]]] = {
    "strip_prefix": (_make_strip_prefix, ("prefix",)),
    "json": (lambda params: extract_json, ()),
    # NeMo's names without its Colang rewriting (nemo.output_parsers has that): the prefix goes.
    "user_intent": (lambda params: _prefix_parser("User intent:"), ()),
    "bot_intent": (lambda params: _prefix_parser("Bot intent:"), ()),
    "bot_message": (lambda params: _prefix_parser("Bot message:"), ()),
}
BUILTIN_OUTPUT_PARSERS = tuple(_PARSERS)


def builtin_output_parser(name: str, params: dict[str, Any]) -> OutputParser | None:
    """Make our output parser ``name`` with ``params`` (None for a name not ours): the built-in
    answer of ``pytest_promptsuite_make_output_parser``."""
    entry = _PARSERS.get(name)
    if entry is None:
        return None
    factory, allowed = entry
    check_params("output parser", name, params, allowed)
    return factory(dict(params))


def make_output_parser(spec: Any, *, make: MakeParser = builtin_output_parser) -> OutputParser:
    """Make the parser of ``output_parser: NAME`` or ``{type: NAME, ...params}`` with ``make``
    (the hook under pytest); ConfigError when it makes none."""
    name, params = split_spec(spec, key="output_parser")
    made = make(name, dict(params))
    if made is None:
        raise unknown_part("output parser", name, BUILTIN_OUTPUT_PARSERS, "pytest_promptsuite_make_output_parser")
    return made
