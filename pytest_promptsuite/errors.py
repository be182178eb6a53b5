"""The one exception family users see.

Every error a user can cause (a bad case line, a bad config key, a template that names an unknown
role, a misconfigured endpoint) is a :class:`PromptSuiteError`, whose message names the file, line,
case or option and says what to do. Foreign exceptions (jsonlines, pydantic, httpx, jinja2) are
translated where they are caught, with ``raise ... from exc``.

    PromptSuiteError
     ├── CaseFileError      a case file has bad lines (carries every problem, each "path:line: ...")
     ├── ConfigError        a suite config or an option value is wrong
     ├── TemplateError      a template, meta template or render request cannot be rendered
     ├── ModelError         a model spec is unknown, or a model call failed for good
     │    └── EndpointError     the endpoint answered with an error (status and its text)
     └── CheckError         an ``assert`` entry is malformed or names an unknown type
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence
from typing import Any


__all__ = [
    "CaseFileError",
    "CheckError",
    "ConfigError",
    "EndpointError",
    "ModelError",
    "PromptSuiteError",
    "TemplateError",
    "describe_type",
    "did_you_mean",
    "nearest",
]


class PromptSuiteError(Exception):
    """Base class of every error a user can cause; ``str(exc)`` is the whole message."""


class CaseFileError(PromptSuiteError):
    """One or more lines of a case file are wrong.

    ``problems`` holds one ``"path:line: what is wrong"`` message per problem, in file order.
    """

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class ConfigError(PromptSuiteError):
    """A suite config, or the value of an option, is wrong."""


class TemplateError(PromptSuiteError):
    """A template cannot be rendered; the message names the role, field or template part."""


class ModelError(PromptSuiteError):
    """A model cannot be made from its spec, or a call to it failed for good."""


class EndpointError(ModelError):
    """The endpoint answered with an error: ``status`` (or None) and the endpoint's own text."""

    def __init__(self, message: str, *, status: int | None = None, fatal: bool = False) -> None:
        super().__init__(message)
        self.status = status
        #: True when every further call would fail the same way (wrong URL, bad key).
        self.fatal = fatal


class CheckError(PromptSuiteError):
    """An ``assert`` entry is malformed or names a check type nobody provides."""


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def nearest(word: str, known: Iterable[str]) -> str | None:
    """The known word closest to ``word`` by edit distance over the whole name, if it is close
    enough to be a likely typo (at most two fifths of the longer name changed, and never all of
    it); among equally close
    names, the one sharing the longest prefix with ``word`` wins, then the first given."""
    from rapidfuzz.distance import Levenshtein  # only on the error path: start-up stays light

    best: tuple[int, int, int] | None = None
    choice = None
    for index, name in enumerate(dict.fromkeys(known)):
        distance = Levenshtein.distance(word, name)
        longer = max(len(word), len(name))
        limit = min(max(1, round(longer * 0.4)), longer - 1)
        if distance == 0 or distance > limit:
            continue
        rank = (distance, -_common_prefix(word, name), index)
        if best is None or rank < best:
            best, choice = rank, name
    return choice


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` when a known word is a likely typo of ``word``, else ``""``."""
    hint = nearest(word, known)
    return f" (did you mean {hint!r}?)" if hint else ""


def describe_type(value: Any) -> str:
    """How an error names a JSON value's type: "a string", "a list", "null", ..."""
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
        type(None): "null",
    }.get(type(value), type(value).__name__)
