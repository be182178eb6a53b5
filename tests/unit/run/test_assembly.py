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


def test_the_judges_template_from_the_config(tmp_path: Path) -> None:
    """``[judge] template`` or ``template_file`` replaces the built-in prompt; both, an unreadable file or a
    template without ``{output}`` is a ConfigError naming the key's line."""
    import pytest

    from pytest_promptsuite.checks.metric import RUBRIC_PROMPT
    from pytest_promptsuite.config.suite import load_config
    from pytest_promptsuite.errors import ConfigError
    from pytest_promptsuite.run.assembly import judge_template

    def config(text: str) -> Path:
        path = tmp_path / "promptsuite.toml"
        path.write_text(text, encoding="utf-8")
        return path

    assert judge_template(load_config(config(""))) == RUBRIC_PROMPT
    (tmp_path / "judge.txt").write_text("Rubric: {rubric}\nOutput: {output}\n", encoding="utf-8")
    assert judge_template(load_config(config('[judge]\ntemplate_file = "judge.txt"\n'))).startswith("Rubric: {rubric}")
    problems = {
        '[judge]\ntemplate = "x {output}"\ntemplate_file = "judge.txt"\n': "promptsuite.toml:3: [judge] has both",
        '[judge]\ntemplate_file = "missing.txt"\n': "promptsuite.toml:2: judge.template_file = 'missing.txt': cannot",
        '[judge]\ntemplate = "no output here"\n': "promptsuite.toml:2: the judge's template has no {output}",
    }
    for text, said in problems.items():
        with pytest.raises(ConfigError) as caught:
            judge_template(load_config(config(text)))
        assert said in str(caught.value)
