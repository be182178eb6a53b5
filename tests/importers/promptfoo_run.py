"""Running promptfoo itself (when installed) and an imported suite on the same config, for the tests
that compare their verdicts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from pytest_promptsuite.cli.main import main
from tests.suite import Suite


def promptfoo_command() -> list[str] | None:
    """Return the command that runs promptfoo: ``$PROMPTFOO`` (its bin, or ``node .../dist/src/main.js``)
    or ``promptfoo`` on PATH; None when neither is there."""
    explicit = os.environ.get("PROMPTFOO")
    if explicit:
        return explicit.split()
    found = shutil.which("promptfoo")
    return [found] if found else None


def run_promptfoo(config: Path, tmp_path: Path) -> list[dict[str, Any]]:
    """Run ``promptfoo eval`` on a copy of ``config``'s folder; return its result rows."""
    command = promptfoo_command()
    assert command is not None
    work = tmp_path / "promptfoo"
    shutil.copytree(config.parent, work)
    env = {
        **os.environ,
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_CONFIG_DIR": str(tmp_path / "pfhome"),
        "PROMPTFOO_PYTHON": sys.executable,
    }
    subprocess.run(
        [*command, "eval", "-c", config.name, "-o", "out.json", "--no-cache", "--no-table", "--no-progress-bar"],
        cwd=work,
        env=env,
        capture_output=True,
        timeout=600,
        check=False,
    )
    results: list[dict[str, Any]] = json.loads((work / "out.json").read_text(encoding="utf-8"))["results"]["results"]
    return results


def import_config(tmp_path: Path, config: Path, *extra: str) -> tuple[int, Path]:
    """Run ``promptsuite import promptfoo`` on ``config``; return its status and the suite's folder."""
    out = tmp_path / "suite"
    return main(["import", "promptfoo", str(config), "--out", str(out), *extra]), out


def run_imported(suite: Suite, imported: Path) -> list[dict[str, Any]]:
    """Run an imported suite under pytest; return its report's rows."""
    shutil.copytree(imported, suite.path / "suite")
    suite.run("--prompt-report", "report", "-p", "no:cacheprovider", paths=["suite"])
    return suite.rows()
