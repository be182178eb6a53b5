"""The content layer: required facts present, forbidden content absent."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.check_api import Check
from pytest_promptsuite.checks.check_api import CheckContext
from pytest_promptsuite.checks.check_api import Params
from pytest_promptsuite.checks.check_api import Verdict
from pytest_promptsuite.checks.check_api import json_equal
from pytest_promptsuite.checks.check_api import json_kind
from pytest_promptsuite.checks.check_api import json_text
from pytest_promptsuite.checks.check_api import shorten
from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.checks.outcome import Layer
from pytest_promptsuite.errors import CheckError
from pytest_promptsuite.safety.limits import REGEX_SECONDS
from pytest_promptsuite.safety.scrub import scrub_cut
from pytest_promptsuite.safety.user_regex import Pattern
from pytest_promptsuite.safety.user_regex import RegexBudget
from pytest_promptsuite.safety.user_regex import user_regex


def must_checks(case: PromptCase, output: str) -> Iterator[CheckResult]:
    """Yield a result per ``must_include`` and ``must_not_include`` entry (each one gates)."""
    for text in case.must_include:
        if text in output:
            yield CheckResult(Layer.CONTENT.value, "must_include", True, f"found {text!r}")
        else:
            yield CheckResult(Layer.CONTENT.value, "must_include", False, f"missing required text {text!r}")
    for text in case.must_not_include:
        at = output.find(text)
        if at < 0:
            yield CheckResult(Layer.CONTENT.value, "must_not_include", True, f"absent {text!r}")
        else:
            message = f"found forbidden text {text!r} at offset {at}"
            yield CheckResult(Layer.CONTENT.value, "must_not_include", False, message)


class Equals(Check):
    """``equals``: the output is exactly ``value``. A non-string ``value`` (a number, an object)
    and any value read through ``path`` compare as JSON values: ``12`` is not ``"12"``."""

    def __init__(self, expected: Any) -> None:
        self.expected = expected

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        expected = f"equals {shorten(self.expected)}"
        if ctx.path is None and isinstance(value, str):
            if isinstance(self.expected, str):
                if value == self.expected:
                    return Verdict(True, expected, "an equal output")
                return Verdict(False, expected, _difference(value, self.expected))
            try:
                value = ctx.output_json()
            except ValueError as exc:
                return Verdict(False, expected, str(exc))
        ok = json_equal(value, self.expected)
        return Verdict(ok, expected, shorten(value) + ("" if ok else _type_note(value, self.expected)))


def _type_note(found: Any, expected: Any) -> str:
    a, b = json_kind(found), json_kind(expected)
    return f" ({a}, not {b})" if a != b else ""


def _difference(found: str, expected: str) -> str:
    pairs = enumerate(zip(found, expected, strict=False))
    at = next((i for i, (x, y) in pairs if x != y), min(len(found), len(expected)))
    return f"{shorten(found)}, first difference at offset {at}"


#: What :class:`Contains` expects, by mode.
_CONTAINS = {"one": "contains", "any": "contains any of", "all": "contains all of"}


class Contains(Check):
    """``contains`` / ``icontains`` / ``contains-any`` / ``contains-all`` / ``icontains-any`` /
    ``icontains-all``: substrings of the output (``i``: ignoring case)."""

    def __init__(self, needles: list[str], *, mode: str, ignore_case: bool) -> None:
        self.needles = needles
        self.mode = mode  # "one", "any" or "all"
        self.ignore_case = ignore_case

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        text = json_text(value)
        hay = text.casefold() if self.ignore_case else text
        where = {n: hay.find(n.casefold() if self.ignore_case else n) for n in self.needles}
        shown = ", ".join(repr(n) for n in self.needles)
        case = " (ignoring case)" if self.ignore_case else ""
        found_at = [f"{n!r} at offset {at}" for n, at in where.items() if at >= 0]
        missing = [repr(n) for n, at in where.items() if at < 0]
        ok = bool(found_at) if self.mode == "any" else not missing
        return Verdict(ok, f"{_CONTAINS[self.mode]} {shown}{case}", self._found(text, found_at, missing, ok))

    def _found(self, text: str, found_at: list[str], missing: list[str], ok: bool) -> str:
        if found_at and (ok or self.mode == "all"):
            return ", ".join(found_at) + (f"; missing {', '.join(missing)}" if missing else "")
        return f"none of them in {len(text)} chars" if self.mode != "one" else f"no match in {len(text)} chars"


class StartsWith(Check):
    """``starts-with``: the output begins with ``value``."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        text = json_text(value)
        ok = text.startswith(self.prefix)
        start = scrub_cut(text, max(len(self.prefix), 20)).text
        return Verdict(ok, f"starts with {self.prefix!r}", f"begins {shorten(start)}")


