"""SPEC §2 render requests: validation of keys and values, the response shape; §12 error names."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_promptsuite.dialects.opencompass.render_request import render_request
from pytest_promptsuite.errors import TemplateError


BASE = {"prompt_template": {"template": "Q: {question}"}, "example": {"question": "q"}}
MT = {"type": "MultiTurnPromptTemplate", "template": {"round": [{"role": "HUMAN", "prompt": "{question}"}]}}


def test_seed_example_response() -> None:
    request = {
        "prompt_template": {"template": "{anything}\nQuestion: {question}\nAnswer: {answer}"},
        "example": {"anything": "blabla", "question": "1+1=?", "answer": "2"},
        "output_column": "answer",
        "mode": "gen",
        "parser": "lm",
    }
    assert render_request(request) == {
        "prompt": "blabla\nQuestion: 1+1=?\nAnswer: ",
        "intermediate": "blabla\nQuestion: 1+1=?\nAnswer: ",
        "retrieved": [],
    }


@pytest.mark.parametrize(
    ("change", "mention"),
    [
        ({"colour": "red"}, "'colour'"),
        ({"prompt_template": {"template": "x", "ice": "y"}}, "'ice'"),
        ({"prompt_template": {"type": "Nope", "template": "x"}}, "'Nope'"),
        ({"prompt_template": {"ice_token": "</E>"}}, "'template'"),
        ({"retriever": {"type": "ZeroRetriever", "ice_num": 1}}, "'ice_num'"),
        ({"retriever": {"type": "FixKRetriever"}}, "fix_id_list"),
        ({"retriever": {"type": "BM25Retriever"}}, "BM25Retriever"),
        ({"prompt_list": "x"}, "prompt_template"),
        ({"meta_template": {"round": []}}, "parser"),
        ({"infer_mode": "every"}, "infer_mode"),
        ({"model_outputs": []}, "model_outputs"),
        ({"mode": "score"}, "mode"),
        ({"parser": "html"}, "parser"),
        ({"output_column": 3}, "output_column"),
        ({"ice_examples": {}}, "ice_examples"),
        ({"example": ["q"]}, "example"),
        ({"ice_template": {"type": "MultiTurnPromptTemplate", "template": {"round": []}}}, "ice_template"),
    ],
)
def test_validation_errors_name_the_key(change: dict[str, Any], mention: str) -> None:
    with pytest.raises(TemplateError, match=mention):
        render_request({**BASE, **change})


def test_example_is_required() -> None:
    with pytest.raises(TemplateError, match="'example'"):
        render_request({"prompt_template": {"template": "x"}})


def test_multiturn_in_ppl_mode_is_an_error() -> None:
    with pytest.raises(TemplateError, match="ppl"):
        render_request({"prompt_template": MT, "example": {"question": ["q"], "answer": ["a"]}, "mode": "ppl"})


def test_request_must_be_an_object() -> None:
    with pytest.raises(TemplateError, match="object"):
        render_request(["not", "an", "object"])


def test_prompt_list_request_parses_directly() -> None:
    answer = render_request(
        {
            "prompt_list": [
                {"section": "round", "pos": "begin"},
                {"role": "HUMAN", "prompt": "hi"},
                {"section": "round", "pos": "end"},
            ],
            "parser": "lm",
            "meta_template": {"round": [{"role": "HUMAN", "begin": "> "}]},
        }
    )
    assert answer == {
        "prompt": "> hi",
        "intermediate": [
            {"section": "round", "pos": "begin"},
            {"role": "HUMAN", "prompt": "hi"},
            {"section": "round", "pos": "end"},
        ],
        "retrieved": [],
    }


@pytest.mark.parametrize("prompt_list", [3, [1], [["nested"]], [{"role": "HUMAN", "prompt": 5}]])
def test_bad_prompt_list_is_an_error(prompt_list: Any) -> None:
    with pytest.raises(TemplateError, match="prompt_list"):
        render_request({"prompt_list": prompt_list, "parser": "lm"})


def test_parser_null_returns_the_intermediate() -> None:
    answer = render_request(
        {"prompt_template": {"template": {"round": [{"role": "HUMAN", "prompt": "{q}"}]}}, "example": {"q": "x"}}
    )
    assert answer["prompt"] == answer["intermediate"]
    assert isinstance(answer["prompt"], list)


def test_multiturn_response_shape() -> None:
    answer = render_request({"prompt_template": MT, "example": {"question": ["q"], "answer": ["a"]}})
    assert set(answer) == {"requests", "intermediate", "chat", "retrieved"}
