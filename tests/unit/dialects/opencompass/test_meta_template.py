"""SPEC §7 LM meta template and §8 API meta template, driven with ``prompt_list`` requests."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_promptsuite.dialects.opencompass.meta_template import MetaTemplate
from pytest_promptsuite.dialects.opencompass.meta_template import to_openai_messages
from pytest_promptsuite.dialects.opencompass.render_request import render_request
from pytest_promptsuite.errors import TemplateError


def R(section: str, pos: str) -> dict[str, str]:
    return {"section": section, "pos": pos}


def H(prompt: str, **extra: Any) -> dict[str, Any]:
    return {"role": "HUMAN", "prompt": prompt, **extra}


def B(prompt: str, **extra: Any) -> dict[str, Any]:
    return {"role": "BOT", "prompt": prompt, **extra}


M_DOC = {
    "round": [
        {"role": "HUMAN", "begin": "<HUMAN>: ", "end": "<eoh>\n"},
        {"role": "BOT", "begin": "<BOT>: ", "end": "<eob>\n"},
    ]
}
M_SYS = {**M_DOC, "reserved_roles": [{"role": "SYSTEM", "begin": "<SYSTEM>: ", "end": "<eosys>\n"}]}
M_GEN = {
    "round": [M_DOC["round"][0], {**M_DOC["round"][1], "generate": True}],
    "reserved_roles": M_SYS["reserved_roles"],
    "begin": "META|",
    "end": "|END",
}
API = {
    "round": [{"role": "HUMAN", "api_role": "HUMAN"}, {"role": "BOT", "api_role": "BOT", "generate": True}],
    "reserved_roles": [{"role": "SYSTEM", "api_role": "SYSTEM"}],
}
API_NOSYS = {"round": API["round"]}
SYSTEM = {"role": "SYSTEM", "fallback_role": "HUMAN", "prompt": "Solve."}
TWO_ROUNDS = [R("round", "begin"), H("1+1=?"), B("2"), H("2+2=?"), B("4"), R("round", "end")]


def lm(prompt_list: Any, meta: Any = None, mode: str = "gen") -> Any:
    request = {"prompt_list": prompt_list, "parser": "lm", "mode": mode}
    if meta is not None:
        request["meta_template"] = meta
    return render_request(request)["prompt"]


def api(prompt_list: Any, meta: Any = None, mode: str = "gen") -> Any:
    request = {"prompt_list": prompt_list, "parser": "api", "mode": mode}
    if meta is not None:
        request["meta_template"] = meta
    return render_request(request)["prompt"]


# -- 7.1 construction -------------------------------------------------------------------------


def test_missing_round_is_an_error() -> None:
    with pytest.raises(TemplateError, match="'round'"):
        MetaTemplate({"reserved_roles": []})


def test_duplicate_role_is_named() -> None:
    with pytest.raises(TemplateError, match="'HUMAN'"):
        MetaTemplate({"round": [{"role": "HUMAN"}], "reserved_roles": [{"role": "HUMAN"}]})


def test_token_id_begin_is_an_error_naming_the_role() -> None:
    with pytest.raises(TemplateError, match="'BOT'"):
        MetaTemplate({"round": [{"role": "BOT", "begin": [1, 2]}]})


def test_empty_meta_dict_is_no_meta() -> None:
    assert lm(TWO_ROUNDS, {}) == "1+1=?\n2\n2+2=?\n4"


def test_eos_token_id_is_exposed_and_never_in_the_prompt() -> None:
    meta = {**M_DOC, "eos_token_id": 10000}
    assert MetaTemplate(meta).eos_token_id == 10000
    assert "10000" not in lm(TWO_ROUNDS, meta, mode="ppl")


def test_array_meta_template_is_an_error() -> None:
    with pytest.raises(TemplateError, match="array"):
        api(TWO_ROUNDS, [{"role": "HUMAN", "api_role": "HUMAN"}])


# -- 7.2-7.3 strings and no meta --------------------------------------------------------------


def test_string_is_returned_unchanged_even_with_a_meta_template() -> None:
    assert lm("plain text", M_GEN) == "plain text"
    assert api("plain text", API) == "plain text"


def test_no_meta_join_arms_the_separator_after_empty_items() -> None:
    assert lm(["", R("round", "begin"), H("a"), B(""), R("round", "end"), "tail"]) == "\na\ntail"


def test_no_meta_join_accepts_marker_less_lists() -> None:
    assert lm([H("a"), "b"]) == "a\nb"


def test_marker_less_role_items_with_a_meta_template_are_an_error() -> None:
    with pytest.raises(TemplateError, match="section"):
        lm([H("a"), B("b")], M_DOC)


# -- 7.4-7.6 LM walk --------------------------------------------------------------------------


def test_lm_two_rounds_ppl() -> None:
    assert lm(TWO_ROUNDS, M_DOC, "ppl") == "<HUMAN>: 1+1=?<eoh>\n<BOT>: 2<eob>\n<HUMAN>: 2+2=?<eoh>\n<BOT>: 4<eob>\n"


def test_lm_reserved_system_and_fallback() -> None:
    prompt = [R("begin", "begin"), SYSTEM, R("begin", "end"), *TWO_ROUNDS]
    assert lm(prompt, M_SYS, "ppl").startswith("<SYSTEM>: Solve.<eosys>\n<HUMAN>: 1+1=?")
    assert lm(prompt, M_DOC, "ppl").startswith("<HUMAN>: Solve.<eoh>\n<HUMAN>: 1+1=?")


def test_lm_generate_truncates_last_round_and_drops_meta_end() -> None:
    prompt = [R("round", "begin"), H("1+1=?"), B("2"), H("2+2=?"), B(""), R("round", "end")]
    assert lm(prompt, M_GEN) == "META|<HUMAN>: 1+1=?<eoh>\n<BOT>: 2<eob>\n<HUMAN>: 2+2=?<eoh>\n<BOT>: "
    assert lm(prompt, M_GEN, "ppl").endswith("<BOT>: <eob>\n|END")


def test_lm_without_generate_role_appends_meta_end_in_gen() -> None:
    assert lm(TWO_ROUNDS, {**M_DOC, "end": "|END"}).endswith("<BOT>: 4<eob>\n|END")


def test_lm_first_generate_role_wins() -> None:
    meta = {
        "round": [{"role": "HUMAN", "begin": "H:", "generate": True}, {"role": "BOT", "begin": "B:", "generate": True}]
    }
    assert lm([R("round", "begin"), H("q"), R("round", "end")], meta) == "H:"


def test_lm_string_inside_a_round_comes_out_first() -> None:
    prompt = [R("round", "begin"), H("q"), "RAW", B("a"), R("round", "end")]
    assert lm(prompt, M_DOC, "ppl") == "RAW<HUMAN>: q<eoh>\n<BOT>: a<eob>\n"


def test_lm_meta_strings_in_round_are_emitted_each_round() -> None:
    meta = {"round": ["<s>", *M_DOC["round"]]}
    assert lm(TWO_ROUNDS, meta, "ppl").count("<s>") == 2


def test_lm_absent_role_emitted_with_its_default_prompt() -> None:
    meta = {
        "round": [
            M_DOC["round"][0],
            {"role": "THINK", "begin": "T: ", "prompt": "None", "end": "\n"},
            M_DOC["round"][1],
        ]
    }
    assert (
        lm([R("round", "begin"), H("q"), B("a"), R("round", "end")], meta, "ppl")
        == "<HUMAN>: q<eoh>\nT: None\n<BOT>: a<eob>\n"
    )


def test_d4_lm_fallback_role_inside_a_round() -> None:
    # reserved roles serve begin/end only: inside a round SYSTEM falls back to HUMAN
    prompt = [R("round", "begin"), SYSTEM, B("ok"), R("round", "end")]
    assert lm(prompt, M_SYS, "ppl") == "<HUMAN>: Solve.<eoh>\n<BOT>: ok<eob>\n"


def test_unknown_role_without_fallback_is_named() -> None:
    with pytest.raises(TemplateError, match="'NARRATOR'"):
        lm([R("round", "begin"), {"role": "NARRATOR", "prompt": "x"}, R("round", "end")], M_DOC)


def test_lm_begin_section_is_never_truncated() -> None:
    prompt = [R("begin", "begin"), B("primer"), R("begin", "end"), R("round", "begin"), H("q"), R("round", "end")]
    assert lm(prompt, M_GEN) == "META|<BOT>: primer<eob>\n<HUMAN>: q<eoh>\n<BOT>: "


def test_d3_lm_end_section_renders_after_rounds_in_ppl_and_is_cut_in_gen() -> None:
    prompt = [*TWO_ROUNDS, R("end", "begin"), SYSTEM, R("end", "end")]
    assert lm(prompt, M_GEN, "ppl").endswith("<BOT>: 4<eob>\n<SYSTEM>: Solve.<eosys>\n|END")
    assert lm(prompt, M_GEN).endswith("<HUMAN>: 2+2=?<eoh>\n<BOT>: ")


def test_ice_section_is_never_truncated() -> None:
    prompt = [R("ice", "begin"), H("x"), B("y"), R("ice", "end"), R("round", "begin"), H("q"), R("round", "end")]
    assert lm(prompt, M_GEN) == "META|<HUMAN>: x<eoh>\n<BOT>: y<eob>\n<HUMAN>: q<eoh>\n<BOT>: "


@pytest.mark.parametrize(
    "prompt",
    [
        [R("round", "end")],
        [R("round", "begin"), R("ice", "end")],
        [{"section": "middle", "pos": "begin"}],
        [{"section": "round", "pos": "inside"}],
        [R("round", "begin"), H("q")],
        [R("round", "begin"), R("ice", "begin"), H("q"), R("ice", "end"), R("round", "end")],
    ],
    ids=["close-unopened", "mismatch", "unknown-section", "bad-pos", "unclosed", "nested-in-round"],
)
def test_bad_markers_are_errors(prompt: list[Any]) -> None:
    with pytest.raises(TemplateError, match="section|round"):
        lm(prompt, M_DOC, "ppl")


# -- 8 API parser -----------------------------------------------------------------------------


def test_api_without_meta_returns_the_join() -> None:
    assert api(TWO_ROUNDS) == "1+1=?\n2\n2+2=?\n4"


def test_api_without_meta_returns_content_parts_when_no_text() -> None:
    parts = [{"type": "text", "text": "hi"}]
    assert api([R("round", "begin"), {"role": "HUMAN", "prompt_mm": parts}, R("round", "end")]) == parts
    assert api([R("round", "begin"), R("round", "end")]) == []


def test_api_gen_drops_the_generate_role() -> None:
    prompt = [R("begin", "begin"), SYSTEM, R("begin", "end"), R("round", "begin"), H("1+1=?"), B(""), R("round", "end")]
    assert api(prompt, API) == [{"role": "SYSTEM", "prompt": "Solve."}, {"role": "HUMAN", "prompt": "1+1=?"}]


def test_api_fallback_merges_with_the_next_human_message() -> None:
    prompt = [R("begin", "begin"), SYSTEM, R("begin", "end"), R("round", "begin"), H("1+1=?"), B(""), R("round", "end")]
    assert api(prompt, API_NOSYS) == [{"role": "HUMAN", "prompt": "Solve.\n1+1=?"}]


def test_d5_api_strings_become_human_messages_blank_skipped() -> None:
    meta = {
        "round": [{"role": "HUMAN", "api_role": "user"}, {"role": "BOT", "api_role": "assistant", "generate": True}]
    }
    prompt = ["Intro", "  \n", R("round", "begin"), H("q"), R("round", "end")]
    assert api(prompt, meta) == [{"role": "user", "prompt": "Intro\nq"}]


def test_d6_api_generate_role_in_begin_is_not_truncated() -> None:
    prompt = [R("begin", "begin"), B("primer"), R("begin", "end"), R("round", "begin"), H("q"), R("round", "end")]
    assert api(prompt, API) == [{"role": "BOT", "prompt": "primer"}, {"role": "HUMAN", "prompt": "q"}]


def test_d3_api_end_section_in_ppl() -> None:
    prompt = [*TWO_ROUNDS, R("end", "begin"), SYSTEM, R("end", "end")]
    assert api(prompt, API, "ppl")[-1] == {"role": "SYSTEM", "prompt": "Solve."}
    assert api(prompt, API)[-1] == {"role": "HUMAN", "prompt": "2+2=?"}


def test_d11_role_without_prompt_renders_begin_end() -> None:
    meta = {
        "round": [
            {"role": "HUMAN", "api_role": "HUMAN"},
            {"role": "BOT", "api_role": "BOT", "begin": "<b>", "end": "</b>"},
        ]
    }
    prompt = [R("round", "begin"), H("q"), R("round", "end")]
    assert api(prompt, meta, "ppl") == [{"role": "HUMAN", "prompt": "q"}, {"role": "BOT", "prompt": "<b></b>"}]


def test_api_begin_end_of_roles_wrap_the_prompt() -> None:
    meta = {
        "round": [
            {"role": "HUMAN", "api_role": "HUMAN", "begin": "[", "end": "]"},
            {"role": "BOT", "api_role": "BOT", "generate": True},
        ]
    }
    assert api([R("round", "begin"), H("q"), R("round", "end")], meta) == [{"role": "HUMAN", "prompt": "[q]"}]


def test_api_two_roles_on_one_api_role_merge() -> None:
    meta = {
        "round": [
            {"role": "HUMAN", "api_role": "HUMAN"},
            {"role": "TOOL", "api_role": "HUMAN"},
            {"role": "BOT", "api_role": "BOT", "generate": True},
        ]
    }
    prompt = [R("round", "begin"), H("q"), {"role": "TOOL", "prompt": "t"}, R("round", "end")]
    assert api(prompt, meta) == [{"role": "HUMAN", "prompt": "q\nt"}]


def test_api_meta_begin_is_element_zero_and_end_ignored() -> None:
    meta = {**API, "begin": {"role": "SYSTEM", "prompt": "be nice"}, "end": "ignored"}
    assert api(TWO_ROUNDS, meta, "ppl")[0] == {"role": "SYSTEM", "prompt": "be nice"}
    assert "ignored" not in str(api(TWO_ROUNDS, meta, "ppl"))


def test_api_merging_text_with_parts_is_an_error() -> None:
    prompt = [
        R("round", "begin"),
        {"role": "HUMAN", "prompt_mm": [{"type": "text", "text": "x"}]},
        R("round", "end"),
        R("round", "begin"),
        H("q"),
        R("round", "end"),
    ]
    with pytest.raises(TemplateError, match="'HUMAN'"):
        api(prompt, {"round": [{"role": "HUMAN", "api_role": "HUMAN"}]}, "ppl")


def test_api_empty_conversation_is_an_error() -> None:
    with pytest.raises(TemplateError, match="empty"):
        api([R("round", "begin"), R("round", "end")], {"round": [{"role": "BOT", "api_role": "BOT", "generate": True}]})


def test_api_string_in_round_is_an_error() -> None:
    with pytest.raises(TemplateError, match="round"):
        api(TWO_ROUNDS, {"round": ["<s>", *API["round"]]})


def test_api_role_without_api_role_is_named() -> None:
    with pytest.raises(TemplateError, match="'HUMAN'.*api_role"):
        api(TWO_ROUNDS, M_DOC, "ppl")


# -- 8.5 chat messages --------------------------------------------------------------------------


def test_openai_messages_map_roles() -> None:
    prompt = [
        {"role": "SYSTEM", "prompt": "s"},
        {"role": "HUMAN", "prompt": "h"},
        {"role": "BOT", "prompt": "b"},
        {"role": "TOOL", "prompt": "t"},
        {"role": "CRITIC", "prompt": "c"},
    ]
    assert to_openai_messages(prompt) == [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "h"},
        {"role": "assistant", "content": "b"},
        {"role": "tool", "content": "t"},
        {"role": "CRITIC", "content": "c"},
    ]
    assert to_openai_messages("just text") == "just text"
    parts = [{"type": "text", "text": "x"}]
    assert to_openai_messages(parts) == [{"role": "user", "content": parts}]
