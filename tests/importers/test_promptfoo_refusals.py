"""What ``promptsuite import promptfoo`` cannot carry over is refused: it exits 2, writes nothing, and says in one
line which feature and where the config writes it (never a suite that silently does something else)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_promptsuite.cli.main import main
from tests.importers.promptfoo_run import write_config


BASE = "prompts: ['{{x}}']\nproviders: [echo]\n"
TESTS = "tests:\n  - vars: {x: a}\n"


@pytest.mark.parametrize(
    ("text", "files", "line", "feature"),
    [
        (BASE + "tests: huggingface://datasets/rajpurkar/squad\n", {}, 3, "a Hugging Face dataset"),
        (BASE + "tests:\n  - https://docs.google.com/spreadsheets/d/1abc/edit\n", {}, 4, "a Google Sheet"),
        (BASE + "tests: az://account/container/tests.csv\n", {}, 3, "an Azure Blob test file"),
        (BASE + "tests: file://tests.xlsx\n", {"tests.xlsx": "x"}, 3, "an Excel test file"),
        (BASE + "tests: file://tests.txt\n", {"tests.txt": "x"}, 3, "the test file tests.txt"),
        (BASE + "tests: file://gen.ts\n", {"gen.ts": "export default () => []"}, 3, "a TypeScript test generator"),
        ("prompts: ['exec:./make_prompt.sh']\nproviders: [echo]\n" + TESTS, {}, 1, "an executable prompt"),
        ("prompts: ['langfuse://my-prompt@production']\nproviders: [echo]\n" + TESTS, {}, 1, "a Langfuse prompt"),
        ("prompts: [file://make.sh]\nproviders: [echo]\n" + TESTS, {"make.sh": "echo hi"}, 1, "a prompt made by a"),
        ("prompts: [file://p.ts]\nproviders: [echo]\n" + TESTS, {"p.ts": "x"}, 1, "file://p.ts: TypeScript prompt"),
        (BASE + "tests:\n  - vars: {x: file://doc.pdf}\n", {"doc.pdf": "%PDF"}, 4, "the var x from file://doc.pdf"),
        (BASE + "tests:\n  - vars: {x: file://cat.png}\n", {"cat.png": "png"}, 4, "the var x from file://cat.png"),
        (
            BASE + "tests:\n  - assert:\n      - type: equals\n        value: file://expected.py\n",
            {"expected.py": "def get_assert(o, c): return 'a'"},
            4,
            "assert[0]: an assert value made by a script",
        ),
        (BASE + "tests:\n  - $ref: other.yaml#/test\n", {"other.yaml": "test: {}"}, 4, "$ref 'other.yaml#/test'"),
    ],
)
def test_a_feature_the_import_cannot_carry_exits_2_naming_it_and_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, files: dict[str, str], line: int, feature: str
) -> None:
    config = write_config(tmp_path, text, files)
    assert main(["import", "promptfoo", str(config), "--out", str(tmp_path / "suite")]) == 2
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err.count("\n") == 1, printed.err
    assert printed.err.startswith(f"{config}:{line}: {feature}"), printed.err
    assert not (tmp_path / "suite").exists()


def test_a_bad_config_is_still_an_error_of_its_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, BASE + "tests: file://missing.csv\n", {})
    assert main(["import", "promptfoo", str(config), "--out", str(tmp_path / "suite")]) == 1
    assert f"{config}:3: file://missing.csv: no such file" in capsys.readouterr().err
