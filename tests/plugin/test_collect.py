"""Collection through pytest: items, ids, keywords, locations and collection errors."""

from __future__ import annotations

import pytest

from pytest_promptsuite.items import PromptFile
from pytest_promptsuite.items import PromptItem
from tests.suite import THREE_SLICES
from tests.suite import Suite


CASES = "\n".join(
    [
        '{"case_id": "refund-001", "input": "未提供", "slice": "信息不足", "must_include": ["未提供"]}',
        "",
        '{"case_id": "inject-001", "input": "sk-1", "slice": "提示词注入", "must_not_include": ["sk-"],'
        ' "tags": ["security"]}',
        '{"case_id": "plain-001", "input": "hello", "slice": "basic"}',
    ]
)


@pytest.fixture
def cases(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", cases=CASES)


@pytest.mark.usefixtures("cases")
def test_items_ids_and_reportinfo(pytester: pytest.Pytester) -> None:
    items, _ = pytester.inline_genitems("--prompt-suite", "cases.jsonl")
    assert all(isinstance(item, PromptItem) for item in items)
    assert isinstance(items[0].parent, PromptFile)
    assert [item.nodeid for item in items] == [
        "cases.jsonl::refund-001",
        "cases.jsonl::inject-001",
        "cases.jsonl::plain-001",
    ]
    # pytest's line is 0-based, the JSONL line 1-based: inject-001 is on line 3
    path, line, description = items[1].reportinfo()
    assert (path.name, line, description) == ("cases.jsonl", 2, "case inject-001 [提示词注入]")


@pytest.mark.usefixtures("cases")
def test_collect_only_output(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--prompt-suite", "cases.jsonl", "--collect-only")
    result.stdout.fnmatch_lines(["*<PromptFile cases.jsonl>*", "*<PromptItem refund-001>*"])


@pytest.mark.usefixtures("cases")
@pytest.mark.parametrize(
    ("expression", "selected"),
    [("提示词注入", ["inject-001"]), ("security", ["inject-001"]), ("not basic", ["refund-001", "inject-001"])],
)
def test_k_selects_by_slice_and_tag(pytester: pytest.Pytester, expression: str, selected: list[str]) -> None:
    result = pytester.runpytest("--prompt-suite", "cases.jsonl", "-k", expression, "--collect-only", "-q")
    assert [line.split("::")[1] for line in result.stdout.lines if "::" in line] == selected


def test_only_suites_run_without_positional_paths(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_other="def test_other():\n    assert False\n")
    pytester.makefile(".jsonl", cases='{"case_id": "a", "input": "x", "slice": "s"}')
    result = pytester.runpytest("--prompt-suite", "cases.jsonl")
    result.assert_outcomes(passed=1)
    # with a positional path both run
    result = pytester.runpytest("--prompt-suite", "cases.jsonl", "test_other.py")
    result.assert_outcomes(passed=1, failed=1)


def test_other_jsonl_files_are_not_collected(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", data='{"not": "a case"}')
    pytester.makepyfile(test_ok="def test_ok():\n    pass\n")
    pytester.runpytest().assert_outcomes(passed=1)


def test_positional_case_file_is_collected(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", cases='{"case_id": "a", "input": "x", "slice": "s"}')
    pytester.runpytest("cases.jsonl").assert_outcomes(passed=1)


def test_folder_and_config_suite(pytester: pytest.Pytester) -> None:
    suite = pytester.mkdir("suite")
    (suite / "cases.jsonl").write_text('{"case_id": "a", "input": "x", "slice": "s"}\n', encoding="utf-8")
    (suite / "more.jsonl").write_text('{"case_id": "b", "input": "y", "slice": "s"}\n', encoding="utf-8")
    (suite / "train.jsonl").write_text('{"question": "1+1", "answer": "2"}\n', encoding="utf-8")
    (suite / "promptsuite.toml").write_text('[suite]\ntrain = "train.jsonl"\n', encoding="utf-8")
    # a folder: every case file in it, but not the train file
    pytester.runpytest("--prompt-suite", "suite").assert_outcomes(passed=2)
    # a config that lists its case files: only those
    (suite / "promptsuite.toml").write_text('[suite]\ncases = ["more.jsonl"]\n', encoding="utf-8")
    result = pytester.runpytest("--prompt-suite", "suite/promptsuite.toml", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*suite/more.jsonl::b PASSED*"])


def test_bad_lines_fail_collection_with_path_line_and_nothing_runs(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".jsonl",
        cases='{"case_id": "a", "input": "x", "slice": "s"}\n'
        '{"case_id": "b", "input": "x", "slice": "s", "must_inlcude": ["x"]}\n'
        '{"case_id": "a", "input": "x", "slice": "s"}\n',
    )
    result = pytester.runpytest("--prompt-suite", "cases.jsonl")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting cases.jsonl*",
            "cases.jsonl:2: unknown key 'must_inlcude' (did you mean 'must_include'?)",
            "cases.jsonl:3: duplicate case_id 'a' (first defined at cases.jsonl:1)",
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*passed*")


def test_duplicate_id_across_files(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", one='{"case_id": "a", "input": "x", "slice": "s"}')
    (pytester.path / "two.jsonl").write_text('\n{"case_id": "a", "input": "x", "slice": "s"}\n')
    result = pytester.runpytest("--prompt-suite", "one.jsonl", "--prompt-suite", "two.jsonl")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["two.jsonl:2: duplicate case_id 'a' (first defined at one.jsonl:1)"])


def test_not_utf8_is_a_collection_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "cases.jsonl").write_bytes(b'{"case_id": "a", "input": "\xe9", "slice": "s"}\n')
    result = pytester.runpytest("--prompt-suite", "cases.jsonl")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["cases.jsonl:1: not valid UTF-8 (byte 0xe9 at column 28)*"])
    result.stdout.no_fnmatch_line("*Traceback*")


def test_missing_suite_path_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--prompt-suite", "nope.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--prompt-suite nope.jsonl: no such file or folder*"])


def test_bad_config_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", cases='{"case_id": "a", "input": "x", "slice": "s"}')
    pytester.makefile(".toml", promptsuite="[thresholds]\ndefualt = 0.5\n")
    result = pytester.runpytest("--prompt-suite", "promptsuite.toml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*promptsuite.toml:2: unknown key 'thresholds.defualt' (did you mean 'default'?)*"])


def test_bad_option_value_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", cases='{"case_id": "a", "input": "x", "slice": "s"}')
    result = pytester.runpytest("--prompt-suite", "cases.jsonl", "--prompt-min-pass-rate", "95%")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--prompt-min-pass-rate*'95%' is not a number from 0 to 1*"])


def test_collection_is_frozen_while_the_cases_run_and_given_back_after(suite: Suite) -> None:
    """What collection made is kept out of the cyclic collector's walks while the cases run (``gc.freeze``:
    fewer instructions a case, benchmarks/bench_overhead.py) and given back at the end, so that a process
    running pytest again (pytester, an IDE) keeps nothing frozen."""
    import gc

    before = gc.get_freeze_count()
    suite.prompts(["alpha", "beta"])
    suite.write(
        "conftest.py",
        "import gc\nfrom pathlib import Path\n\n\ndef pytest_runtest_call(item):\n"
        "    with Path('frozen.txt').open('a') as out:\n        out.write(f'{gc.get_freeze_count()}\\n')\n",
    )
    suite.run().assert_outcomes(passed=2)
    frozen = [int(n) for n in (suite.path / "frozen.txt").read_text().split()]
    assert len(frozen) == 2 and all(n > before for n in frozen)
    assert gc.get_freeze_count() == before


#: A suite config whose threshold and suite check name slices with a letter wrong, and one glob that matches none.
MISSPELLED_SLICES = """\
[thresholds]
default = 0.5

[thresholds.slices]
injecton = 1.0
ok = 1.0

[[checks]]
slice = "fact*"
assert = [{ type = "icontains", value = "x" }]

[[checks]]
slice = "bogus-*"
assert = [{ type = "icontains", value = "x" }]
"""


def test_a_slice_the_config_names_that_no_case_has_stops_collection(suite: Suite) -> None:
    suite.cases(THREE_SLICES)
    suite.config(MISSPELLED_SLICES)
    for args in ((), ("--collect-only",), ("-n", "2")):
        result = suite.run(*args, paths=(".",))
        assert result.ret in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.TESTS_FAILED), args  # -n 2: xdist's 1
        result.stdout.fnmatch_lines(
            [
                "*promptsuite.toml:5: [[]thresholds.slices] 'injecton' matches no case's slice "
                "(did you mean 'injection'?); the slices: facts, injection, ok",
                "*promptsuite.toml:13: [[][[]checks]] slice = 'bogus-[*]' matches no case's slice; the slices: *",
            ]
        )
        assert "passed" not in result.stdout.str() and "1 error" in result.stdout.str()


def test_a_part_of_a_suite_does_not_judge_the_slices_of_the_rest(suite: Suite) -> None:
    suite.cases(THREE_SLICES[:2], name="cases/ok.jsonl")
    suite.cases(THREE_SLICES[2:], name="cases/rest.jsonl")
    suite.config("[thresholds.slices]\ninjection = 1.0\n")
    assert suite.run("--collect-only", paths=("cases/ok.jsonl",)).ret == pytest.ExitCode.OK
    result = suite.run(paths=(".",))
    result.stdout.fnmatch_lines(["injection *100% (config slice)*"])
