"""Built-in meta templates by name, each against a hand-written expected string."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_promptsuite.dialects.opencompass.chat_formats import BUILTIN_META_TEMPLATES
from pytest_promptsuite.dialects.opencompass.chat_formats import builtin_meta
from pytest_promptsuite.dialects.opencompass.chat_formats import resolve_meta
from pytest_promptsuite.dialects.opencompass.render_request import render_request
from pytest_promptsuite.errors import TemplateError


ROUND = [{"role": "HUMAN", "prompt": "{question}"}, {"role": "BOT", "prompt": "{answer}"}]
TEMPLATE = {"begin": [{"role": "SYSTEM", "fallback_role": "HUMAN", "prompt": "Be brief."}, "</E>"], "round": ROUND}
TRAIN = [{"question": "2+2=?", "answer": "4"}]


def one_shot(meta: str, parser: str = "lm") -> Any:
    request = {
        "prompt_template": {"template": TEMPLATE, "ice_token": "</E>"},
        "ice_template": {"template": {"round": ROUND}},
        "retriever": {"type": "FixKRetriever", "fix_id_list": [0]},
        "ice_examples": TRAIN,
        "example": {"question": "1+1=?", "answer": "2"},
        "output_column": "answer",
        "parser": parser,
    }
    resolved = builtin_meta(meta)
    if resolved is not None:
        request["meta_template"] = resolved
    return render_request(request)["prompt"]


EXPECTED = {
    "chatml": (
        "<|im_start|>system\nBe brief.<|im_end|>\n"
        "<|im_start|>user\n2+2=?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n"
        "<|im_start|>user\n1+1=?<|im_end|>\n<|im_start|>assistant\n"
    ),
    "llama3": (
        "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\n2+2=?<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n4<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\n1+1=?<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
    ),
    "llama2": "<<SYS>>\nBe brief.\n<</SYS>>\n\n[INST] 2+2=? [/INST] 4 </s><s>[INST] 1+1=? [/INST] ",
    "mistral": "[INST] Be brief. [/INST][INST] 2+2=? [/INST]4</s>[INST] 1+1=? [/INST]",
    "gemma": (
        "<start_of_turn>user\nBe brief.<end_of_turn>\n"
        "<start_of_turn>user\n2+2=?<end_of_turn>\n<start_of_turn>model\n4<end_of_turn>\n"
        "<start_of_turn>user\n1+1=?<end_of_turn>\n<start_of_turn>model\n"
    ),
    "phi3": (
        "<|system|>\nBe brief.<|end|>\n<|user|>\n2+2=?<|end|>\n<|assistant|>\n4<|end|>\n"
        "<|user|>\n1+1=?<|end|>\n<|assistant|>\n"
    ),
    "plain": "Be brief.\n2+2=?\n4\n1+1=?",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_builtin_lm_meta_template(name: str) -> None:
    assert one_shot(name) == EXPECTED[name]


def test_qwen_is_chatml() -> None:
    assert one_shot("qwen") == EXPECTED["chatml"]
    assert one_shot("Qwen2.5") == EXPECTED["chatml"]


def test_standard_api_template() -> None:
    assert one_shot("api", parser="api") == [
        {"role": "SYSTEM", "prompt": "Be brief."},
        {"role": "HUMAN", "prompt": "2+2=?"},
        {"role": "BOT", "prompt": "4"},
        {"role": "HUMAN", "prompt": "1+1=?"},
    ]
    assert one_shot("api_nosystem", parser="api")[0] == {"role": "HUMAN", "prompt": "Be brief.\n2+2=?"}


def test_every_builtin_is_covered() -> None:
    assert set(BUILTIN_META_TEMPLATES) == set(EXPECTED) | {"qwen", "api", "api_nosystem"}


def test_eos_token_ids_are_exposed() -> None:
    assert builtin_meta("chatml")["eos_token_id"] == 151645  # type: ignore[index]
    assert builtin_meta("llama3")["eos_token_id"] == 128009  # type: ignore[index]


def test_builtin_is_a_copy() -> None:
    builtin_meta("chatml")["round"].clear()  # type: ignore[index]
    assert builtin_meta("chatml")["round"]  # type: ignore[index]


def test_unknown_name_lists_the_builtins() -> None:
    with pytest.raises(TemplateError, match="chatml"):
        builtin_meta("vicuna")


def test_resolve_meta() -> None:
    assert resolve_meta(None) is None
    assert resolve_meta({"round": []}) == {"round": []}
    assert resolve_meta("plain") is None
    with pytest.raises(TemplateError, match="meta_template"):
        resolve_meta(3)
