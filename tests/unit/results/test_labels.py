"""Labels files and review decisions read as labels, every bad line named by ``path:line``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.results.labels import Label
from pytest_promptsuite.results.labels import load_decisions
from pytest_promptsuite.results.labels import load_labels


def _file(tmp_path: Path, lines: list[object], name: str = "labels.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines), "utf-8")
    return path


def test_labels_read_with_where_they_came_from(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        [
            {"case_id": "a", "label": "pass", "labeller": "ann", "score": 0.8},
            "",
            {"output": "text", "rubric": "polite", "label": "fail", "variant": "v2", "check": "assert[0]"},
        ],
    )
    assert load_labels(path, display="labels.jsonl") == [
        Label(True, "labels.jsonl:1", "a", score=0.8, labeller="ann"),
        Label(False, "labels.jsonl:3", None, "text", "polite", "assert[0]", "v2"),
    ]


def test_every_bad_line_is_named(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        [
            {"case_id": "a", "labl": "pass"},
            {"case_id": "a", "label": "yes"},
            {"label": "pass"},
            {"output": "x", "label": "pass"},
            "{nope",
            [1, 2],
            {"case_id": "a", "label": "pass", "score": 2},
            {"case_id": "", "label": "pass"},
        ],
    )
    with pytest.raises(ConfigError) as caught:
        load_labels(path, display="l.jsonl")
    lines = str(caught.value).splitlines()
    assert lines[0] == "l.jsonl:1: unknown key 'labl' (did you mean 'label'?)"
    assert lines[1].startswith("l.jsonl:1: label:")  # and the required label is missing
    assert "l.jsonl:2: label: Input should be 'pass' or 'fail'" in lines
    assert "l.jsonl:3: give 'case_id' (its output is read from --results) or 'output'" in lines
    assert "l.jsonl:4: an inline 'output' without 'case_id' needs the 'rubric' it is labelled for" in lines
    assert any(line.startswith("l.jsonl:5: invalid JSON") for line in lines)
    assert "l.jsonl:6: a label is a JSON object" in lines
    assert any(line.startswith("l.jsonl:7: score:") for line in lines)
    assert any(line.startswith("l.jsonl:8: case_id:") for line in lines)


def test_an_unreadable_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="missing.jsonl: cannot read it"):
        load_labels(tmp_path / "missing.jsonl")


def test_review_decisions_are_labels_of_an_output_by_its_hash(tmp_path: Path) -> None:
    digest = "ab" * 32
    path = _file(
        tmp_path,
        [{"case_id": "a", "output_sha256": digest, "decision": "fail", "reviewer": "ann", "variant": "v"}],
        "decisions.jsonl",
    )
    [label] = load_decisions(path)
    assert (label.passed, label.case_id, label.output_sha256, label.labeller, label.variant) == (
        False,
        "a",
        digest,
        "ann",
        "v",
    )
    assert label.where.endswith("decisions.jsonl:1")
    bad = _file(tmp_path, [{"case_id": "a", "output_sha256": digest, "decision": "maybe"}], "bad.jsonl")
    with pytest.raises(ConfigError, match="bad.jsonl:1: 'decision' must be 'pass' or 'fail'"):
        load_decisions(bad)