class Regex(Check):
    """``regex``: a regular expression searched in the output; with ``fullmatch: true`` it must
    match the whole output and the check belongs to the structure layer."""

    def __init__(self, pattern: Pattern, *, fullmatch: bool) -> None:
        self.pattern = pattern
        self.fullmatch = fullmatch
        self.layer = Layer.STRUCTURE if fullmatch else Layer.CONTENT

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        budget = RegexBudget(REGEX_SECONDS, f"regex /{shorten(self.pattern.pattern, 40)[1:-1]}/")
        text = json_text(value)
        if self.fullmatch:
            expected = f"the whole output matches /{self.pattern.pattern}/"
            match = budget.fullmatch(self.pattern, text)
            if match:
                return Verdict(True, expected, f"a full match of {len(text)} chars")
            partial = budget.search(self.pattern, text)
            found = (
                f"only a partial match {shorten(partial.group(0))} at offset {partial.start()}"
                if partial
                else f"no match in {len(text)} chars"
            )
            return Verdict(False, expected, found)
        expected = f"matches /{self.pattern.pattern}/"
        match = budget.search(self.pattern, text)
        if match:
            return Verdict(True, expected, f"{shorten(match.group(0))} at offset {match.start()}")
        return Verdict(False, expected, f"no match in {len(text)} chars")


class LevenshteinCheck(Check):
    """``levenshtein``: edit distance from ``value`` at most ``threshold`` (default 5)."""

    def __init__(self, expected: str, threshold: int) -> None:
        self.expected = expected
        self.threshold = threshold

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        from rapidfuzz.distance import Levenshtein

        distance = Levenshtein.distance(json_text(value), self.expected)
        return Verdict(
            distance <= self.threshold,
            f"edit distance <= {self.threshold} from {shorten(self.expected)}",
            f"distance {distance}",
            details={"distance": distance},
        )


class Similar(Check):
    """``similar``: rapidfuzz's normalised Indel ratio (0..1, spelling, not meaning) to ``value`` (the
    best of a list) at least ``threshold`` (default 0.75)."""

    def __init__(self, expected: list[str], threshold: float) -> None:
        self.expected = expected
        self.threshold = threshold

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        from rapidfuzz import fuzz

        text = json_text(value)
        best, ratio = max(((e, fuzz.ratio(text, e) / 100) for e in self.expected), key=lambda p: p[1])
        target = shorten(self.expected[0]) if len(self.expected) == 1 else f"one of {len(self.expected)} texts"
        return Verdict(
            ratio >= self.threshold,
            f"similarity >= {self.threshold:g} to {target}",
            f"similarity {ratio:.2f}" + (f" (best: {shorten(best, 40)})" if len(self.expected) > 1 else ""),
            score=ratio,
        )


#: Phrases that mark a refusal, by language; matched case-insensitively anywhere in the output.
REFUSAL_PATTERNS: tuple[str, ...] = (
    # English
    r"\bI(?:'m| am)? (?:really |very )?(?:sorry|afraid)\b",
    r"\bI (?:can ?not|can't|won't|will not|am unable to|'m unable to|am not able to|'m not able to)"
    r" (?:help|assist|provide|do|comply|share|answer|fulfil|support|give)",
    r"\bas an AI\b",
    r"\bI must (?:decline|refuse)\b",
    r"\b(?:not (?:able|allowed|permitted) to|unable to) (?:help|assist|provide|share|comply)",
    # Chinese
    r"抱歉|对不起|很遗憾",
    r"我(?:不能|无法|不可以|没办法)(?:帮|提供|回答|协助|满足|处理|透露)",
    r"(?:无法|不能|不便)(?:提供|协助|透露|回答)",
    # Japanese
    r"申し訳(?:ありません|ございません)|お答えできません|(?:お手伝い|提供)できません",
    # Spanish, French, German
    r"\blo siento\b|\bno puedo (?:ayudar|proporcionar|hacer|responder)",
    r"\bje suis d[ée]sol[ée]\b|\bje ne peux pas\b",
    r"\bes tut mir leid\b|\bich kann (?:dabei |ihnen |dir )?(?:nicht|keine)\b",
)


