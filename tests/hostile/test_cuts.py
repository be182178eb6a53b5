"""No piece of a secret out (wave 3, finding 2): every place that cuts a text to a size scrubs it
first, so a registered key that the cut goes through leaves no piece in what the place shows. For
each sink, a case per offset puts the key across the sink's cut, and no four characters of the key
reach the sink's file or the terminal."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import pytest

from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.models.batch.requests import BatchAnswers
from pytest_promptsuite.models.fake import FakeModel
from pytest_promptsuite.safety.scrub import register
from tests.hostile.support import assert_clean
from tests.hostile.support import endpoint
from tests.hostile.support import output
from tests.loopback import LoopbackServer
from tests.suite import Suite


#: The key: letters that nothing a run writes holds four of in a row (no digit, so no output parser
#: finds a JSON number in it), padded with dots, which hold none of its letters.
KEY = "KQZXJWVYPLMNBRGT"
#: The shortest piece looked for. The scrubber's unit is a whole registered secret (8 characters at
#: least, MIN_SECRET_LENGTH), so any piece of one is a leak; below four characters a piece cannot be
#: told apart from ordinary text, and a key of letters unused elsewhere makes four enough.
PIECE = 4
PAD = "."
LENGTH = 1000  # of every text carrying the key (longer than every cut but the dashboard's)


def pieces(text: str) -> list[str]:
    """Return the pieces of the key (PIECE characters or more) that ``text`` holds."""
    return sorted({KEY[i : i + PIECE] for i in range(len(KEY) - PIECE + 1) if KEY[i : i + PIECE] in text})


def straddling(cut: int) -> range:
    """Return each offset at which the key starts so that a cut at ``cut`` goes through it."""
    return range(cut - len(KEY) + 1, cut)


def carrying(offset: int, length: int = LENGTH, tail: str = "") -> str:
    """Return a text of ``length`` characters (then ``tail``) with the key at ``offset``."""
    return PAD * offset + KEY + PAD * (length - offset - len(KEY)) + tail


def _files(*names: str) -> Callable[[Suite, pytest.RunResult], str]:
    def read(suite: Suite, result: pytest.RunResult) -> str:
        return "\n".join((suite.path / name).read_text(encoding="utf-8") for name in names)

    return read


def _terminal(suite: Suite, result: pytest.RunResult) -> str:
    return output(result)


#: A model whose call raises an error repeating its prompt (a plugin's model, as it may be).
RAISING = """
class Raising:
    spec = "raising"
    async def generate(self, request):
        raise ValueError(request.prompt)

def pytest_promptsuite_make_model(config, spec, settings, root):
    if spec == "raising":
        return Raising()
