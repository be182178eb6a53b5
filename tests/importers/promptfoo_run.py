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


#: The Node.js libraries promptfoo's markup checks use, by the assert types that need them.
_MARKUP_LIBRARIES = {"node-sql-parser": ("is-sql", "contains-sql"), "parse5": ("is-html", "contains-html")}


def missing_node_modules(config: Path) -> list[str]:
    """Return the Node.js libraries ``config``'s asserts need (is-sql: node-sql-parser, is-html: parse5) that Node.js
    cannot find from the working folder or ``NODE_PATH``."""
    text = config.read_text(encoding="utf-8")
    needed = [
        lib
        for lib, kinds in _MARKUP_LIBRARIES.items()
        if any(f"type: {k}" in text for k in kinds) or any(f"type: not-{k}" in text for k in kinds)
    ]
    if not needed or shutil.which("node") is None:
        return needed
    script = (
        "for (const m of process.argv.slice(1)) { try { require.resolve(m, "
        "{paths: [process.cwd(), ...(process.env.NODE_PATH || '').split(':')]}); } catch { console.log(m); } }"
    )
    done = subprocess.run(["node", "-e", script, *needed], capture_output=True, text=True, check=False, timeout=60)
    return done.stdout.split()


def run_promptfoo(config: Path, tmp_path: Path) -> list[dict[str, Any]]:
    """Run ``promptfoo eval`` on a copy of ``config``'s folder; return its result rows."""
    rows: list[dict[str, Any]] = promptfoo_results(config, tmp_path)["results"]
    return rows


def promptfoo_results(config: Path, tmp_path: Path) -> dict[str, Any]:
    """Run ``promptfoo eval`` on a copy of ``config``'s folder; return its out.json's ``results``
    (``prompts``: each provider's prompts; ``results``: a row per test and prompt)."""
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
    results: dict[str, Any] = json.loads((work / "out.json").read_text(encoding="utf-8"))["results"]
    return results


def recorded(results: dict[str, Any]) -> dict[str, Any]:
    """Make promptfoo's results what a corpus folder records: its providers (their label, or id when
    they have none) and number of prompts, and a row per result: the test's and the config prompt's
    number (from 1), the provider, the verdict and the output.

    promptfoo's ``promptIdx`` counts each provider's prompts in turn; a provider that runs every prompt
    (the widest) gives the config's order, in which a filtered provider's prompts are found by id."""
    prompts = results["prompts"]
    by_provider: dict[str, list[str]] = {}
    for prompt in prompts:
        by_provider.setdefault(prompt["provider"], []).append(prompt["id"])
    blocks = sum(1 for i, prompt in enumerate(prompts) if i == 0 or prompts[i - 1]["provider"] != prompt["provider"])
    assert blocks == len(by_provider), "two providers share a label: their rows cannot be told apart"
    widest = max(by_provider.values(), key=len)
    place = []
    for prompt in prompts:
        k = sum(1 for earlier in prompts[: len(place)] if earlier["provider"] == prompt["provider"])
        if len(by_provider[prompt["provider"]]) == len(widest):
            place.append(k + 1)
        else:
            assert widest.count(prompt["id"]) == 1, f"prompt {prompt['label']!r}: its place in the config is unclear"
            place.append(widest.index(prompt["id"]) + 1)
    rows = [
        {
            "test": row["testIdx"] + 1,
            "prompt": place[row["promptIdx"]],
            "provider": row["provider"]["label"] or row["provider"]["id"],
            "pass": row["success"],
            "output": (row.get("response") or {}).get("output"),
        }
        for row in results["results"]
    ]
    return {"providers": list(by_provider), "prompts": len(widest), "rows": rows}


def import_config(tmp_path: Path, config: Path, *extra: str) -> tuple[int, Path]:
    """Run ``promptsuite import promptfoo`` on ``config``; return its status and the suite's folder."""
    out = tmp_path / "suite"
    return main(["import", "promptfoo", str(config), "--out", str(out), *extra]), out


def run_imported(suite: Suite, imported: Path) -> list[dict[str, Any]]:
    """Run an imported suite under pytest; return its report's rows."""
    shutil.copytree(imported, suite.path / "suite")
    suite.run("--prompt-report", "report", "-p", "no:cacheprovider", paths=["suite"])
    return suite.rows()


def record(folder: Path, tmp_path: Path) -> None:
    """Write ``folder``'s ``promptfoo-rows.json``: what promptfoo gives on its config, a line per row."""
    made = recorded(promptfoo_results(folder / "promptfooconfig.yaml", tmp_path))
    head = json.dumps({"recorded_with": RECORDED_WITH, "providers": made["providers"], "prompts": made["prompts"]})
    rows = ",\n".join(" " + json.dumps(row, ensure_ascii=False) for row in made["rows"])
    text = head[:-1] + ', "rows": [\n' + rows + "\n]}\n"
    (folder / "promptfoo-rows.json").write_text(text, encoding="utf-8")


#: How the corpus rows were recorded.
RECORDED_WITH = (
    "promptfoo 0.123.1 (npm), Node.js v20.20.2 (node dist/src/main.js: its entrypoint asks for Node 22), "
    "provider echo: promptfoo eval -c promptfooconfig.yaml -o out.json --no-cache"
)


if __name__ == "__main__":  # python -m tests.importers.promptfoo_run FOLDER...: record the folders' rows
    import tempfile

    for name in sys.argv[1:]:
        with tempfile.TemporaryDirectory() as tmp:
            record(Path(name), Path(tmp))
            print(f"recorded {name}")


def write_config(tmp_path: Path, text: str, files: dict[str, str]) -> Path:
    """Write a promptfoo config (``text``) and the files it names (relative path -> text) into ``tmp_path``."""
    for name, content in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(content, encoding="utf-8")
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(text, encoding="utf-8")
    return config
