"""The promptfoo corpus: each config under ``fixtures/promptfoo/corpus``, imported and run on echo, gives
the counts of rows and passed rows that promptfoo 0.123.1 itself gave (recorded in ``promptfoo-counts.json``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.importers.promptfoo_run import import_config
from tests.importers.promptfoo_run import promptfoo_command
from tests.importers.promptfoo_run import run_imported
from tests.importers.promptfoo_run import run_promptfoo
from tests.suite import Suite


CORPUS = Path(__file__).parent / "fixtures" / "promptfoo" / "corpus"
CONFIGS = sorted(p.parent.name for p in CORPUS.glob("*/promptfoo-counts.json"))


def _counts(rows: list[bool]) -> dict[str, int]:
    return {"rows": len(rows), "passed": sum(rows)}


@pytest.mark.parametrize("name", CONFIGS)
def test_the_imported_config_gives_promptfoos_counts(name: str, tmp_path: Path, suite: Suite) -> None:
    recorded = json.loads((CORPUS / name / "promptfoo-counts.json").read_text(encoding="utf-8"))
    status, imported = import_config(tmp_path, CORPUS / name / "promptfooconfig.yaml")
    assert status == 0
    ours = _counts([row["outcome"] == "passed" for row in run_imported(suite, imported)])
    assert ours == {"rows": recorded["rows"], "passed": recorded["passed"]}


@pytest.mark.skipif(promptfoo_command() is None, reason="promptfoo is not installed: the recorded counts stand")
@pytest.mark.parametrize("name", CONFIGS)
def test_promptfoo_itself_gives_the_recorded_counts(name: str, tmp_path: Path) -> None:
    recorded = json.loads((CORPUS / name / "promptfoo-counts.json").read_text(encoding="utf-8"))
    theirs = _counts([r["success"] for r in run_promptfoo(CORPUS / name / "promptfooconfig.yaml", tmp_path)])
    assert theirs == {"rows": recorded["rows"], "passed": recorded["passed"]}
