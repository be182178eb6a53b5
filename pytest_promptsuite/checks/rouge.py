"""``rouge-n``: ROUGE-1 F-measure of the output against ``value``, as promptfoo scores it (js-rouge's Penn
Treebank tokenizer on lowercased text, clipped unigram counts), passing at ``threshold`` (default 0.75)."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Any

from pytest_promptsuite.checks.check_api import Check
from pytest_promptsuite.checks.check_api import CheckContext
from pytest_promptsuite.checks.check_api import Params
from pytest_promptsuite.checks.check_api import Verdict
from pytest_promptsuite.checks.check_api import json_text
from pytest_promptsuite.checks.check_api import shorten


_QUOTES = re.compile(r"``|''|\"")
_CONTRACTIONS = [
    re.compile(rf"(?<![\w\u200c\u200d]){pattern}(?![\w\u200c\u200d])", re.IGNORECASE)
    for pattern in (
        "(can)(not)",
        "(d)('ye)",
        "(gim)(me)",
        "(gon)(na)",
        "(got)(ta)",
        "(lem)(me)",
        "(more)('n)",
        "(wan)(na)(?= )",
        "('t)(is)",
        "('t)(was)",
    )
]


def _category(char: str, *prefixes: str) -> bool:
    return bool(char) and unicodedata.category(char[0]).startswith(prefixes)


def _opens(text: str, index: int) -> bool:
    """Tell whether a double quote at ``index`` opens a quotation (js-rouge's ``quoteOpeningContext``,
    without its rare footnote-modifier case)."""
    before = text[index - 1] if index > 0 else ""
    return index == 0 or before.isspace() or _category(before, "P") or before == "<" or text[index - 2 : index] == "``"


def tokenize(sentence: str) -> list[str]:
    """Split ``sentence`` into word tokens by the Penn Treebank rules, as js-rouge's ``treeBankTokenize``."""
    text = re.sub(r"[\s\u0085]+", " ", sentence).strip()
    if not text:
        return []
    inside = False

    def quote(match: re.Match[str]) -> str:
        nonlocal inside
        mark, index = match.group(0), match.start()
        before = text[index - 1] if index > 0 else ""
        after = text[index + 2 : index + 3]
        following = _QUOTES.search(text, index + 2)
        inside = mark == "``" or (
            (
                index + len(mark) < len(text)
                or index == 0
                or before.isspace()
                or _category(before, "Ps")
                or before == "<"
            )
            and not inside
            and _opens(text, index)
            and before not in (".", "!", "?")
            and (
                mark == '"'
                or (
                    index > 0
                    and _category(after, "L", "N", "Sc", "Ps")
                    and following is not None
                    and following.group(0) == "''"
                )
            )
        )
        return " `` " if inside else " '' "

    parse = _QUOTES.sub(quote, text)
    parse = parse.replace("...", " ... ")
    parse = re.sub(r"[:,](?!\d)", r" \g<0> ", parse)
    parse = re.sub(r"[;@#$%&]", r" \g<0> ", parse)
    parse = re.sub(r"([^.])(?<!\b[A-Za-z]\.[A-Za-z])(\.)([\])}>'\s]*)\Z", r"\1 \2\3 ", parse)
    parse = re.sub(r"[?!]", r" \g<0> ", parse)
    parse = re.sub(r"[\][(){}<>]", r" \g<0> ", parse)
    parse = parse.replace("--", " -- ")
    parse = f" {parse} "
    parse = re.sub(r"([^'])' ", r"\1 ' ", parse)
    parse = re.sub(r"'([sSmMdD]) ", r" '\1 ", parse)
    parse = re.sub(r"('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", r" \1 ", parse)
    for contraction in _CONTRACTIONS:
        parse = contraction.sub(r" \1 \2 ", parse)
    parse = re.sub(r" {2,}", " ", parse)
    parse = re.sub(r"^ | $", "", parse)
    return parse.split(" ")


def _f_measure(precision: float, recall: float) -> float:
    """js-rouge's ``fMeasure`` with beta 1 (bounded by the smaller of the two)."""
    if precision == recall:
        return precision
    if precision == 0 or recall == 0:
        return 0.0
    if precision > recall:
        return min(precision, recall * (2 / (1 + recall / precision)))
    return min(recall, precision * (2 / (1 + precision / recall)))


def rouge_n(candidate: str, reference: str) -> float:
    """Return promptfoo's ROUGE-N (N = 1) F-measure of ``candidate`` against ``reference``, both lowercased."""
    found, wanted = tokenize(candidate.lower()), tokenize(reference.lower())
    if not found or not wanted:
        return 0.0
    counts = Counter(wanted)
    overlap = sum(min(n, counts[token]) for token, n in Counter(found).items())
    if overlap == 0:
        return 0.0
    return _f_measure(overlap / len(found), overlap / len(wanted))


class RougeN(Check):
    """``rouge-n``: the ROUGE-1 F-measure to ``value`` is at least ``threshold``."""

    def __init__(self, expected: str, threshold: float) -> None:
        self.expected = expected
        self.threshold = threshold

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        score = rouge_n(json_text(value), self.expected)
        return Verdict(
            score >= self.threshold,
            f"ROUGE-N >= {self.threshold:g} to {shorten(self.expected)}",
            f"ROUGE-N {score:.2f}",
            score=score,
        )


def make_rouge_n(p: Params) -> Check:
    """Make ``rouge-n``: a ROUGE-1 F-measure of at least ``threshold`` (default 0.75) to ``value``."""
    expected = p.text("value", required=True)
    threshold = p.number("threshold", minimum=0, maximum=1, what="a score from 0 to 1")
    assert expected is not None
    return RougeN(expected, 0.75 if threshold is None else threshold)