class IsRefusal(Check):
    """``is-refusal``: the output declines the task (an empty output counts). The pattern set is
    :data:`REFUSAL_PATTERNS`; ``value`` adds regexes, ``defaults: false`` keeps only yours."""

    def __init__(self, patterns: list[Pattern]) -> None:
        self.patterns = patterns

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        text = json_text(value)
        expected = "a refusal"
        if not text.strip():
            return Verdict(True, expected, "an empty output")
        budget = RegexBudget(REGEX_SECONDS, "the refusal patterns")
        match = next((m for p in self.patterns if (m := budget.search(p, text)) is not None), None)
        if match is not None:
            return Verdict(True, expected, f"refusal phrase {shorten(match.group(0))} at offset {match.start()}")
        return Verdict(False, expected, f"no refusal phrase in {len(text)} chars")


def make_equals(p: Params) -> Check:
    """Make ``equals``: the output (or the JSON value at ``path``) equals ``value``."""
    if not p.has("value"):
        p.raw("value", required=True, what="the expected output or JSON value")
    return Equals(p.raw("value"))


def make_contains(p: Params) -> Check:
    """Make a type of the ``contains`` family: (``i``) ``contains`` (``-any``, ``-all``) of ``value``."""
    ignore_case = p.name.startswith("i")
    mode = p.name.rpartition("-")[2] if "-" in p.name else "one"
    if mode == "one":
        needle = p.text("value", required=True)
        assert needle is not None
        if not needle:
            raise CheckError(f"'value' of {p.name!r} is an empty string (it would match anything)")
        return Contains([needle], mode=mode, ignore_case=ignore_case)
    needles = p.strings("value", required=True)
    assert needles is not None
    return Contains(needles, mode=mode, ignore_case=ignore_case)


def make_regex(p: Params) -> Check:
    """Make ``regex``: ``value`` is found in the output (or matches it whole with ``fullmatch``)."""
    source = p.string("value", required=True, what="a regular expression")
    assert source is not None
    fullmatch = p.flag("fullmatch")
    try:
        pattern = user_regex(source)
    except (re.error, RecursionError, OverflowError) as exc:
        raise CheckError(f"'value' of {p.name!r} is not a valid regex {source!r}: {exc}") from exc
    return Regex(pattern, fullmatch=fullmatch)


def make_levenshtein(p: Params) -> Check:
    """Make ``levenshtein``: at most ``threshold`` edits (default 5) from ``value``."""
    expected = p.text("value", required=True)
    threshold = p.number("threshold", minimum=0, what="a whole number of edits >= 0")
    if threshold is not None and threshold != int(threshold):
        raise CheckError(f"'threshold' of {p.name!r} must be a whole number of edits, got {threshold!r}")
    assert expected is not None
    return LevenshteinCheck(expected, 5 if threshold is None else int(threshold))


def make_similar(p: Params) -> Check:
    """Make ``similar``: a similarity ratio of at least ``threshold`` (default 0.75) to one of ``value``."""
    expected = p.strings("value", required=True)
    threshold = p.number("threshold", minimum=0, maximum=1, what="a ratio from 0 to 1")
    assert expected is not None
    return Similar(expected, 0.75 if threshold is None else threshold)


def make_is_refusal(p: Params) -> Check:
    """Make ``is-refusal``: the output refuses, by the built-in patterns and/or those of ``value``."""
    extra = p.strings("value") or []
    use_defaults = p.flag("defaults", default=True)
    if not use_defaults and not extra:
        raise CheckError(f"{p.name!r} with 'defaults: false' needs 'value': your refusal patterns")
    sources = [*(REFUSAL_PATTERNS if use_defaults else ()), *extra]
    return IsRefusal([user_regex(s, re.IGNORECASE) if s in REFUSAL_PATTERNS else _compile_ci(p, s) for s in sources])


def _compile_ci(p: Params, source: str) -> Pattern:
    try:
        return user_regex(source, re.IGNORECASE)
    except (re.error, RecursionError, OverflowError) as exc:
        raise CheckError(f"'value' of {p.name!r}: {source!r} is not a valid regex: {exc}") from exc


def make_starts_with(p: Params) -> Check:
    """Make ``starts-with``: the output starts with ``value``."""
    prefix = p.text("value", required=True)
    assert prefix is not None
    return StartsWith(prefix)
