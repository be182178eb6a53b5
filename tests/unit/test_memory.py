"""What a large run keeps in memory: report files written as streams, items that hold no case.

The figures themselves come from ``benchmarks/bench_overhead.py``; these tests pin the
mechanisms (how many rows are alive at once, what an item holds) so a change cannot bring the
per-case memory back unnoticed.
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from pytest_promptsuite.cases.load import load_cases
from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.builtin_checks import make_builtin_check
from pytest_promptsuite.checks.compile_checks import compile_cases
from pytest_promptsuite.errors import CaseFileError
from tests.suite import Suite


CASES = "\ufeff" + "\r\n".join(
    [
        '{"case_id": "a-1", "input": "hello", "slice": "s", "must_include": ["hello"], "metadata": {"k": [1, 2]}}',
        "",
        '{"case_id": "a-2", "input": ["one", "two"], "slice": "t", "tags": ["x"], "vars": {"city": "巴黎"}}',
        '{"case_id": "a-3", "input": "q", "slice": "s", "assert": [{"type": "contains", "value": "q"}]}',
        '{"case_id": "a-4", "input": "last line, no newline", "slice": "s"}',
    ]
)


def test_a_case_read_back_is_the_case_loaded(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(CASES.encode("utf-8"))  # a BOM, CRLF line ends, a blank line, no final newline
    loaded = load_cases(path)
    for case in loaded:
        assert case.ref is not None
        again = case.ref.read()
        assert again == case and again.location == case.location and again.ref is case.ref
    assert [c.ref.line for c in loaded if c.ref] == [1, 3, 4, 5]


def test_a_case_file_changed_after_collection_is_named(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(CASES.encode("utf-8"))
    ref = load_cases(path)[1].ref
    assert ref is not None
    path.write_bytes(CASES.replace("巴黎", "伦敦").encode("utf-8"))  # same length in bytes
    with pytest.raises(CaseFileError, match=r"^shown\.jsonl:3: the case file changed after it was collected"):
        ref.read("shown.jsonl")
    path.unlink()
    with pytest.raises(CaseFileError, match=r"^shown\.jsonl:3: cannot read the case file"):
        ref.read("shown.jsonl")


def test_cases_without_checks_of_their_own_share_one_compiled_set(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(CASES.encode("utf-8"))
    compiled = compile_cases(load_cases(path), make_builtin_check)
    assert compiled["a-1"] is compiled["a-4"]  # same slice, no assert entries
    assert compiled["a-2"] is not compiled["a-1"]  # another slice: the suite's checks may differ
    assert compiled["a-3"] is not compiled["a-1"] and len(compiled["a-3"].entries) == 1


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


def test_a_case_file_edited_during_the_run_ends_that_case_as_an_error(suite: Suite) -> None:
    suite.cases(
        '{"case_id": "a", "input": "hello", "slice": "s", "must_include": ["hello"]}\n'
        '{"case_id": "b", "input": "hello", "slice": "s"}\n'
    )
    suite.pytester.makeconftest(
        "from pathlib import Path\n\n"
        "def pytest_collection_finish(session):\n"
        "    path = Path('cases.jsonl')\n"
        '    path.write_text(path.read_text().replace(\'"b", "input": "hello"\', \'"b", "input": "HELLO"\'))\n'
    )
    result = suite.run("--prompt-report", "report")
    result.stdout.fnmatch_lines(["*cases.jsonl:2: the case file changed after it was collected; run again*"])
    assert [(r["case_id"], r["outcome"], r["location"]) for r in suite.rows()] == [
        ("a", "passed", "cases.jsonl:1"),
        ("b", "error", "cases.jsonl:2"),
    ]


def test_cases_read_back_in_file_order_share_one_read(tmp_path: Path) -> None:
    """Items run in file order: reading one case back reads a block that serves the cases after
    it (still checked against their CRC-32), so the file is opened once for them all."""
    path = tmp_path / "cases.jsonl"
    path.write_bytes(CASES.encode("utf-8"))
    loaded = load_cases(path)
    refs = [case.ref for case in loaded if case.ref is not None]
    assert refs[0].read() == loaded[0]
    path.unlink()  # the block read with the first case holds the rest
    assert [ref.read() for ref in refs[1:]] == loaded[1:]
    path.write_bytes(CASES.encode("utf-8"))
    again = load_cases(path)  # loaded again: its own block, never the earlier load's
    path.write_bytes(CASES.replace("巴黎", "伦敦").encode("utf-8"))
    assert again[0].ref is not None and again[0].ref.read() == again[0]
    with pytest.raises(CaseFileError, match="changed after it was collected"):
        assert again[1].ref is not None
        again[1].ref.read()