"""
_RAISED = len("error: the model call raised ValueError: ")


@dataclass(frozen=True)
class Sink:
    """Where a run shows a text cut to a size: the case that puts the key at ``offset`` of the text,
    the offset the sink cuts that text at, and what to read of the run."""

    cut: int
    case: Callable[[int], dict[str, Any]]
    read: Callable[[Suite, pytest.RunResult], str]
    config: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    loopback: bool = False
    args: tuple[str, ...] = ()


def _failing(offset: int) -> dict[str, Any]:
    return {"input": carrying(offset), "must_include": ["MISSING"]}


#: A forbidden text at 1500: the terminal's window of 600 characters starts 200 before it.
_FORBIDDEN_AT = 1500


def _forbidden(offset: int) -> dict[str, Any]:
    text = carrying(offset, _FORBIDDEN_AT) + "FORBID" + PAD * 600
    return {"input": text, "must_not_include": ["FORBID"]}


SINKS: dict[str, Sink] = {
    # the failure output, trimmed to a window of 600 characters (report/text.py)
    "terminal-window-end": Sink(600, _failing, _terminal),
    "terminal-window-start": Sink(_FORBIDDEN_AT - 200, _forbidden, _terminal),
    "junit-window-end": Sink(600, _failing, _files("junit.xml"), args=("--junitxml", "junit.xml")),
    "junit-window-start": Sink(_FORBIDDEN_AT - 200, _forbidden, _files("junit.xml"), args=("--junitxml", "junit.xml")),
    # a check's message shows the start of the output: repr cut at 80 (one quote first), 20 characters
    "check-message-equals": Sink(
        79,
        lambda o: {"input": carrying(o), "assert": [{"type": "equals", "value": "x"}]},
        _files("report/results.jsonl"),
    ),
    "check-message-starts-with": Sink(
        20,
        lambda o: {"input": carrying(o), "assert": [{"type": "starts-with", "value": "zzz"}]},
        _files("report/results.jsonl"),
    ),
    # summary.md: each failing case's first failure, cut at 200 characters
    "summary-md-first-failure": Sink(
        199 - _RAISED,
        lambda o: {"input": carrying(o)},
        _files("report/summary.md"),
        config={"model": {"spec": "raising"}},
        files={"conftest.py": RAISING},
    ),
    # an HTTP error body (its message cut at 500) and a body that is not JSON (cut at 200)
    "http-error-message": Sink(
        500, lambda o: {"input": carrying(o, tail=" [[sayerror]]")}, _files("report/results.jsonl"), loopback=True
    ),
    "http-body-not-json": Sink(
        200, lambda o: {"input": carrying(o, tail=" [[saytext]]")}, _files("report/results.jsonl"), loopback=True
    ),
    # an output parser that finds no JSON quotes the output's first 60 characters
    "output-parser-json": Sink(
        60,
        lambda o: {"input": carrying(o)},
        _files("report/results.jsonl"),
        config={"template": {"task_prompts": "prompts.yml", "task": "t"}},
        files={"prompts.yml": "prompts:\n  - task: t\n    content: '{{ input }}'\n    output_parser: json\n"},
    ),
    # the dashboard: a failing case's details (4,000 characters), the grid's output (400) and input (200)
    "dashboard-details": Sink(
        4000, lambda o: {"input": carrying(o, 4500), "must_include": ["MISSING"]}, _files("report/dashboard.html")
    ),
    "dashboard-grid-output": Sink(400, lambda o: {"input": carrying(o)}, _files("report/dashboard.html")),
    "dashboard-grid-input": Sink(LENGTH - 200, lambda o: {"input": carrying(o)}, _files("report/dashboard.html")),
}


@pytest.fixture(autouse=True)
def _key(suite: Suite, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # registered by the run; the suite fixture cleared OPENAI_*


@pytest.mark.parametrize("name", list(SINKS))
def test_a_key_across_a_sinks_cut_leaves_no_piece_in_it(name: str, suite: Suite, loopback: LoopbackServer) -> None:
    sink = SINKS[name]
    offsets = straddling(sink.cut)
    model = endpoint(loopback.base_url, max_retries=0) if sink.loopback else {"model": {"spec": "fake"}}
    suite.config({**model, **sink.config})
    for file, text in sink.files.items():
        suite.write(file, text)
    suite.cases([{"case_id": f"o{o}", "slice": "s", **sink.case(o)} for o in offsets])
    result = suite.run("--prompt-report", "report", *sink.args)

    assert_clean(result)
    rows = suite.by_id()
    assert sorted(rows) == sorted(f"o{o}" for o in offsets)  # every case ran and has its row
    shown = sink.read(suite, result)
    assert all(f"o{o}" in shown for o in offsets), shown
    assert pieces(shown) == [], f"{name}: pieces of the key in what the run showed"
    assert pieces(output(result)) == [], f"{name}: pieces of the key on the terminal"


def test_a_batch_answers_error_body_is_scrubbed_then_cut() -> None:
    """A failed line of a batch job's output file: its body (JSON, cut at 500) in the case's error."""
    register(KEY)
    answers = BatchAnswers(FakeModel())
    prefix = len(encode({"detail": ""})) - 2  # where the text starts in the body's JSON
    for offset in straddling(500 - prefix):
        with pytest.raises(Exception) as raised:
            answers.answer({"status_code": 500, "body": {"detail": carrying(offset)}}, "batch-output.jsonl:1")
        assert pieces(str(raised.value)) == [], offset
