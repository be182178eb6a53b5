"""The content layer: required facts present, forbidden content absent."""

from __future__ import annotations

from collections.abc import Iterator

from ..cases import PromptCase
from .base import CheckResult
from .base import Layer


__all__ = ["must_checks"]


def must_checks(case: PromptCase, output: str) -> Iterator[CheckResult]:
    """One result per ``must_include`` and ``must_not_include`` entry: every one gates."""
    for text in case.must_include:
        if text in output:
            yield CheckResult(Layer.CONTENT.value, "must_include", True, f"found {text!r}")
        else:
            yield CheckResult(
                Layer.CONTENT.value, "must_include", False, f"missing required text {text!r}"
            )
    for text in case.must_not_include:
        at = output.find(text)
        if at < 0:
            yield CheckResult(Layer.CONTENT.value, "must_not_include", True, f"absent {text!r}")
        else:
            yield CheckResult(
                Layer.CONTENT.value,
                "must_not_include",
                False,
                f"found forbidden text {text!r} at offset {at}",
            )
