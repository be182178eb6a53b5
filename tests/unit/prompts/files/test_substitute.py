"""SPEC §4: placeholder substitution, single pass (D1)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_promptsuite.prompts.files.substitute import substitute


def test_known_placeholders_are_replaced() -> None:
    assert substitute("Q: {question} A: {answer}", {"question": "1+1", "answer": "2"}) == "Q: 1+1 A: 2"


def test_d1_values_are_never_rescanned_whatever_the_key_order() -> None:
    # the reference renders this "X|X" in one key order and "{b}|X" in the other
    assert substitute("{a}|{b}", {"a": "{b}", "b": "X"}) == "{b}|X"
    assert substitute("{a}|{b}", {"b": "X", "a": "{b}"}) == "{b}|X"


def test_d1_a_value_quoting_its_own_placeholder_stays_literal() -> None:
    assert substitute("{q}", {"q": "say {q} and {answer}", "answer": "SECRET"}) == "say {q} and {answer}"


def test_missing_placeholder_stays_verbatim() -> None:
    assert substitute("{question} / {missing}", {"question": "q"}) == "q / {missing}"


def test_no_brace_escaping() -> None:
    assert substitute("{{question}}", {"question": "V"}) == "{V}"


@pytest.mark.parametrize("text", ["{question:>5}", "{question!r}", "{ question }", "{0}", "{}"])
def test_only_the_exact_form_matches(text: str) -> None:
    assert substitute(text, {"question": "V", "0": "zero"} if text != "{0}" else {"question": "V"}) == text


def test_numeric_key_is_an_ordinary_key() -> None:
    assert substitute("{0}", {"0": "zero"}) == "zero"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (42, "42"),
        (1.5, "1.5"),
        (None, "None"),
        (True, "True"),
        (False, "False"),
        (["a", 1], "['a', 1]"),
        ({"k": "v"}, "{'k': 'v'}"),
    ],
)
def test_values_are_python_str(value: Any, text: str) -> None:
    assert substitute("<{v}>", {"v": value}) == f"<{text}>"


def test_every_occurrence_replaced_and_extra_keys_ignored() -> None:
    assert substitute("{x}{x}-{x}", {"x": "1", "unused": "2"}) == "11-1"


def test_longest_key_wins_when_keys_overlap() -> None:
    assert substitute("{a}{ab}", {"a": "1", "ab": "2"}) == "12"
