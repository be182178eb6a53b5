"""The one secret scrubber (finding 1 and 5): what it removes, that JSON stays JSON, that log
records of httpx and httpcore are scrubbed before any handler sees them."""

from __future__ import annotations

import logging
import re

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.safety.scrub import install_log_filter
from pytest_promptsuite.safety.scrub import printable
from pytest_promptsuite.safety.scrub import public_url
from pytest_promptsuite.safety.scrub import register
from pytest_promptsuite.safety.scrub import scrub
from pytest_promptsuite.safety.scrub import scrub_cut


KEY = "sk-hostile-scrub-test-0123456789"
register(KEY)


@pytest.mark.parametrize(
    ("text", "clean"),
    [
        (f"error: Incorrect API key provided: {KEY}", "error: Incorrect API key provided: ***"),
        ("headers={'Authorization': 'Bearer abc.def-123'}", "headers={'Authorization': 'Bearer ***'}"),
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic ***"),
        ("curl -H 'authorization: token ghp_1234567890'", "curl -H 'authorization: token ***'"),
        ("POST http://user:hunter2@host:8000/v1/x", "POST http://***@host:8000/v1/x"),
        ("https://h/v1?api-key=abc123&api-version=2024", "https://h/v1?api-key=***&api-version=2024"),
        ("see https://h/path?key=SECRETVALUE#frag", "see https://h/path?key=***#frag"),
        ("the bearer of this letter", "the bearer of this letter"),  # English stays
        ("the bearer instrument", "the bearer instrument"),
        ("plain text with no secret", "plain text with no secret"),
    ],
)
def test_what_the_scrubber_removes(text: str, clean: str) -> None:
    assert scrub(text) == clean


def test_nothing_to_scrub_returns_the_same_object() -> None:
    text = "nothing here " * 20
    assert scrub(text) is text


def test_short_values_are_not_registered() -> None:
    register("EMPTY")  # vLLM's placeholder key: scrubbing it would garble every "EMPTY" in outputs
    assert scrub("EMPTY") == "EMPTY"


SECRETISH = st.sampled_from([KEY, f"Bearer {KEY}", "http://u:p@h/", "?token=abcdef", '"', "\\", "\u2028", "x"])


@settings(max_examples=200, derandomize=True)
@given(st.lists(SECRETISH | st.text(max_size=8), max_size=12))
def test_scrubbed_json_is_still_json_and_holds_no_key(parts: list[str]) -> None:
    value = {"output": "".join(parts), "list": parts}
    text = encode(value)
    assert KEY not in text
    assert isinstance(decode(text, strict=False), dict)


def test_public_url_drops_userinfo_and_key_values() -> None:
    assert public_url("http://u:p@h:1/v1?api-key=zzz&api-version=1") == "http://h:1/v1?api-key=***&api-version=1"
    assert public_url("http://h/v1") == "http://h/v1"


def test_printable_escapes_lone_surrogates_for_the_terminal() -> None:
    assert printable(f"a\ud800b {KEY}") == "a\\ud800b ***"


def test_log_records_of_httpx_and_httpcore_are_scrubbed(caplog: pytest.LogCaptureFixture) -> None:
    install_log_filter()
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("httpx").info('HTTP Request: POST %s "HTTP/1.1 200 OK"', f"http://h/v1?key={KEY}")
        logging.getLogger("httpcore.http11").debug(
            "send_request_headers.started headers=%r", {"authorization": f"Bearer {KEY}"}
        )
    assert caplog.records
    assert KEY not in caplog.text
    assert "key=***" in caplog.text


def test_the_letters_the_pattern_folds_to_ascii_are_all_known() -> None:
    """The pre-check's list of non-ASCII letters that ``(?i:...)`` matches as ASCII ones is whole:
    every code point is tried against every ASCII letter."""
    from pytest_promptsuite.safety.scrub import _FOLDS_TO_ASCII

    everything = "".join(chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c <= 0xDFFF)
    folding = {m.group() for letter in "abcdefghijklmnopqrstuvwxyz" for m in re.finditer(f"(?i:{letter})", everything)}
    assert folding == set(_FOLDS_TO_ASCII)


