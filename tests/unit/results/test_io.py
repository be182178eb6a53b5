"""Stage tests for ``results.io``: reading a result set back, and what a bad one reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.io import StoredResults
from pytest_promptsuite.results.io import encode_row
from pytest_promptsuite.results.io import load_results
from pytest_promptsuite.results.io import load_summary_json
from pytest_promptsuite.results.io import stream_results
from pytest_promptsuite.results.summary import Baseline
from pytest_promptsuite.results.summary import summarize
from tests.unit.results.support import SPOOLED
from tests.unit.results.support import row


def test_load_results_from_a_file_or_a_report_folder(tmp_path: Path) -> None:
    rows = [row("a", "s", "passed", output="<b>hi</b>"), row("b", "s", "failed")]
    (tmp_path / "results.jsonl").write_text("".join(r.to_json() + "\n" for r in rows) + "\n", "utf-8")
    assert load_results(tmp_path) == rows
    assert load_results(tmp_path / "results.jsonl") == rows


def test_load_results_names_the_file_and_line_of_a_bad_row(tmp_path: Path) -> None:
    bad = tmp_path / "results.jsonl"
    bad.write_text(json.dumps({"case_id": "a", "slice": "s", "outcome": "passed"}) + "\n{not json\n", "utf-8")
    with pytest.raises(ConfigError, match=r"results\.jsonl:2: not a results\.jsonl row"):
        load_results(bad)
    bad.write_text(json.dumps({"case_id": "a"}) + "\n", "utf-8")
    missing = r"results\.jsonl:1: not a results\.jsonl row \(missing field 'slice'\)"
    with pytest.raises(ConfigError, match=missing):
        load_results(bad)
    with pytest.raises(ConfigError, match="cannot read results"):
        load_results(tmp_path / "missing.jsonl")


def test_a_row_that_is_no_object_or_of_a_newer_format_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "results.jsonl"
    bad.write_text('["a", "s", "passed"]\n', "utf-8")
    for read in (load_results, stream_results):
        with pytest.raises(ConfigError, match=r"results\.jsonl:1: not a results\.jsonl row \(expected a JSON object\)"):
            read(bad)
    bad.write_text(json.dumps({"case_id": 7, "slice": "s", "outcome": "passed", "format_version": 99}) + "\n", "utf-8")
    with pytest.raises(ConfigError, match="format_version 99 is newer than this pytest-promptsuite reads"):
        stream_results(bad)  # said before any field of the newer format


def test_load_summary_json_beside_the_results_or_none(tmp_path: Path) -> None:
    assert load_summary_json(tmp_path) is None
    (tmp_path / "summary.json").write_text('{"format_version": 2}', "utf-8")
    assert load_summary_json(tmp_path) == {"format_version": 2}
    assert load_summary_json(tmp_path / "results.jsonl") == {"format_version": 2}
    (tmp_path / "summary.json").write_text("[1]", "utf-8")
    with pytest.raises(ConfigError, match=r"summary\.json: not a promptsuite summary \(expected a JSON object\)"):
        load_summary_json(tmp_path)
    (tmp_path / "summary.json").write_text("{oops", "utf-8")
    with pytest.raises(ConfigError, match=r"summary\.json: cannot read the summary"):
        load_summary_json(tmp_path)


def test_stream_results_leaves_the_texts_on_disk_until_a_row_is_read_back(tmp_path: Path) -> None:
    rows = [
        row("a", "s", "passed", output="out a\u2028x", prompt="prompt a", variant="v1"),
        row("b", "s", "failed", output="out b", prompt=[{"role": "user", "content": "hi"}], repeat=1),
    ]
    path = tmp_path / "results.jsonl"
    path.write_text("\n" + "".join(r.to_json() + "\n" for r in rows), "utf-8")
    stored = stream_results(tmp_path)
    assert [(r.case_id, r.variant, r.repeat, r.outcome.value) for r in stored.rows] == [
        ("a", "v1", 0, "passed"),
        ("b", None, 1, "failed"),
    ]
    assert all(r.output is None and r.prompt is None for r in stored.rows)
    assert [stored.full(r) for r in stored.rows] == rows
    path.write_text(rows[0].to_json() + "\n" + json.dumps({"case_id": "c"}) + "\n", "utf-8")
    with pytest.raises(ConfigError, match=r"results\.jsonl:2: not a results\.jsonl row \(missing field 'slice'\)"):
        stream_results(path)


def test_a_flip_against_a_stored_baseline_shows_the_baseline_output(tmp_path: Path) -> None:
    old = [row("a", "s", "passed", output="old answer", prompt="old prompt"), row("b", "s", "passed")]
    (tmp_path / "results.jsonl").write_text("".join(r.to_json() + "\n" for r in old), "utf-8")
    stored = stream_results(tmp_path)
    now = [row("a", "s", "failed", output="new answer", prompt="new prompt"), row("b", "s", "passed")]
    summary = summarize(now, baseline=Baseline(stored.rows, "old", full=stored.full))
    assert summary.baseline is not None
    (flip,) = summary.baseline.flips
    assert (flip.id, flip.old_output, flip.new_output) == ("a", "old answer", "new answer")
    assert flip.old_prompt == "old prompt"


def test_a_row_encoded_once_is_spooled_as_if_its_line_were_read_back() -> None:
    parsed_lines: list[tuple[CaseResult, dict]] = []
    given_lines: list[tuple[CaseResult, dict]] = []
    parsed = StoredResults.spool(lambda r, line: parsed_lines.append((r, line)))
    given = StoredResults.spool(lambda r, line: given_lines.append((r, line)))
    values = []
    for r in SPOOLED:
        line, value = encode_row(r)
        assert line == r.to_json()
        values.append(value)
        parsed.append(line)
        given.append(line, None if value is None else (r, value))
    # a scrubbed secret or a NaN: the line is not what the row holds, so it is read back
    assert [v is None for v in values] == [False, False, True, True]
    assert "sk0123456789abcdef" not in SPOOLED[2].to_json()
    assert parsed.rows == given.rows and parsed_lines == given_lines
    assert [type(r.location) for r in given.rows] == [type(r.location) for r in parsed.rows]
    assert all(r.output is None and r.checks == () and r.usage is None for r in given.rows)
    assert [given.full(r) for r in given.rows] == [parsed.full(r) for r in parsed.rows]
    lines = [(r.to_json() + "\n").encode() for r in SPOOLED]
    assert list(given.lines(given.rows, scrubbed=True)) == [b"".join(lines)]  # the file's order: one block
    assert list(given.lines(given.rows[::-1], scrubbed=True)) == lines[::-1]
    assert list(given.lines(given.rows[:2] + [SPOOLED[3]], scrubbed=True)) == [lines[0] + lines[1], lines[3]]
    assert list(given.lines(given.rows)) == lines  # scrubbed again, line by line: the same bytes
    stranger = row("z", "s", "passed")  # a row the file lacks: its to_json()
    assert list(given.lines([stranger])) == [(stranger.to_json() + "\n").encode()]
    parsed.close()
    given.close()
