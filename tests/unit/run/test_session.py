"""Stage tests for ``run.session``: collecting, running and finishing a suite's cases."""

from __future__ import annotations

from tests.suite import Suite


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
