"""The infer_cfg engine of a ``[template]`` table: what each case sends, from the prompt, ice and multi-turn
templates, the retriever and the model's meta template (stage test, no pytest run)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.cases.load import load_cases
from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.dialects.opencompass.infer_cfg import InferCfgSource
from pytest_promptsuite.errors import TemplateError


def case(**fields: Any) -> PromptCase:
    return PromptCase.from_dict({"case_id": "c", "slice": "s", "input": "hi", **fields})


QA = {"template": "Q: {question}\nA: {answer}"}
DIALOGUE = {"template": {"round": [{"role": "HUMAN", "prompt": "{input}"}, {"role": "BOT", "prompt": "{answer}"}]}}


def test_no_template_no_meta_sends_the_input_as_is() -> None:
    assert InferCfgSource({}).prompt(case(input="hello {answer}", answer="x")) == "hello {answer}"
    assert InferCfgSource({}, endpoint="completions").prompt(case()) == "hi"


def test_string_template_masks_the_answer() -> None:
    prompts = InferCfgSource({"prompt_template": QA})
    assert prompts.prompt(case(input="1+1=?", answer="2")) == "Q: 1+1=?\nA: "


def test_chat_endpoint_defaults_to_the_standard_api_template() -> None:
    assert InferCfgSource({"prompt_template": DIALOGUE}).prompt(case(answer="no")) == [
        {"role": "user", "content": "hi"}
    ]


def test_plain_meta_joins_a_dialogue_into_a_string() -> None:
    prompts = InferCfgSource({"prompt_template": DIALOGUE}, meta="plain")
    assert prompts.prompt(case(answer="no")) == "hi"


def test_lm_meta_template_by_name() -> None:
    prompts = InferCfgSource({"prompt_template": DIALOGUE}, meta="chatml", endpoint="completions")
    assert prompts.prompt(case()) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_meta_template_without_template_wraps_the_input() -> None:
    prompts = InferCfgSource({}, meta="llama3", endpoint="completions")
    assert prompts.prompt(case()) == (
        "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
    )


def test_unknown_meta_name_is_a_render_error() -> None:
    with pytest.raises(TemplateError, match="vicuna"):
        InferCfgSource({}, meta="vicuna").prompt(case())


def _train(tmp_path: Path) -> Path:
    path = tmp_path / "train.jsonl"
    rows = [
        {"input": "2+2=?", "answer": "4"},
        {"input": "3+3=?", "vars": {"hint": "h"}, "answer": "6"},
        {"question": "5+5=?", "answer": "10"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    return path


def test_train_file_gives_the_ice_rows(tmp_path: Path) -> None:
    prompts = InferCfgSource(
        {
            "prompt_template": {"template": "</E>Q: {question}\nA: {answer}", "ice_token": "</E>"},
            "ice_template": {"template": "Q: {question} {hint}\nA: {answer}"},
            "retriever": {"type": "FixKRetriever", "fix_id_list": [1, 2]},
        },
        train_file=_train(tmp_path),
    )
    assert prompts.prompt(case(input="1+1=?", answer="2")) == (
        "Q: 3+3=? h\nA: 6\nQ: 5+5=? {hint}\nA: 10\nQ: 1+1=?\nA: "
    )


def test_missing_train_file_is_a_render_error(tmp_path: Path) -> None:
    prompts = InferCfgSource(
        {
            "ice_template": {"template": "</E>{input}", "ice_token": "</E>"},
            "retriever": {"type": "FixKRetriever", "fix_id_list": [0]},
        },
        train_file=tmp_path / "nope.jsonl",
    )
    with pytest.raises(TemplateError, match="nope.jsonl"):
        prompts.prompt(case())


def test_random_retriever_gives_the_kth_draw_to_the_case_on_line_k(tmp_path: Path) -> None:
    import numpy as np

    cases_file = tmp_path / "cases.jsonl"
    cases_file.write_text(
        "\n".join(json.dumps({"case_id": f"c{i}", "slice": "s", "input": f"q{i}"}) for i in range(3)), encoding="utf-8"
    )
    cases = load_cases(cases_file)
    prompts = InferCfgSource(
        {
            "ice_template": {"template": "</E>{question}", "ice_token": "</E>"},
            "retriever": {"type": "RandomRetriever", "ice_num": 1, "seed": 43},
        },
        train_file=_train(tmp_path),
    )
    rng = np.random.RandomState(43)
    draws = [int(rng.choice(3, 1, replace=False)[0]) for _ in range(3)]
    inputs = ["2+2=?", "3+3=?", "5+5=?"]
    for c, draw in zip(cases, draws, strict=True):
        first = prompts.prompt(c).split("\n")[0]
        assert first == inputs[draw]
    assert len(set(draws)) > 1  # the cases do not all get the same example


def test_multiturn_every_follows_the_replies() -> None:
    prompts = InferCfgSource({}, endpoint="chat")
    mt = case(input=["a", "b"], answer=["1", "2"])
    assert prompts.prompt(mt) == [{"role": "user", "content": "a"}]
    assert prompts.follow_up(mt, ["R1"]) == [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "R1"},
        {"role": "user", "content": "b"},
    ]
    assert prompts.follow_up(mt, ["R1", "R2"]) is None
    assert prompts.follow_up(case(), ["x"]) is None


def test_multiturn_last_sends_one_request_with_ground_truth() -> None:
    prompts = InferCfgSource({"infer_mode": "last"}, meta="plain")
    mt = case(input=["a", "b", "c"], answer=["1", "2"])  # missing answers are padded
    assert prompts.known_requests(mt) == ["a\n1\nb\n2\nc"]
    assert prompts.follow_up(mt, ["x"]) is None


def test_multiturn_string_answer_is_the_final_turns() -> None:
    prompts = InferCfgSource({"infer_mode": "every_with_gt"}, meta="plain")
    mt = case(input=["a", "b"], answer="2")
    assert prompts.known_requests(mt) == ["a", "a\nb"]  # not "a\n2\nb": "2" answers "b"


def test_template_file_keys_are_not_silently_ignored() -> None:
    with pytest.raises(TemplateError, match="template_file"):
        InferCfgSource({"template_file": "prompts/v1.txt"}).prompt(case())


def test_multimodal_case_sends_openai_content_parts() -> None:
    parts = {
        "text": {"type": "text", "text": "{question}"},
        "image": {"type": "image_url", "image_url": {"url": "data:image/png;base64,{image}"}},
    }
    template = {
        "type": "MMPromptTemplate",
        "template": {"round": [{"role": "HUMAN", "prompt_mm": parts}, {"role": "BOT", "prompt": "{answer}"}]},
    }
    mm = case(input="<AIS_IMAGE_START>iVBOR<AIS_CONTENT_TAG><AIS_TEXT_START>What is shown?", answer="a cat")
    assert InferCfgSource({"prompt_template": template}).prompt(mm) == [
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}},
                {"type": "text", "text": "What is shown?"},
            ],
        }
    ]


def test_the_infer_cfg_engine_refuses_keys_of_other_kinds() -> None:
    case = PromptCase(case_id="c", input="hi", slice="s")
    for key, value in (("task", "a"), ("mode", "compact"), ("template", "x"), ("renderer", "jinja")):
        with pytest.raises(TemplateError, match=f"^\\[template\\] {key} is not handled by the infer_cfg templates"):
            InferCfgSource({key: value}).prompt(case)
