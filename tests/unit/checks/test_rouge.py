"""``rouge-n`` as promptfoo scores it: js-rouge's Penn Treebank tokens (recorded from js-rouge 3.2.3, the
version promptfoo 0.123.1 installs) and the clipped unigram F-measure (scores recorded from promptfoo)."""

from __future__ import annotations

import pytest

from pytest_promptsuite.checks.rouge import rouge_n
from pytest_promptsuite.checks.rouge import tokenize


#: Each sentence and js-rouge's ``treeBankTokenize`` of it.
TOKENS = [
    (
        "The quick brown fox jumps over the lazy dog.",
        ["The", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "."],
    ),
    ("I can't believe it's not butter!", ["I", "ca", "n't", "believe", "it", "'s", "not", "butter", "!"]),
    ('He said "hello there" and left...', ["He", "said", "``", "hello", "there", "''", "and", "left", "..."]),
    (
        "Prices: $3.50, 1,000 items; e.g. U.S.A. (really) -- ok?",
        ["Prices", ":", "$", "3.50", ",", "1,000", "items", ";", "e.g.", "U.S.A.", "(", "really", ")", "--", "ok", "?"],
    ),
    ("cannot gonna wanna go 'tis", ["can", "not", "gon", "na", "wan", "na", "go", "'t", "is"]),
    ("``quoted'' text and 'single' ones", ["``", "quoted", "''", "text", "and", "'single", "'", "ones"]),
    ("a:b, c:1 x.", ["a", ":", "b", ",", "c:1", "x", "."]),
    ("Don't you dare!?", ["Do", "n't", "you", "dare", "!", "?"]),
    ("Paris is the capital of France.", ["Paris", "is", "the", "capital", "of", "France", "."]),
    ("  multiple   spaces\tand\nnewlines  ", ["multiple", "spaces", "and", "newlines"]),
    ('"Start quote', ["``", "Start", "quote"]),
    ('end quote"', ["end", "quote", "''"]),
    ("email me@x.com #tag 50% & more", ["email", "me", "@", "x.com", "#", "tag", "50", "%", "&", "more"]),
    (
        "The cat's toys aren't here; they'd gone.",
        ["The", "cat", "'s", "toys", "are", "n't", "here", ";", "they", "'d", "gone", "."],
    ),
]


@pytest.mark.parametrize(("sentence", "tokens"), TOKENS)
def test_the_tokens_are_js_rouges(sentence: str, tokens: list[str]) -> None:
    assert tokenize(sentence) == tokens


@pytest.mark.parametrize(
    ("candidate", "reference", "score"),
    [  # promptfoo 0.123.1's scores, on echo's output
        ("Summary: The cat sat on the mat.", "summary: the cat sat on the mat.", 1.0),
        ("Summary: I can't believe it's not butter!", "I cannot believe that this is butter", 0.4211),
        ("Summary: Dogs bark loudly at night", "dogs bark at night", 0.7273),
        ("Summary: A wholly different sentence", "Dogs bark at night", 0.0),
        ('Summary: He said "hello there" and left...', "summary: he said hello and left", 0.7778),
        ("Summary: Paris is the capital of France.", "Paris is France's capital", 0.5714),
        ("", "anything", 0.0),
    ],
)
def test_the_score_is_promptfoos(candidate: str, reference: str, score: float) -> None:
    assert round(rouge_n(candidate, reference), 4) == score
