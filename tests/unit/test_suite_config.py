"""Stage tests for the suite config: unknown keys, paths outside the folder, discovery."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_promptsuite.config.suite import find_config
from pytest_promptsuite.config.suite import load_config
from pytest_promptsuite.config.suite import suite_targets
from pytest_promptsuite.errors import ConfigError


def test_contract_example_parses(tmp_path: Path) -> None:
    path = tmp_path / "promptsuite.toml"
    path.write_text(
        """
[suite]
cases = ["cases.jsonl"]
[model]
spec = "fake:rules.json"
params = { temperature = 0, max_tokens = 256 }
[models.judge]
spec = "fake"
[thresholds]
default = 0.9
max_regression = 0.02
[thresholds.slices]
"提示词注入" = 1.0
[[checks]]
slice = "*"
assert = [{ type = "not-contains", value = "sk-" }]
""",
        encoding="utf-8",
    )
    config = load_config(path)
    assert config.model.spec == "fake:rules.json"
    assert config.models["judge"].spec == "fake"
    assert config.thresholds.slices == {"提示词注入": 1.0}
    assert config.checks[0].assert_ == [{"type": "not-contains", "value": "sk-"}]
    assert config.case_paths() == [tmp_path.resolve() / "cases.jsonl"]


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[sute]\ncases = []\n", "unknown key 'sute' (did you mean 'suite'?)"),
        ("[model]\nspek = 'fake'\n", "unknown key 'model.spek' (did you mean 'spec'?)"),
        ("[thresholds]\ndefault = 2\n", "thresholds.default: Input should be less than or equal to 1"),
        ("[suite]\ncases = ['../outside.jsonl']\n", "suite.cases = '../outside.jsonl' points outside"),
        ("[suite\n", "invalid TOML"),
    ],
)
def test_bad_config_names_file_and_key(tmp_path: Path, toml: str, message: str) -> None:
    path = tmp_path / "promptsuite.toml"
    path.write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError) as excinfo:
        load_config(path)
    assert str(excinfo.value).startswith(str(path))
    assert message in str(excinfo.value)


def test_pyproject_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.promptsuite.thresholds]\ndefault = 0.5\n", encoding="utf-8"
    )
    (tmp_path / "sub").mkdir()
    case_file = tmp_path / "sub" / "cases.jsonl"
    case_file.write_text("", encoding="utf-8")
    found = find_config(case_file, tmp_path)
    assert found == tmp_path / "pyproject.toml"
    assert load_config(found).thresholds.default == 0.5


def test_config_beside_the_case_file_wins(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.promptsuite]\n", encoding="utf-8")
    (tmp_path / "promptsuite.toml").write_text("", encoding="utf-8")
    assert find_config(tmp_path / "cases.jsonl", tmp_path) == tmp_path / "promptsuite.toml"


def test_suite_targets(tmp_path: Path) -> None:
    (tmp_path / "promptsuite.toml").write_text("[suite]\ncases = ['a.jsonl']\n", encoding="utf-8")
    config, targets = suite_targets(tmp_path)
    assert config is not None and targets == [tmp_path.resolve() / "a.jsonl"]
    plain = tmp_path / "b.jsonl"
    assert suite_targets(plain) == (None, [plain])
