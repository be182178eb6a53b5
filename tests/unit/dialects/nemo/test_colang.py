"""A case's turns as the events NeMo Guardrails logs."""

from __future__ import annotations

from pytest_promptsuite.dialects.nemo.colang import events_of
from tests.fixtures.nemo.inputs import EVENTS


def test_case_turns_become_nemo_events() -> None:
    row = {"history": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}
    assert events_of(row) == [
        {"type": "UtteranceUserActionFinished", "final_transcript": "a"},
        {"type": "UserMessage", "text": "a"},
        {"type": "StartUtteranceBotAction", "script": "b"},
    ]
    assert events_of({**row, "events": EVENTS}) == EVENTS
