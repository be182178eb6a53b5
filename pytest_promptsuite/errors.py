"""The one exception family users see: each message names the file, line, case or option.

PromptSuiteError
 ├── CaseFileError      a case file has bad lines (carries every problem, each "path:line: ...")
 ├── ConfigError        a suite config or an option value is wrong
 ├── TemplateError      a template, meta template or render request cannot be rendered
 ├── ModelError         a model spec is unknown, or a model call failed for good
 │    └── EndpointError     the endpoint answered with an error (status and its text)
 └── CheckError         an ``assert`` entry is malformed or names an unknown type
"""

from __future__ import annotations

import os.path
from collections.abc import Iterable
from collections.abc import Sequence
from typing import Any


class PromptSuiteError(Exception):
    """Base class of every error a user can cause; ``str(exc)`` is the whole message."""


class CaseFileError(PromptSuiteError):
    """One or more lines of a case file are wrong; ``problems`` holds each ``"path:line: ..."`` in file order."""

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


def nearest(word: str, known: Iterable[str]) -> str | None:
    """Return the known word closest to ``word`` by edit distance if it is a likely typo (at most
    two fifths of the longer name changed, never all of it); ties go to the longest shared prefix."""
    from rapidfuzz.distance import Levenshtein  # only on the error path: start-up stays light

    best: tuple[int, int, int] | None = None
    choice = None
    for index, name in enumerate(dict.fromkeys(known)):
        distance = Levenshtein.distance(word, name)
        longer = max(len(word), len(name))
        limit = min(max(1, round(longer * 0.4)), longer - 1)
        if distance == 0 or distance > limit:
            continue
        rank = (distance, -len(os.path.commonprefix((word, name))), index)
        if best is None or rank < best:
            best, choice = rank, name
    return choice


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """Return ``" (did you mean 'x'?)"`` when a known word is a likely typo of ``word``, else ``""``."""
    hint = nearest(word, known)
    return f" (did you mean {hint!r}?)" if hint else ""


def describe_type(value: Any) -> str:
    """Name a JSON value's type as an error says it: "a string", "a list", "null", ..."""
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
        type(None): "null",
    }.get(type(value), type(value).__name__)
