"""Stage tests for ``cases.load``: every bad input gives its ``path:line:`` message; a case read back later
is the case loaded (items keep where a case is, not the case)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_promptsuite.cases.load import load_cases
from pytest_promptsuite.cases.prompt_case import CaseLocation
from pytest_promptsuite.errors import CaseFileError


GOOD = '{"case_id": "a-1", "input": "hi", "slice": "s"}'


def _write(tmp_path: Path, text: str | bytes, name: str = "bad.jsonl") -> Path:
    path = tmp_path / name
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8")
    else:
        path.write_bytes(text)
    return path


def _problems(path: Path, **kwargs: object) -> list[str]:
    with pytest.raises(CaseFileError) as excinfo:
        load_cases(path, display=path.name, **kwargs)  # type: ignore[arg-type]
    return excinfo.value.problems


def test_loads_every_field(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '{"case_id": "refund-001", "input": "商品拆封后能退吗？", "slice": "信息不足",'
        ' "must_include": ["未提供"], "must_not_include": ["已为您退款"], "vars": {"shop": "A"},'
        ' "answer": "no", "assert": [{"type": "contains", "value": "x"}], "threshold": 0.5,'
        ' "review": "legal", "tags": ["zh"], "metadata": {"owner": "ops"}}\n',
    )
    [case] = load_cases(path)
    assert case.case_id == "refund-001"
    assert case.must_include == ["未提供"]
    assert case.must_not_include == ["已为您退款"]
    assert case.vars == {"shop": "A"}
    assert case.assert_ == [{"type": "contains", "value": "x"}]
    assert case.threshold == 0.5
    assert case.review == "legal"
    assert case.tags == ["zh"]
    assert case.metadata == {"owner": "ops"}
    assert case.location == CaseLocation(path, 1)


def test_multi_turn_input_is_a_list(tmp_path: Path) -> None:
    [case] = load_cases(_write(tmp_path, '{"case_id": "m", "input": ["a", "b"], "slice": "s"}\n'))
    assert case.input == ["a", "b"]


def test_bom_and_blank_lines_are_fine_and_lines_count(tmp_path: Path) -> None:
    text = "\ufeff" + GOOD + "\n\n   \n" + GOOD.replace("a-1", "a-2") + "\n"
    cases = load_cases(_write(tmp_path, text))
    assert [c.case_id for c in cases] == ["a-1", "a-2"]
    assert [c.location.line for c in cases] == [1, 4]


def test_line_separators_inside_a_string_are_text(tmp_path: Path) -> None:
    [case] = load_cases(_write(tmp_path, GOOD.replace('"hi"', '"a\u2028b\u2029c\x85d"') + "\n"))
    assert case.input == "a\u2028b\u2029c\x85d" and case.location.line == 1


def test_crlf_line_endings(tmp_path: Path) -> None:
    cases = load_cases(_write(tmp_path, GOOD + "\r\n" + GOOD.replace("a-1", "a-2") + "\r\n"))
    assert len(cases) == 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            GOOD + '\n{"case_id": "a-2", "input": "x" "slice": "s"}\n',
            ["bad.jsonl:2: invalid JSON: Expecting ',' delimiter (column 33)"],
            id="invalid-json",
        ),
        pytest.param(
            GOOD + "\n[1, 2]\n", ["bad.jsonl:2: a case must be a JSON object, got a list"], id="not-an-object"
        ),
        pytest.param(
            GOOD + '\n"text"\n', ["bad.jsonl:2: a case must be a JSON object, got a string"], id="a-string-line"
        ),
        pytest.param("null\n", ["bad.jsonl:1: the line is null, not a case object"], id="null"),
        pytest.param(
            '{"case_id": "a", "input": "x"}\n', ["bad.jsonl:1: missing required field 'slice'"], id="missing-slice"
        ),
        pytest.param(
            '{"slice": "s"}\n',
            ["bad.jsonl:1: missing required field 'case_id'", "bad.jsonl:1: missing required field 'input'"],
            id="missing-two",
        ),
        pytest.param(
            '{"case_id": "", "input": "x", "slice": "s"}\n', ["bad.jsonl:1: 'case_id' is empty"], id="empty-case-id"
        ),
        pytest.param(
            '{"case_id": "a", "input": "   ", "slice": "s"}\n', ["bad.jsonl:1: 'input' is empty"], id="empty-input"
        ),
        pytest.param(
            '{"case_id": "a", "input": [], "slice": "s"}\n',
            ["bad.jsonl:1: 'input' is an empty list (a multi-turn case needs at least one turn)"],
            id="empty-turns",
        ),
        pytest.param(
            '{"case_id": "a", "input": "x", "slice": ""}\n', ["bad.jsonl:1: 'slice' is empty"], id="empty-slice"
        ),
        pytest.param(
            '{"case_id": 12, "input": "x", "slice": "s"}\n',
            ["bad.jsonl:1: 'case_id' must be a string, got a number"],
            id="case-id-type",
        ),
        pytest.param(
            '{"case_id": "a", "input": {"q": 1}, "slice": "s"}\n',
            ["bad.jsonl:1: 'input' must be a string or a list of strings, got an object"],
            id="input-type",
        ),
        pytest.param(
            '{"case_id": "a", "input": ["x", 3], "slice": "s"}\n',
            ["bad.jsonl:1: 'input[1]' must be a string, got a number"],
            id="turn-type",
        ),
        pytest.param(
            '{"case_id": "a", "input": "x", "slice": "s", "must_include": "refund"}\n',
            ["bad.jsonl:1: 'must_include' must be a list of strings, got a string"],
            id="must-include-type",
        ),
        pytest.param(
            '{"case_id": "a", "input": "x", "slice": "s", "must_not_include": ["ok", 1]}\n',
            ["bad.jsonl:1: 'must_not_include[1]' must be a string, got a number"],
            id="must-not-include-item",
        ),
        pytest.param(
            '{"case_id": "a", "input": "x", "slice": "s", "must_include": [""]}\n',
            ["bad.jsonl:1: 'must_include[0]' is an empty string"],
            id="empty-required-text",
        ),
        pytest.param(
            '{"case_id": "a", "input": "x", "slice": "s", "vars": []}\n',
            ["bad.jsonl:1: 'vars' must be an object, got a list"],
            id="vars-type",
        ),
        pytest.param(
            '{"case_id": "a", "input": "x", "slice": "s", "threshold": 1.5}\n',
            ["bad.jsonl:1: 'threshold' must be from 0 to 1, got 1.5"],
            id="threshold-range",
        ),
        pytest.param(
            '{"case_id": "a", "input": "x", "slice": "s", "threshold": true}\n',
            ["bad.jsonl:1: 'threshold' must be a number from 0 to 1, got a boolean"],
            id="threshold-type",
        ),
        pytest.param(
            '{"case_id": "a", "input": "x", "slice": "s", "review": 1}\n',
            ["bad.jsonl:1: 'review' must be true, false or a reason, got a number"],
            id="review-type",
        ),
        pytest.param(
            '{"case_id": "a", "input": "x", "slice": "s", "assert": {"type": "x"}}\n',
            ["bad.jsonl:1: 'assert' must be a list of checks, got an object"],
            id="assert-type",
        ),
        pytest.param(
            '{"case_id": "a", "input": "x", "slice": "s", "must_inlcude": ["x"]}\n',
            ["bad.jsonl:1: unknown key 'must_inlcude' (did you mean 'must_include'?)"],
            id="unknown-key-typo",
        ),
        pytest.param(
            '{"case_id": "a", "input": "x", "slice": "s", "zzz": 1}\n',
            ["bad.jsonl:1: unknown key 'zzz'"],
            id="unknown-key-no-hint",
        ),
        pytest.param(
            GOOD + "\n" + GOOD + "\n",
            ["bad.jsonl:2: duplicate case_id 'a-1' (first defined at bad.jsonl:1)"],
            id="duplicate-id",
        ),
        pytest.param(
            GOOD + "\n\ufeff" + GOOD.replace("a-1", "a-2") + "\n",
            ["bad.jsonl:2: invalid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig) (column 1)"],
            id="bom-past-the-start",
        ),
        pytest.param(
            "", ["bad.jsonl:1: the file has no cases (a case file needs one JSON object a line)"], id="empty-file"
        ),
        pytest.param(
            "\n\n  \n",
            ["bad.jsonl:1: the file has no cases (a case file needs one JSON object a line)"],
            id="blank-file",
        ),
    ],
)
def test_bad_input_names_path_and_line(tmp_path: Path, text: str, expected: list[str]) -> None:
    assert _problems(_write(tmp_path, text)) == expected


def test_not_utf8_names_line_and_byte(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD.encode() + b'\n{"case_id": "b", "input": "\xff", "slice": "s"}\n')
    assert _problems(path) == ["bad.jsonl:2: not valid UTF-8 (byte 0xff at column 28); save the file as UTF-8"]


def test_every_problem_is_reported_not_only_the_first(tmp_path: Path) -> None:
    text = "\n".join(
        [
            GOOD,
            "{oops",
            '{"case_id": "b", "input": "x"}',
            '{"case_id": "c", "input": "x", "slice": "s", "tagz": []}',
            GOOD,
        ]
    )
    problems = _problems(_write(tmp_path, text))
    assert [p.split(":")[1] for p in problems] == ["2", "3", "4", "5"]
    assert problems[2] == "bad.jsonl:4: unknown key 'tagz' (did you mean 'tags'?)"


def test_duplicate_across_files_names_both(tmp_path: Path) -> None:
    seen: dict[str, str] = {}
    first = _write(tmp_path, "\n" + GOOD + "\n", name="one.jsonl")
    second = _write(tmp_path, GOOD.replace("a-1", "b-1") + "\n" + GOOD + "\n", name="two.jsonl")
    load_cases(first, seen=seen, display="one.jsonl")
    with pytest.raises(CaseFileError) as excinfo:
        load_cases(second, seen=seen, display="two.jsonl")
    assert excinfo.value.problems == ["two.jsonl:2: duplicate case_id 'a-1' (first defined at one.jsonl:2)"]
    # the failed file took no ids: b-1 may still be defined elsewhere
    assert set(seen) == {"a-1"}


def test_missing_file(tmp_path: Path) -> None:
    assert _problems(tmp_path / "nope.jsonl") == ["nope.jsonl:1: cannot read the case file: No such file or directory"]


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
