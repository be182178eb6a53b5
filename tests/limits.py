"""A short regex time limit for the tests that wait one out: they show the limit holds and is named, and
one test of each kind keeps the real limit (2 s), so its message is shown as users see it."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from pytest_promptsuite.safety.limits import Limit


#: The limit the tests wait out instead of :data:`pytest_promptsuite.safety.limits.REGEX_SECONDS`.
SHORT_REGEX_SECONDS = Limit("regex time", 0.25, "seconds")
#: Every module that reads ``REGEX_SECONDS`` (``tests/unit/safety/test_limits_support.py`` keeps this whole).
USING = (
    "pytest_promptsuite.checks.content",
    "pytest_promptsuite.checks.structure",
    "pytest_promptsuite.models.fake",
    "pytest_promptsuite.checks.conversation_checks",
    "pytest_promptsuite.run.conversation",
)


def shorten_regex_limit(set_attribute: Callable[[Any, str, Any], None] = setattr) -> None:
    """Make every reader of the regex time limit read :data:`SHORT_REGEX_SECONDS` (``monkeypatch.setattr``
    in a test; plain ``setattr`` in a child Python)."""
    for name in USING:
        set_attribute(importlib.import_module(name), "REGEX_SECONDS", SHORT_REGEX_SECONDS)
