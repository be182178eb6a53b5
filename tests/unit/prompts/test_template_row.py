"""Stage tests for ``prompts.template_row``: the row a template reads from a case (input, answer, history, vars)."""

from __future__ import annotations

from typing import Any

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.prompts.template_row import case_row


class TestTaskRow:
    def test_single_turn(self) -> None:
        case = PromptCase(case_id="c", input="hi", slice="s", vars={"name": "Ada"}, answer="x")
        row = case_row(case)
        assert row["input"] == "hi" and row["name"] == "Ada" and row["answer"] == "x"
        assert row["history"] == [{"role": "user", "content": "hi"}]

    def test_multi_turn_interleaves_answers(self) -> None:
        case = PromptCase(case_id="c", input=["q1", "q2", "q3"], slice="s", answer=["a1", "a2", "a3"])
        assert case_row(case)["history"] == [
            {"role": "user", "content": "q1"},
            {"role": "assistant", "content": "a1"},
            {"role": "user", "content": "q2"},
            {"role": "assistant", "content": "a2"},
            {"role": "user", "content": "q3"},
        ]

    def test_multi_turn_without_answers(self) -> None:
        case = PromptCase(case_id="c", input=["q1", "q2"], slice="s")
        assert [m["role"] for m in case_row(case)["history"]] == ["user", "user"]


def case(**fields: Any) -> PromptCase:
    return PromptCase.from_dict({"case_id": "c", "slice": "s", "input": "hi", **fields})


def test_row_has_input_question_vars_and_answer() -> None:
    assert case_row(case(vars={"unit": "km", "question": "override"}, answer="4")) == {
        "input": "hi",
        "question": "override",
        "unit": "km",
        "answer": "4",
        "history": [{"role": "user", "content": "hi"}],
    }


def test_row_always_has_answer_and_history() -> None:
    row = case_row(case())
    assert (row["answer"], row["history"]) == ("", [{"role": "user", "content": "hi"}])
