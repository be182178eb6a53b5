"""SPEC §5 PromptTemplate and §6.2-6.4 in-context examples, through ``render_request``."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_promptsuite.dialects.opencompass.render_request import render_request
from pytest_promptsuite.dialects.opencompass.template import PromptTemplate
from pytest_promptsuite.errors import TemplateError


ROW = {"anything": "blabla", "question": "1+1=?", "answer": "2"}
TRAIN = [{"question": "2+2=?", "answer": "4"}, {"question": "3+3=?", "answer": "6"}]
QA_ROUND = [{"role": "HUMAN", "prompt": "{question}"}, {"role": "BOT", "prompt": "{answer}"}]
M_GEN = {
    "round": [
        {"role": "HUMAN", "begin": "<HUMAN>: ", "end": "<eoh>\n"},
        {"role": "BOT", "begin": "<BOT>: ", "end": "<eob>\n", "generate": True},
    ],
    "reserved_roles": [{"role": "SYSTEM", "begin": "<SYSTEM>: ", "end": "<eosys>\n"}],
}


def render(**request: Any) -> dict[str, Any]:
    request.setdefault("output_column", "answer")
    return render_request(request)


def R(section: str, pos: str) -> dict[str, str]:
    return {"section": section, "pos": pos}


# -- 5.1 construction ------------------------------------------------------------------------


@pytest.mark.parametrize("template", [3, ["a"], None, True])
def test_template_must_be_string_or_object(template: Any) -> None:
    with pytest.raises(TemplateError, match="string or an object"):
        PromptTemplate(template)


@pytest.mark.parametrize("template", [{}, {"begin": "x"}, {"begin": "x", "end": "y"}])
def test_d9_dialogue_without_round_is_rejected_when_built(template: dict[str, Any]) -> None:
    with pytest.raises(TemplateError, match="'round'"):
        PromptTemplate(template)


def test_object_value_must_be_string_array_or_object() -> None:
    with pytest.raises(TemplateError, match="'A'"):
        PromptTemplate({"A": 3, "B": "x"})


def test_ice_token_must_be_in_string_values() -> None:
    with pytest.raises(TemplateError, match="</E>"):
        PromptTemplate("Q: {question}", ice_token="</E>")
    with pytest.raises(TemplateError, match="</E>"):
        PromptTemplate({"A": "</E>a", "B": "b"}, ice_token="</E>")
    with pytest.raises(TemplateError, match="</E>"):
        PromptTemplate({"begin": "intro", "round": QA_ROUND}, ice_token="</E>")


def test_array_values_are_not_checked_for_the_ice_token() -> None:
    template = PromptTemplate({"begin": ["intro"], "round": QA_ROUND}, ice_token="</E>")
    assert template.kind == "dialogue"


def test_mixed_round_dict_is_a_label_map() -> None:
    template = PromptTemplate({"round": QA_ROUND, "A": "x"})
    assert template.kind == "labels"
    with pytest.raises(TemplateError, match="'round'"):
        template.choose("round")


# -- 5.2 encoding, 7.3 join -------------------------------------------------------------------


def test_string_template_masks_the_answer_and_keeps_the_space() -> None:
    answer = render(
        prompt_template={"template": "{anything}\nQuestion: {question}\nAnswer: {answer}"}, example=ROW, parser="lm"
    )
    assert answer == {
        "prompt": "blabla\nQuestion: 1+1=?\nAnswer: ",
        "intermediate": "blabla\nQuestion: 1+1=?\nAnswer: ",
        "retrieved": [],
    }


def test_dialogue_is_encoded_with_section_markers() -> None:
    template = {
        "begin": [{"role": "SYSTEM", "fallback_role": "HUMAN", "prompt": "Solve."}],
        "round": [{"role": "HUMAN", "prompt": "Question: {question}"}, {"role": "BOT", "prompt": "Answer: {answer}"}],
        "end": "Bye {question}",
    }
    answer = render(prompt_template={"template": template}, example=ROW)
    assert answer["intermediate"] == [
        R("begin", "begin"),
        {"role": "SYSTEM", "fallback_role": "HUMAN", "prompt": "Solve."},
        R("begin", "end"),
        R("round", "begin"),
        {"role": "HUMAN", "prompt": "Question: 1+1=?"},
        {"role": "BOT", "prompt": "Answer: "},
        R("round", "end"),
        R("end", "begin"),
        "Bye 1+1=?",
        R("end", "end"),  # D3: the end section opens with begin
    ]
    assert answer["prompt"] == answer["intermediate"]  # parser null: the intermediate itself


def test_no_meta_join_skips_the_empty_answer() -> None:
    answer = render(
        prompt_template={
            "template": {
                "round": [
                    {"role": "HUMAN", "prompt": "Question: {question}"},
                    {"role": "BOT", "prompt": "Answer: {answer}"},
                ]
            }
        },
        example=ROW,
        parser="lm",
    )
    assert answer["prompt"] == "Question: 1+1=?\nAnswer: "


def test_item_begin_and_end_keys_are_not_filled() -> None:
    answer = render(
        prompt_template={
            "template": {"round": [{"role": "HUMAN", "prompt": "{question}", "begin": "{question}", "end": "{answer}"}]}
        },
        example=ROW,
    )
    assert answer["intermediate"][1] == {"role": "HUMAN", "prompt": "1+1=?", "begin": "{question}", "end": "{answer}"}


def test_item_that_is_neither_string_nor_object_is_an_error() -> None:
    with pytest.raises(TemplateError, match=r"round\[1\]"):
        render(prompt_template={"template": {"round": [{"role": "HUMAN", "prompt": "x"}, 7]}}, example=ROW)


# -- 5.3 label maps ---------------------------------------------------------------------------

LABELS = {"A": "Q: {question} A: it is A", "B": "Q: {question} A: it is B"}


def test_gen_uses_the_first_key_whatever_the_label() -> None:
    answer = render(prompt_template={"template": LABELS}, example={**ROW, "answer": "B"}, parser="lm")
    assert answer["prompt"] == "Q: 1+1=? A: it is A"


def test_ppl_uses_the_requested_label() -> None:
    answer = render(prompt_template={"template": LABELS}, example=ROW, mode="ppl", label="B", parser="lm")
    assert answer["prompt"] == "Q: 1+1=? A: it is B"


def test_ppl_unknown_label_is_named() -> None:
    with pytest.raises(TemplateError, match="'C'"):
        render(prompt_template={"template": LABELS}, example=ROW, mode="ppl", label="C")


def test_ppl_label_map_without_label_is_an_error() -> None:
    with pytest.raises(TemplateError, match="label"):
        render(prompt_template={"template": LABELS}, example=ROW, mode="ppl")


def test_ppl_fills_the_answer_unmasked() -> None:
    answer = render(prompt_template={"template": "Q: {question} A: {answer}"}, example=ROW, mode="ppl", parser="lm")
    assert answer["prompt"] == "Q: 1+1=? A: 2"


def test_output_column_null_fills_the_answer_in_gen() -> None:
    answer = render_request({"prompt_template": {"template": "A: {answer}"}, "example": ROW})
    assert answer["prompt"] == "A: 2"


def test_output_column_absent_from_the_row_still_masks() -> None:
    answer = render(prompt_template={"template": "A: {answer}"}, example={"question": "q"})
    assert answer["prompt"] == "A: "


def test_gen_field_replace_token() -> None:
    answer = render(prompt_template={"template": "A: {answer}"}, example=ROW, gen_field_replace_token="<A>")
    assert answer["prompt"] == "A: <A>"


# -- 5.4-5.7 ICE ------------------------------------------------------------------------------

FIXK = {"type": "FixKRetriever", "fix_id_list": [0, 1]}


def test_string_two_shot() -> None:
    answer = render(
        prompt_template={"template": "Solve.\n</E>{question}\n{answer}", "ice_token": "</E>"},
        ice_template={"template": "{question}\n{answer}"},
        retriever=FIXK,
        ice_examples=TRAIN,
        example=ROW,
        parser="lm",
    )
    assert answer["prompt"] == "Solve.\n2+2=?\n4\n3+3=?\n6\n1+1=?\n"
    assert answer["retrieved"] == [0, 1]


def test_sep_token_kept_in_ice_items_but_removed_in_gen_prompt() -> None:
    request = dict(
        prompt_template={"template": "</E>{question}<SEP>{answer}", "ice_token": "</E>", "sep_token": "<SEP>"},
        ice_template={"template": "{question}<SEP>{answer}", "sep_token": "<SEP>"},
        retriever={"type": "FixKRetriever", "fix_id_list": [0]},
        ice_examples=TRAIN,
        example=ROW,
        parser="lm",
    )
    # gen: sep removed from the template and from the ICE
    assert render(**request)["prompt"] == "2+2=?4\n1+1=?"
    # ppl: sep removed from the template text only; the ICE keeps it
    assert render(**request, mode="ppl")["prompt"] == "2+2=?<SEP>4\n1+1=?2"


def test_d2_ice_is_never_filled_by_the_test_row() -> None:
    train = [{"question": "what is {question}?", "answer": "{answer}"}]
    answer = render(
        prompt_template={"template": "</E>Q: {question}\nA: {answer}", "ice_token": "</E>"},
        ice_template={"template": "Q: {question}\nA: {answer}"},
        retriever={"type": "FixKRetriever", "fix_id_list": [0]},
        ice_examples=train,
        example=ROW,
        parser="lm",
    )
    assert answer["prompt"] == "Q: what is {question}?\nA: {answer}\nQ: 1+1=?\nA: "


def test_ice_row_fills_with_its_own_answer() -> None:
    answer = render(
        ice_template={"template": "</E>Q: {question}\nA: {answer}", "ice_token": "</E>"},
        retriever=FIXK,
        ice_examples=TRAIN,
        example=ROW,
        parser="lm",
    )
    assert answer["prompt"] == "Q: 2+2=?\nA: 4\nQ: 3+3=?\nA: 6\nQ: 1+1=?\nA: "


def test_omitted_prompt_template_zero_shot() -> None:
    answer = render(
        ice_template={"template": "</E>Q: {question}\nA: {answer}", "ice_token": "</E>"}, example=ROW, parser="lm"
    )
    assert answer["prompt"] == "Q: 1+1=?\nA: "


def test_ice_template_without_ice_token_and_no_prompt_template_is_an_error() -> None:
    with pytest.raises(TemplateError, match="ice_token"):
        render(ice_template={"template": "Q: {question}\nA: {answer}"}, example=ROW)


def test_prompt_template_without_ice_token_while_ice_template_set() -> None:
    with pytest.raises(TemplateError, match="ice_token"):
        render(prompt_template={"template": "{question}"}, ice_template={"template": "{question}"}, example=ROW)


def test_no_template_at_all_is_an_error() -> None:
    with pytest.raises(TemplateError, match="ice_token"):
        render(example=ROW)


def test_dialogue_ice_into_begin_splices_items() -> None:
    answer = render(
        prompt_template={
            "template": {
                "begin": [{"role": "SYSTEM", "fallback_role": "HUMAN", "prompt": "Solve."}, "</E>"],
                "round": QA_ROUND,
            },
            "ice_token": "</E>",
        },
        ice_template={"template": {"round": QA_ROUND}},
        retriever=FIXK,
        ice_examples=TRAIN,
        example=ROW,
        parser="lm",
        meta_template=M_GEN,
    )
    assert answer["intermediate"][2:6] == [
        R("ice", "begin"),
        {"role": "HUMAN", "prompt": "2+2=?"},
        {"role": "BOT", "prompt": "4"},
        R("ice", "end"),
    ]
    assert answer["intermediate"][10] == ""  # the eos item
    assert answer["prompt"] == (
        "<SYSTEM>: Solve.<eosys>\n<HUMAN>: 2+2=?<eoh>\n<BOT>: 4<eob>\n"
        "<HUMAN>: 3+3=?<eoh>\n<BOT>: 6<eob>\n<HUMAN>: 1+1=?<eoh>\n<BOT>: "
    )


def test_dialogue_ice_into_a_string_template_is_an_error() -> None:
    with pytest.raises(TemplateError, match="</E>"):
        render(
            prompt_template={"template": "</E>{question}", "ice_token": "</E>"},
            ice_template={"template": {"round": QA_ROUND}},
            retriever=FIXK,
            ice_examples=TRAIN,
            example=ROW,
        )


def test_dialogue_ice_inside_a_prompt_is_an_error_naming_the_role() -> None:
    with pytest.raises(TemplateError, match="'HUMAN'"):
        render(
            prompt_template={
                "template": {"round": [{"role": "HUMAN", "prompt": "</E>{question}"}]},
                "ice_token": "</E>",
            },
            ice_template={"template": {"round": QA_ROUND}},
            retriever=FIXK,
            ice_examples=TRAIN,
            example=ROW,
        )


def test_string_ice_inside_a_prompt_is_inserted() -> None:
    answer = render(
        prompt_template={
            "template": {
                "round": [{"role": "HUMAN", "prompt": "</E>{question}"}, {"role": "BOT", "prompt": "{answer}"}]
            },
            "ice_token": "</E>",
        },
        ice_template={"template": "{question} {answer}"},
        retriever=FIXK,
        ice_examples=TRAIN,
        example=ROW,
        parser="lm",
    )
    assert answer["prompt"] == "2+2=? 4\n3+3=? 6\n1+1=?"


def test_ice_needs_output_column_and_the_field() -> None:
    with pytest.raises(TemplateError, match="output_column"):
        render_request(
            {
                "ice_template": {"template": "</E>{question}", "ice_token": "</E>"},
                "retriever": FIXK,
                "ice_examples": TRAIN,
                "example": ROW,
            }
        )
    with pytest.raises(TemplateError, match=r"ice_examples\[1\].*'answer'"):
        render(
            ice_template={"template": "</E>{question}", "ice_token": "</E>"},
            retriever=FIXK,
            ice_examples=[TRAIN[0], {"question": "x"}],
            example=ROW,
        )


def test_retrieved_examples_without_ice_template() -> None:
    with pytest.raises(TemplateError, match="ice_template"):
        render(prompt_template={"template": "{question}"}, retriever=FIXK, ice_examples=TRAIN, example=ROW)


def test_ice_label_map_picks_each_rows_label() -> None:
    train = [{"question": "x", "answer": "pos"}, {"question": "y", "answer": "neg"}]
    answer = render(
        prompt_template={"template": "</E>{question}", "ice_token": "</E>"},
        ice_template={"template": {"pos": "{question}: good", "neg": "{question}: bad"}},
        retriever=FIXK,
        ice_examples=train,
        example=ROW,
        parser="lm",
    )
    assert answer["prompt"] == "x: good\ny: bad\n1+1=?"


def test_empty_fixk_list_gives_the_eos_alone() -> None:
    answer = render(
        prompt_template={"template": "[</E>]{question}", "ice_token": "</E>"},
        ice_template={"template": "{question}"},
        retriever={"type": "FixKRetriever", "fix_id_list": []},
        ice_examples=TRAIN,
        example=ROW,
    )
    assert answer["prompt"] == "[\n]1+1=?"


def test_custom_separator_and_eos() -> None:
    answer = render(
        prompt_template={"template": "</E>{question}", "ice_token": "</E>"},
        ice_template={"template": "{question}"},
        retriever={**FIXK, "ice_separator": " | ", "ice_eos_token": " || "},
        ice_examples=TRAIN,
        example=ROW,
    )
    assert answer["prompt"] == "2+2=? | 3+3=? || 1+1=?"


def test_empty_string_items_vanish_when_a_dialogue_ice_is_spliced() -> None:
    answer = render(
        prompt_template={"template": {"begin": ["", "</E>"], "round": QA_ROUND}, "ice_token": "</E>"},
        ice_template={"template": {"round": QA_ROUND}},
        retriever={"type": "FixKRetriever", "fix_id_list": [0]},
        ice_examples=TRAIN,
        example=ROW,
    )
    assert answer["intermediate"][:2] == [R("begin", "begin"), R("ice", "begin")]
