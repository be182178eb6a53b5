"""The guide's feature table (docs/guides/from-promptfoo.md, "Feature by feature") and the importer agree: each
row's config part, over a base config, imports (Y), is refused with exit 2 (refused), or imports with the
feature listed as not carried over (listed)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_promptsuite.cli.main import main


GUIDE = Path(__file__).parents[2] / "docs" / "guides" / "from-promptfoo.md"
FILES = Path(__file__).parent / "fixtures" / "promptfoo" / "features"
BASE: dict[str, Any] = {"prompts": ["{{x}}"], "providers": ["echo"], "tests": [{"vars": {"x": "a"}}]}


def _rows() -> list[tuple[str, str, str]]:
    """Return the table's rows: (feature, its config part, Y | refused | listed)."""
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index("\n## Feature by feature\n")
    section = text[start : text.index("\n## ", start + 1)]
    rows = [line.strip("|").split(" | ") for line in section.splitlines() if line.startswith("| ")]
    return [(feature.strip(), written.strip().strip("`"), status.strip()) for feature, written, status in rows[1:]]


ROWS = _rows()


def test_the_table_covers_the_documented_forms() -> None:
    assert len(ROWS) >= 40
    assert {status for _, _, status in ROWS} == {"Y", "refused", "listed"}


@pytest.mark.parametrize(("feature", "written", "status"), ROWS, ids=[row[0] for row in ROWS])
def test_the_importer_does_what_the_guides_table_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], feature: str, written: str, status: str
) -> None:
    folder = tmp_path / "config"
    shutil.copytree(FILES, folder)
    config = folder / "promptfooconfig.yaml"
    config.write_text(yaml.safe_dump({**BASE, **yaml.safe_load(written)}, sort_keys=False), encoding="utf-8")
    code = main(["import", "promptfoo", str(config), "--out", str(tmp_path / "suite")])
    printed = capsys.readouterr()
    expected = {"Y": 0, "listed": 0, "refused": 2}[status]
    assert code == expected, f"{feature}: {printed.err or printed.out}"
    if status == "Y":
        assert "not carried over" not in printed.out, printed.out
    if status == "listed":
        assert "not carried over" in printed.out, printed.out
