"""SPEC §10 multi-turn (D7): ``MultiTurnPromptTemplate``'s conversations and the requests of each infer mode."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_promptsuite.dialects.opencompass.render_request import render_request
from pytest_promptsuite.errors import TemplateError


ROW = {"question": ["1+1=?", "2+2=?", "3+3=?"], "answer": ["2", "4", "6"]}
ROUND = [{"role": "HUMAN", "prompt": "{question}"}, {"role": "BOT", "prompt": "{answer}"}]
API = {"round": [{"role": "HUMAN", "api_role": "HUMAN"}, {"role": "BOT", "api_role": "BOT", "generate": True}]}
LM = {
    "round": [
        {"role": "HUMAN", "begin": "<H>", "end": "\n"},
        {"role": "BOT", "begin": "<B>", "end": "\n", "generate": True},
    ]
}
REPLIES = ["answer1", "answer2", "answer3"]


def multi(template: Any = None, row: Any = None, **request: Any) -> dict[str, Any]:
    return render_request(
        {
            "prompt_template": {"type": "MultiTurnPromptTemplate", "template": template or {"round": ROUND}},
            "example": ROW if row is None else row,
            **request,
        }
    )


def H(p: str) -> dict[str, str]:
    return {"role": "HUMAN", "prompt": p}


def B(p: str) -> dict[str, str]:
    return {"role": "BOT", "prompt": p}


def test_every_feeds_the_models_replies() -> None:
    answer = multi(parser="api", meta_template=API, infer_mode="every", model_outputs=REPLIES)
    assert answer["requests"] == [
        [H("1+1=?")],
        [H("1+1=?"), B("answer1"), H("2+2=?")],
        [H("1+1=?"), B("answer1"), H("2+2=?"), B("answer2"), H("3+3=?")],
    ]
    assert answer["retrieved"] == []


def test_every_with_gt_keeps_the_ground_truth() -> None:
    answer = multi(parser="api", meta_template=API, infer_mode="every_with_gt", model_outputs=REPLIES)
    assert answer["requests"][2] == [H("1+1=?"), B("2"), H("2+2=?"), B("4"), H("3+3=?")]


def test_d7_last_works() -> None:
    answer = multi(parser="lm", meta_template=LM, infer_mode="last")
    assert answer["requests"] == ["<H>1+1=?\n<B>2\n<H>2+2=?\n<B>4\n<H>3+3=?\n<B>"]


def test_chat_is_the_whole_conversation_with_ground_truth() -> None:
    answer = multi(infer_mode="last")
    assert answer["chat"] == [
        {"section": "round", "pos": "begin"},
        H("1+1=?"),
        B("2"),
        H("2+2=?"),
        B("4"),
        H("3+3=?"),
        B("6"),
        {"section": "round", "pos": "end"},
    ]


def test_reply_is_inserted_verbatim() -> None:
    answer = multi(parser="api", meta_template=API, model_outputs=["{question} {answer}", "x"])
    assert answer["requests"][1][1] == B("{question} {answer}")


def test_failed_request_stops_every() -> None:
    answer = multi(parser="api", meta_template=API, model_outputs=["a1", None, "a3"])
    assert len(answer["requests"]) == 2


def test_missing_reply_is_named() -> None:
    with pytest.raises(TemplateError, match="model_outputs"):
        multi(parser="api", meta_template=API, model_outputs=["a1"])


def test_no_meta_every_is_a_newline_join_with_the_end_section() -> None:
    template = {"round": ROUND, "end": [{"role": "HUMAN", "prompt": "bye"}]}
    answer = multi(template, parser="lm", infer_mode="every_with_gt")
    assert answer["requests"][0] == "1+1=?\nbye"


def test_d7_bot_turns_follow_the_generate_role() -> None:
    meta = {
        "round": [{"role": "USER", "api_role": "HUMAN"}, {"role": "ASSISTANT", "api_role": "BOT", "generate": True}]
    }
    template = {"round": [{"role": "USER", "prompt": "{question}"}, {"role": "ASSISTANT", "prompt": "{answer}"}]}
    answer = multi(template, parser="api", meta_template=meta, infer_mode="every_with_gt")
    assert len(answer["requests"]) == 3


def test_d7_every_field_fills_turns_and_scalars_fill_begin() -> None:
    template = {
        "begin": [{"role": "SYSTEM", "prompt": "{topic}: {question}"}],
        "round": [{"role": "HUMAN", "prompt": "[{topic}] {question} {hint}"}, ROUND[1]],
    }
    row = {**ROW, "topic": "math", "hint": ["h1"]}
    answer = multi(template, row, infer_mode="last")
    chat = answer["chat"]
    assert chat[1] == {"role": "SYSTEM", "prompt": "math: {question}"}
    assert chat[4] == H("[math] 1+1=? ['h1']")


def test_zip_truncates_to_the_shorter_array() -> None:
    answer = multi(row={"question": ["a", "b", "c"], "answer": ["1"]}, infer_mode="every_with_gt")
    assert len(answer["requests"]) == 1


def test_no_bot_turn() -> None:
    template = {"round": [ROUND[0]]}
    assert multi(template, infer_mode="every")["requests"] == []
    with pytest.raises(TemplateError, match="last"):
        multi(template, infer_mode="last")


@pytest.mark.parametrize(
    ("kwargs", "mention"),
    [
        ({"infer_mode": "first"}, "first"),
        ({"template": {"begin": "Intro", "round": ROUND}}, "Intro"),
        ({"row": {"question": "1+1=?", "answer": ["2"]}}, "question"),
        ({"row": {"question": ["q"]}}, "answer"),
        ({"mode": "ppl"}, "ppl"),
    ],
)
def test_multiturn_errors(kwargs: dict[str, Any], mention: str) -> None:
    with pytest.raises(TemplateError, match=mention):
        multi(**kwargs)
