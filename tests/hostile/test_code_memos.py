"""Imported promptfoo suites whose code files share a name: what a transform or code assert gives is memoized
by the file it resolves to and its content, never by the name as written, and only for one run."""

from __future__ import annotations

import shutil

import pytest

from pytest_promptsuite.cli.main import main
from tests.suite import Suite


pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")

CONFIG = """\
prompts: ['Say {{ x }}']
providers: [echo]
tests:
  - vars: {x: hi}
    options: {transform: file://t.js}
    assert:
      - {type: equals, value: "EXPECTED_JS"}
  - vars: {x: hi}
    options: {transform: file://t.py}
    assert:
      - {type: equals, value: "EXPECTED_PY"}
"""

#: Each suite's t.js and t.py, and what its tests expect of them.
SUITES = {
    "one": (
        "module.exports = (output) => output.toUpperCase();\n",
        "def get_transform(output, context):\n    return output.lower()\n",
        "SAY HI",
        "say hi",
    ),
    "two": (
        "module.exports = (output) => output + '!';\n",
        "def get_transform(output, context):\n    return output + '?'\n",
        "Say hi!",
        "Say hi?",
    ),
}


def _import(suite: Suite, name: str, js: str, py: str, expected_js: str, expected_py: str) -> None:
    """Write and import the promptfoo config ``name``, its case ids made its own (``name-1``...)."""
    source = suite.path / "configs" / name
    source.mkdir(parents=True, exist_ok=True)
    (source / "t.js").write_text(js, encoding="utf-8")
    (source / "t.py").write_text(py, encoding="utf-8")
    text = CONFIG.replace("EXPECTED_JS", expected_js).replace("EXPECTED_PY", expected_py)
    (source / "promptfooconfig.yaml").write_text(text, encoding="utf-8")
    assert main(["import", "promptfoo", str(source / "promptfooconfig.yaml"), "--out", str(suite.path / name)]) == 0
    cases = suite.path / name / "cases.jsonl"
    cases.write_text(cases.read_text(encoding="utf-8").replace('"test-', f'"{name}-'), encoding="utf-8")


@pytest.mark.parametrize("order", [("one", "two"), ("two", "one")])
def test_two_suites_whose_transform_files_share_a_name_keep_their_own_results(
    suite: Suite, order: tuple[str, str]
) -> None:
    for name, (js, py, expected_js, expected_py) in SUITES.items():
        _import(suite, name, js, py, expected_js, expected_py)
    for paths in (order, order[::-1]):  # one process, two runs: nothing the first run memoized leaks
        suite.run("--prompt-report", "report", "-p", "no:cacheprovider", paths=list(paths))
        outcomes = {row["case_id"]: row["outcome"] for row in suite.rows()}
        assert outcomes == dict.fromkeys(["one-1", "one-2", "two-1", "two-2"], "passed"), outcomes


def test_a_code_file_changed_between_two_runs_of_one_process_gives_its_new_result(suite: Suite) -> None:
    js, py, expected_js, expected_py = SUITES["one"]
    _import(suite, "one", js, py, expected_js, expected_py)
    suite.run("--prompt-report", "report", "-p", "no:cacheprovider", paths=["one"])
    assert [row["outcome"] for row in suite.rows()] == ["passed", "passed"]
    (suite.path / "one" / "t.js").write_text("module.exports = (output) => output;\n", encoding="utf-8")
    (suite.path / "one" / "t.py").write_text("def get_transform(output, context):\n    return output\n")
    suite.run("--prompt-report", "report", "-p", "no:cacheprovider", paths=["one"])
    assert [row["outcome"] for row in suite.rows()] == ["failed", "failed"]