FRAGMENTS = st.sampled_from(
    [
        "Authorization: Bearer abc.def-123",
        "AUTHORİZATİON: basic dXNlcjpwYXNz",
        "authorızation=token x1234567",
        "beARer abcdefgh1",
        "BEARER 12345678",
        "?ſecret=v",
        "&\\u212aey=v",
        "?KEY=v",
        "&api_key=v",
        "http://u:p@h/",
        "://",
        "@",
        "=",
        "?",
        "&",
        "bearer",
        "ı",
        "İ",
        "ſ",
        "\\u212a",
        "中文",
        "\\u2028",
        "\\ud800",
        " ",
    ]
)


@settings(max_examples=500, derandomize=True)
@given(st.lists(FRAGMENTS | st.text(max_size=6), max_size=10))
def test_the_pre_check_never_skips_text_the_pattern_would_scrub(parts: list[str]) -> None:
    from pytest_promptsuite.safety.scrub import _GENERIC
    from pytest_promptsuite.safety.scrub import _may_hold_credentials

    text = "".join(parts)
    if _GENERIC.search(text) is not None:
        assert _may_hold_credentials(text), text


@pytest.mark.parametrize(
    "text",
    [
        "Authorızation: Basic dXNlcjpwYXNz",  # dotless i
        "authorİzation: token ghp_1234567890",  # dotted capital I
        "see https://h/path?ſecret=SECRETVALUE#frag",  # long s
        "https://h/v1?api-\u212aey=abc123",  # Kelvin sign
        "中文 Authorization: Bearer abc.def-123 中文",
    ],
)
def test_credentials_spelled_with_letters_outside_ascii_are_scrubbed(text: str) -> None:
    assert "***" in scrub(text)


def test_scrub_cut_keeps_a_window_of_the_scrubbed_text() -> None:
    text = "a" * 10 + KEY + "b" * 10
    assert scrub_cut(text, 100) == ("a" * 10 + "***" + "b" * 10, 0, 0)
    assert scrub_cut(text, 12) == ("a" * 10 + "**", 0, 11)  # the key across the cut: scrubbed first
    assert scrub_cut(text, 12, start=-12) == ("**" + "b" * 10, 11, 0)
    assert scrub_cut(text, 5, start=9) == ("a***b", 9, 9)
    assert scrub_cut(text, 5, start=100) == ("bbbbb", 18, 0)  # moved back so that the limit fits
    # an offset into the text is where that place is once the key before it is scrubbed
    assert scrub_cut(KEY + "c" * 50, 10, start=len(KEY) + 8) == ("c" * 10, 11, 32)


#: Secrets and credentials, each with the part of it that must never show: a registered key, a bearer
#: token, a header's credential, a URL's user and password, a key-like query value.
CREDENTIALS = [
    (KEY, KEY),
    ("Bearer QZXJWVYPLMNB.7", "QZXJWVYPLMNB.7"),
    ("Authorization :  Basic QZXJWVYPLMNB", "QZXJWVYPLMNB"),
    ("https://QZXJ:WVYPLMNB@host/x", "QZXJ:WVYPLMNB"),
    ("see http://h/p?token=QZXJWVYPLMNB&x=1", "QZXJWVYPLMNB"),
]


@settings(max_examples=600, derandomize=True)
@given(
    st.sampled_from(CREDENTIALS),
    st.integers(0, 60),
    st.integers(1, 60),
    st.integers(-70, 70),
    st.sampled_from([".", " ", "文."]),
)
def test_no_cut_leaves_a_piece_of_a_secret(
    credential: tuple[str, str], offset: int, limit: int, start: int, pad: str
) -> None:
    """Wherever the cut goes (through the secret, or between a credential's name and its value),
    no four characters of the secret are kept, and the kept part is the scrubbed text's."""
    text, secret = credential
    text = pad * offset + text + pad * 30
    assert secret not in scrub(text)
    kept, before, after = scrub_cut(text, limit, start=start)
    assert not any(secret[i : i + 4] in kept for i in range(len(secret) - 3)), (text, limit, start, kept)
    assert kept in scrub(text) and len(kept) <= limit
