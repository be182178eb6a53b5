"""SPEC §11 multimodal (D8): ``MMPromptTemplate``'s role items, their parts filled from the row's tagged content."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_promptsuite.dialects.opencompass.render_request import render_request
from pytest_promptsuite.errors import TemplateError


PARTS = {
    "text": {"type": "text", "text": "{anything}\nQuestion: {question} {answer}"},
    "image": {"type": "image_url", "image_url": {"url": "file://{image}"}},
    "audio": {"type": "audio_url", "audio_url": "data:audio/wav;base64,{audio}"},
}


CONTENT = (
    "<AIS_IMAGE_START>cat.jpg<AIS_CONTENT_TAG><AIS_TEXT_START>What is {image}?<AIS_CONTENT_TAG>"
    "junk<AIS_CONTENT_TAG><AIS_AUDIO_START>QUJD<AIS_CONTENT_TAG>"
)


def mm(row: dict[str, Any], parts: dict[str, Any] = PARTS, **request: Any) -> dict[str, Any]:
    template = {"round": [{"role": "HUMAN", "prompt_mm": parts}, {"role": "BOT", "prompt": "{answer}"}]}
    return render_request(
        {
            "prompt_template": {"type": "MMPromptTemplate", "template": template},
            "example": row,
            "output_column": "answer",
            **request,
        }
    )


def test_mm_parts_in_content_order_with_prefixes_kept() -> None:
    answer = mm({"anything": "bla", "content": CONTENT, "answer": "cat"})
    assert answer["intermediate"][1]["prompt_mm"] == [
        {"type": "image_url", "image_url": {"url": "file://cat.jpg"}},
        {"type": "text", "text": "bla\nQuestion: What is {image}? "},  # answer masked, data never refilled
        {"type": "audio_url", "audio_url": "data:audio/wav;base64,QUJD"},
    ]


def test_d8_content_from_the_first_tagged_field() -> None:
    answer = mm({"anything": "bla", "question": "<AIS_TEXT_START>hi<AIS_CONTENT_TAG>"})
    assert answer["intermediate"][1]["prompt_mm"] == [{"type": "text", "text": "bla\nQuestion: hi "}]


def test_mm_api_parser_sends_the_parts_list() -> None:
    meta = {"round": [{"role": "HUMAN", "api_role": "HUMAN"}, {"role": "BOT", "api_role": "BOT", "generate": True}]}
    answer = mm({"content": "<AIS_TEXT_START>hi", "anything": "a"}, parser="api", meta_template=meta)
    assert answer["prompt"] == [{"role": "HUMAN", "prompt": [{"type": "text", "text": "a\nQuestion: hi "}]}]


def test_mm_lm_parser_reads_only_prompt() -> None:
    meta = {
        "round": [{"role": "HUMAN", "begin": "<H>", "end": "</H>"}, {"role": "BOT", "begin": "<B>", "generate": True}]
    }
    assert mm({"content": "<AIS_TEXT_START>hi"}, parser="lm", meta_template=meta)["prompt"] == "<H></H><B>"


@pytest.mark.parametrize(
    ("row", "parts", "request_extra", "mention"),
    [
        ({"question": "no tags"}, PARTS, {}, "content"),
        ({"content": "<AIS_VIDEO_START>v.mp4"}, PARTS, {}, "video"),
        ({"content": "<AIS_TEXT_START>x"}, PARTS, {"mode": "ppl"}, "ppl"),
    ],
)
def test_mm_errors(row: dict[str, Any], parts: dict[str, Any], request_extra: dict[str, Any], mention: str) -> None:
    with pytest.raises(TemplateError, match=mention):
        mm(row, parts, **request_extra)
