"""Stage tests for ``cases.prompt_case``: a case is frozen, and one built in code is checked as a line is."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_promptsuite.cases.prompt_case import PromptCase


def test_case_is_frozen() -> None:
    case = PromptCase(case_id="x", input="y", slice="z")
    with pytest.raises(dataclasses.FrozenInstanceError):
        case.case_id = "other"  # type: ignore[misc]


def test_a_case_built_in_code_is_checked_as_a_line_is() -> None:
    with pytest.raises(ValueError, match=r"<memory>:0: 'slice' is empty; 'must_include\[0\]' must be a string"):
        PromptCase(case_id="x", input="y", slice=" ", must_include=[3])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="unknown key 'must_inlcude' .did you mean 'must_include'"):
        PromptCase.from_dict({"case_id": "x", "input": "y", "slice": "z", "must_inlcude": ["a"]})
    line = {"case_id": "x", "input": "y", "slice": "z", "assert": [{"type": "is-json"}], "threshold": 1}
    case = PromptCase.from_dict(line)
    assert case.assert_ == [{"type": "is-json"}] and case.threshold == 1.0 and isinstance(case.threshold, float)
    assert case.to_dict()["assert"] == [{"type": "is-json"}] and "answer" not in case.to_dict()
    assert PromptCase(**{k: v for k, v in case.__dict__.items() if not k.startswith("_")}) == case
