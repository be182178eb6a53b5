"""Stage tests for ``run.assembly``: the model a suite runs, made from its config and the options."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_promptsuite.checks.outcome import Outcome
from tests.session import collect


def test_fake_rules_from_the_config(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text(
        json.dumps({"case_id": "a", "input": "退款", "slice": "s", "must_include": ["未提供"]}) + "\n", encoding="utf-8"
    )
    rules = {"rules": [{"match": "退款", "reply": "现有资料未提供"}]}
    (tmp_path / "rules.json").write_text(json.dumps(rules, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "promptsuite.toml").write_text('[model]\nspec = "fake:rules.json"\n', encoding="utf-8")
    with collect(tmp_path, "--prompt-suite", "cases.jsonl") as run:
        assert [row.outcome for row in run.run()] == [Outcome.PASSED]
    # --prompt-model replaces the spec: the echo does not contain the fact
    with collect(tmp_path, "--prompt-suite", "cases.jsonl", "--prompt-model", "fake") as run:
        assert [row.outcome for row in run.run()] == [Outcome.FAILED]
