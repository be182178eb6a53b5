"""The pytest items of ``items.py``: a case file's items hold where each case is, not the case."""

from __future__ import annotations

import gc

import pytest

from pytest_promptsuite.cases.prompt_case import PromptCase


def test_items_hold_no_case(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".jsonl",
        cases="\n".join(
            f'{{"case_id": "c-{i}", "input": "text {i}", "slice": "s{i % 3}", "tags": ["t"]}}' for i in range(50)
        ),
    )
    items, _ = pytester.inline_genitems("--prompt-suite", "cases.jsonl", "--prompt-repeat", "2")
    gc.collect()
    assert len(items) == 100
    ours = pytester.path / "cases.jsonl"  # (other tests of this process may keep cases of their own)
    assert not [o for o in gc.get_objects() if isinstance(o, PromptCase) and o.location.path == ours]
    assert not hasattr(items[0].planned, "__dict__")  # a slotted object
    assert items[0].planned.ref is items[1].planned.ref  # the repeats of a case share where it is
    assert items[0].planned.slice is items[6].planned.slice and items[0].planned.tags is items[2].planned.tags
    assert items[3].case.case_id == "c-1" and items[3].case.location.line == 2  # read back on demand
    assert "s1" in items[3].keywords and "t" in items[3].keywords
