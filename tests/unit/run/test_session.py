"""Stage tests for ``run.session``: collecting a suite's cases, running them and finishing the run, through
``PromptSession`` as the plugin drives it (``tests/session.py``), no pytest run."""

from __future__ import annotations

import json
from pathlib import Path

from tests.session import collect
from tests.suite import THREE_SLICES


def test_a_case_file_edited_during_the_run_ends_that_case_as_an_error(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        '{"case_id": "a", "input": "hello", "slice": "s", "must_include": ["hello"]}\n'
        '{"case_id": "b", "input": "hello", "slice": "s"}\n',
        encoding="utf-8",
    )
    with collect(tmp_path, "--prompt-suite", "cases.jsonl", "--prompt-report", "report") as run:
        cases.write_text(cases.read_text(encoding="utf-8").replace('"b", "input": "hello"', '"b", "input": "HELLO"'))
        rows = run.run()
        run.finish()
    assert "cases.jsonl:2: the case file changed after it was collected; run again" in str(rows[1].error)
    written = [json.loads(line) for line in (tmp_path / "report" / "results.jsonl").read_text().splitlines()]
    assert [(r["case_id"], r["outcome"], r["location"]) for r in written] == [
        ("a", "passed", "cases.jsonl:1"),
        ("b", "error", "cases.jsonl:2"),
    ]


def test_report_rows_have_the_contract_fields(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in THREE_SLICES))
    with collect(tmp_path, "--prompt-suite", "cases.jsonl", "--prompt-report", "report") as run:
        run.run()
        run.finish()
    rows = run.report_rows()
    assert len(rows) == 8
    row = rows["inject-2"]
    for key in (
        "case_id",
        "slice",
        "variant",
        "repeat",
        "outcome",
        "output",
        "checks",
        "error",
        "prompt",
        "prompt_hash",
        "latency_ms",
        "usage",
    ):
        assert key in row
    assert row["outcome"] == "failed"
    assert row["output"] == row["prompt"] == "sk-123"
    [check] = row["checks"]
    assert {k: check[k] for k in ("layer", "name", "passed", "message")} == {
        "layer": "content",
        "name": "must_not_include",
        "passed": False,
        "message": "found forbidden text 'sk-' at offset 0",
    }
    assert row["tags"] == ["leak"]
    assert len(row["prompt_hash"]) == 12
    assert {p.name for p in (tmp_path / "report").iterdir()} >= {
        "results.jsonl",
        "summary.json",
        "slices.csv",
        "summary.md",
    }
