"""The OpenCompass corpus: 60 dataset configs of OpenCompass 0.5.4 under ``fixtures/opencompass/corpus``
(gen and ppl, few-shot and zero-shot, string and dialogue, multi-turn), each imported as written and
every suite it gives rendered."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.cli.main import main
from pytest_promptsuite.formats.tomlio import parse_toml


CORPUS = Path(__file__).parent / "fixtures" / "opencompass" / "corpus"
LISTED = [line.split() for line in (CORPUS / "configs.txt").read_text(encoding="utf-8").splitlines()]
CONFIGS = {entry[0]: entry[1] if len(entry) > 1 else None for entry in LISTED if entry and entry[0] != "#"}


def _template(suite: Path) -> dict[str, Any]:
    table: dict[str, Any] = parse_toml((suite / "promptsuite.toml").read_bytes(), "promptsuite.toml")[0]["template"]
    return table


def _imported(config: str, model: str | None, out: Path) -> list[Path]:
    extra = ["--model", str(CORPUS / "configs" / model)] if model else []
    printed = io.StringIO()
    with redirect_stdout(printed), redirect_stderr(printed):
        status = main(
            ["import", "opencompass", str(CORPUS / "configs" / "datasets" / config), "--out", str(out), *extra]
        )
    assert status == 0, printed.getvalue()
    return sorted(p for p in out.iterdir() if (p / "promptsuite.toml").is_file())


def _errors(suite: Path) -> list[str]:
    shown, problems = io.StringIO(), io.StringIO()
    with redirect_stdout(shown), redirect_stderr(problems):
        status = main(["render", "--prompt-suite", str(suite)])
    lines = [json.loads(line) for line in shown.getvalue().splitlines()]
    errors = [str(line["error"]) for line in lines if line["error"] is not None]
    return errors or ([] if status == 0 and lines else [problems.getvalue() or "nothing rendered"])


def test_the_corpus_holds_sixty_configs_of_every_kind() -> None:
    assert len(CONFIGS) == 60
    assert all((CORPUS / "configs" / "datasets" / config).is_file() for config in CONFIGS)


@pytest.mark.slow
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_the_config_imports_and_every_suite_renders(config: str, tmp_path: Path) -> None:
    suites = _imported(config, CONFIGS[config], tmp_path / "out")
    assert suites
    assert {suite.name: _errors(suite) for suite in suites} == {suite.name: [] for suite in suites}


@pytest.mark.slow
def test_the_corpus_covers_the_kinds(tmp_path: Path) -> None:
    """Gen and ppl, few-shot and zero-shot, string and dialogue templates, multi-turn chats."""
    kinds: set[str] = set()
    for i, (config, model) in enumerate(sorted(CONFIGS.items())):
        for suite in _imported(config, model, tmp_path / str(i)):
            table = _template(suite)
            kinds.add("ppl" if table.get("inferencer") == "ppl" else "gen")
            kinds.add("zero-shot" if table["retriever"]["type"] == "ZeroRetriever" else "few-shot")
            inner = (table.get("prompt_template") or table.get("ice_template") or {}).get("template")
            values = list(inner.values()) if isinstance(inner, dict) and "round" not in inner else [inner]
            kinds.add("dialogue" if any(isinstance(v, dict) for v in values) else "string")
            if "infer_mode" in table:
                kinds.add("multi-turn")
    assert kinds == {"gen", "ppl", "few-shot", "zero-shot", "string", "dialogue", "multi-turn"}
