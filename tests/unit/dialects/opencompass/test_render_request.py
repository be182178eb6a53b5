"""SPEC §2 render requests: validation of keys and values, the response shape; §12 error names; every public
template vector (§15) through ``render_request`` and the CLI; and properties (only template errors are raised,
substituted values are never substituted again) over generated templates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from pytest_promptsuite.cli.main import main
from pytest_promptsuite.dialects.opencompass.render_request import render_request
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.prompts.files.substitute import substitute


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


KEYS = ["question", "answer", "input", "a", "b", "label", "content", "image"]
ROLES = ["HUMAN", "BOT", "SYSTEM", "NARRATOR", "USER"]


TOKENS = [
    "</E>",
    "<SEP>",
    "{question}",
    "{answer}",
    "{a}",
    "{b}",
    "{missing}",
    "{{a}}",
    "{",
    "}",
    "\n",
    "<AIS_TEXT_START>",
    "<AIS_IMAGE_START>",
    "<AIS_CONTENT_TAG>",
    " ",
    "x",
]
texts = st.lists(st.sampled_from(TOKENS), max_size=6).map("".join)


scalars = st.one_of(
    texts, st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False), st.booleans(), st.none()
)


json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(texts, inner, max_size=3)),
    max_leaves=6,
)
rows = st.dictionaries(st.sampled_from(KEYS), json_values, max_size=5)


role_items = st.fixed_dictionaries(
    {"role": st.sampled_from(ROLES)},
    optional={
        "prompt": texts,
        "fallback_role": st.sampled_from(ROLES),
        "begin": texts,
        "end": texts,
        "generate": st.booleans(),
        "prompt_mm": st.dictionaries(
            st.sampled_from(["text", "image", "audio", "video"]),
            st.one_of(
                st.fixed_dictionaries({"type": st.just("text"), "text": texts}),
                st.fixed_dictionaries({"type": st.just("image_url"), "image_url": texts}),
                json_values,
            ),
            max_size=3,
        ),
    },
)


markers = st.fixed_dictionaries(
    {"section": st.sampled_from(["begin", "round", "ice", "end", "x"]), "pos": st.sampled_from(["begin", "end", "mid"])}
)
items = st.one_of(texts, role_items, markers, st.integers(0, 3))
item_lists = st.lists(items, max_size=5)


dialogues = st.fixed_dictionaries(
    {},
    optional={
        "begin": st.one_of(texts, item_lists, role_items),
        "round": st.one_of(item_lists, role_items, texts),
        "end": st.one_of(texts, item_lists),
    },
)


good_dialogues = st.fixed_dictionaries(
    {"round": st.one_of(st.lists(st.one_of(role_items, texts), max_size=4), role_items)},
    optional={
        "begin": st.one_of(texts, st.lists(st.one_of(role_items, texts), max_size=3)),
        "end": st.one_of(texts, st.lists(role_items, max_size=2)),
    },
)


meta_roles = st.fixed_dictionaries(
    {"role": st.sampled_from(ROLES)},
    optional={
        "begin": st.one_of(texts, st.lists(st.integers(0, 9), max_size=2)),
        "end": texts,
        "api_role": st.sampled_from(["HUMAN", "BOT", "SYSTEM"]),
        "generate": st.booleans(),
        "prompt": texts,
    },
)


good_metas = st.fixed_dictionaries(
    {"round": st.lists(meta_roles, min_size=1, max_size=3, unique_by=lambda r: r["role"])},
    optional={
        "reserved_roles": st.lists(
            st.fixed_dictionaries(
                {"role": st.just("SYSTEM")}, optional={"begin": texts, "end": texts, "api_role": st.just("SYSTEM")}
            ),
            max_size=1,
        ),
        "begin": texts,
        "end": texts,
    },
)


metas = st.one_of(
    st.none(),
    st.just({}),
    good_metas,
    good_metas,
    good_metas,
    st.fixed_dictionaries(
        {},
        optional={
            "round": st.lists(st.one_of(meta_roles, texts), max_size=3),
            "reserved_roles": st.lists(meta_roles, max_size=2),
            "begin": st.one_of(texts, role_items),
            "end": texts,
            "eos_token_id": st.integers(0, 9),
        },
    ),
    st.lists(meta_roles, max_size=2),
)


retrievers = st.one_of(
    st.none(),
    st.fixed_dictionaries({"type": st.just("FixKRetriever"), "fix_id_list": st.lists(st.integers(-1, 3), max_size=3)}),
    st.fixed_dictionaries(
        {"type": st.just("RandomRetriever")}, optional={"ice_num": st.integers(-1, 4), "seed": st.integers(-1, 2**33)}
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["ZeroRetriever", "Nope"])},
        optional={"ice_separator": texts, "ice_eos_token": st.one_of(texts, st.integers())},
    ),
)


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    """Mostly well-formed requests (so rendering goes deep), sometimes with one wrong part."""
    kind = draw(
        st.sampled_from(
            ["PromptTemplate", "PromptTemplate", "PromptTemplate", "MultiTurnPromptTemplate", "MMPromptTemplate"]
        )
    )
    template = draw(
        st.one_of(
            texts,
            good_dialogues,
            good_dialogues,
            dialogues,
            st.dictionaries(
                st.sampled_from(["A", "B", "round"]), st.one_of(texts, dialogues, item_lists), min_size=1, max_size=3
            ),
        )
    )
    prompt_template: dict[str, Any] = {"type": kind, "template": template}
    ice_token = draw(st.sampled_from([None, None, "</E>"]))
    if ice_token is not None:
        prompt_template["ice_token"] = ice_token
    if draw(st.booleans()):
        prompt_template["sep_token"] = draw(st.sampled_from(["<SEP>", "\n"]))
    example = draw(rows)
    if kind == "MultiTurnPromptTemplate":
        example = {
            **example,
            "question": draw(st.lists(texts, max_size=3)),
            "answer": draw(st.lists(texts, max_size=3)),
        }
    request: dict[str, Any] = {
        "prompt_template": prompt_template,
        "example": example,
        "output_column": draw(st.sampled_from([None, "answer", "label"])),
        "mode": draw(st.sampled_from(["gen", "gen", "ppl"])),
    }
    parser = draw(st.sampled_from([None, "lm", "api"]))
    request["parser"] = parser
    if parser is not None:
        request["meta_template"] = draw(metas)
    if kind == "MultiTurnPromptTemplate":
        request["mode"] = "gen"
        request["infer_mode"] = draw(st.sampled_from(["every", "every_with_gt", "last"]))
        request["model_outputs"] = draw(st.lists(st.one_of(texts, st.none()), max_size=4))
    elif kind == "PromptTemplate":
        if draw(st.booleans()):
            request["ice_template"] = {
                "template": draw(
                    st.one_of(
                        texts,
                        good_dialogues,
                        st.dictionaries(
                            st.sampled_from(["A", "B"]), st.one_of(texts, good_dialogues), min_size=1, max_size=2
                        ),
                    )
                )
            }
            if ice_token is None and draw(st.booleans()):
                request["ice_template"]["ice_token"] = "</E>"
                del request["prompt_template"]
        request["retriever"] = draw(retrievers)
        request["ice_examples"] = draw(
            st.lists(rows.map(lambda r: {**r, "answer": draw(st.sampled_from(["A", "B", "x"]))}), max_size=4)
        )
        request["label"] = draw(st.sampled_from(["A", "B", "C"]))
    if draw(st.integers(0, 9)) == 9:  # one wrong part
        request[draw(st.sampled_from(["mode", "parser", "retriever", "example", "infer_mode"]))] = draw(json_values)
    return request


prompt_list_requests = st.fixed_dictionaries(
    {"prompt_list": st.one_of(texts, st.lists(items, max_size=8))},
    optional={
        "meta_template": metas,
        "parser": st.sampled_from([None, "lm", "api"]),
        "mode": st.sampled_from(["gen", "ppl"]),
    },
)


def _render(request: dict[str, Any]) -> None:
    try:
        answer = render_request(request)
    except TemplateError as exc:
        assert str(exc)
        return
    json.dumps(answer)  # a successful answer is always JSON


separators = st.text(alphabet=st.characters(blacklist_characters="{}"), max_size=3)
values = st.lists(st.sampled_from(list("{}ab") + ["{a}", "{b}", "{question}", "{answer}"]), max_size=8).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_rendering_raises_only_template_errors(request: dict[str, Any]) -> None:
    _render(request)


@settings(max_examples=200, deadline=None)
@given(prompt_list_requests)
def test_parsing_raises_only_template_errors(request: dict[str, Any]) -> None:
    _render(request)


@settings(max_examples=300, deadline=None)
@given(
    keys=st.lists(st.sampled_from(["a", "b", "question", "answer"]), min_size=1, max_size=6),
    seps=st.lists(separators, min_size=7, max_size=7),
    row=st.fixed_dictionaries({"a": values, "b": values, "question": values, "answer": values}),
    reverse=st.booleans(),
)
def test_substituted_values_are_never_resubstituted(
    keys: list[str], seps: list[str], row: dict[str, str], reverse: bool
) -> None:
    template = seps[0] + "".join("{" + k + "}" + seps[i + 1] for i, k in enumerate(keys))
    expected = seps[0] + "".join(row[k] + seps[i + 1] for i, k in enumerate(keys))
    ordered = dict(reversed(list(row.items()))) if reverse else row
    assert substitute(template, ordered) == expected
    # the same through a whole render, answer masked: the value text is inserted exactly once
    answer = render_request(
        {"prompt_template": {"template": template}, "example": ordered, "output_column": "answer", "parser": "lm"}
    )
    masked = {**row, "answer": ""}
    assert answer["prompt"] == seps[0] + "".join(masked[k] + seps[i + 1] for i, k in enumerate(keys))


VECTORS_FILE = Path(__file__).parent / "vectors" / "templates.public.jsonl"
VECTORS = [json.loads(line) for line in VECTORS_FILE.read_text(encoding="utf-8").splitlines() if line]
BY_ID = {v["id"]: v for v in VECTORS}


def _final(answer: dict[str, Any]) -> Any:
    return answer["requests"] if "requests" in answer else answer["prompt"]


SAMPLE = [
    "pt_seed_string_masked",
    "ice_seed_dialogue_2shot_api_gen",
    "new_real_chatml_fixk_2shot_gen",
    "mt_seed_every_api",
    "new_mm_seed_doc_row_url_template",
    "lm_doc_meta_begin_end_ppl",
] + [v["id"] for v in VECTORS if v["expect_error"]][:4]


def test_vector_file_is_complete() -> None:
    assert len(VECTORS) == 103
    assert len(BY_ID) == len(VECTORS)


@pytest.mark.parametrize("vector", VECTORS, ids=[v["id"] for v in VECTORS])
def test_vector(vector: dict[str, Any]) -> None:
    if vector["expect_error"]:
        with pytest.raises(TemplateError) as info:
            render_request(vector["request"])
        message = str(info.value)
        assert message
        for mention in vector.get("error_mentions", []):
            assert mention in message
        return
    answer = render_request(vector["request"])
    assert _final(answer) == vector["expected"]
    if "expected_intermediate" in vector:
        assert answer["intermediate"] == vector["expected_intermediate"]
    if "expected_retrieved" in vector:
        assert answer["retrieved"] == vector["expected_retrieved"]
    if "expected_chat" in vector:
        assert answer["chat"] == vector["expected_chat"]
    json.dumps(answer)  # the answer is JSON as it stands


@pytest.mark.parametrize("vector_id", SAMPLE)
def test_vector_through_cli(vector_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    vector = BY_ID[vector_id]
    request = tmp_path / "request.json"
    request.write_text(json.dumps(vector["request"], ensure_ascii=False), encoding="utf-8")
    status = main(["render", "--request", str(request)])
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == 1
    answer = json.loads(lines[0])
    if vector["expect_error"]:
        assert status == 1
        assert answer["error"]["type"] == "TemplateError"
        assert answer["error"]["message"]
        assert "Traceback" not in out + err
    else:
        assert status == 0
        assert _final(answer) == vector["expected"]
