"""One set of hooks everywhere: a conftest's renderer and Jinja filter work the same under pytest,
``promptsuite render`` and ``promptsuite validate``, and their absence fails all three the same
way (a task prompt is compiled before the run; a ``jinja`` template still fails per case, which
the validation issue turns into one collection error); and an endpoint case is rendered and
hashed once per attempt, prefetched or not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_promptsuite.cli.main import main
from tests.loopback import LoopbackServer


CONFTEST = """
import string


class Dollar:
    def render(self, template, row):
        return string.Template(template).substitute(row)


def pytest_promptsuite_make_renderer(name, params):
    if name == "dollar":
        return Dollar()


def pytest_promptsuite_make_jinja_filter(name):
    if name == "shout":
        return lambda value: str(value).upper()
"""

CONFIG = """
[suite]
cases = ["cases.jsonl"]

[variants.dollar]
template_file = "prompt.txt"
renderer = "dollar"

[variants.shout]
template = "{{ input | shout }}!"
renderer = "jinja"

[variants.task]
task_prompts = "prompts.yml"
task = "answer"
"""

PROMPTS = """
prompts:
  - task: answer
    content: "Task: {{ input | shout }}"
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> Path:
    pytester.makefile(".toml", promptsuite=CONFIG)
    pytester.makefile(".txt", prompt="Q: $input")
    pytester.makefile(".yml", prompts=PROMPTS)
    cases = [{"case_id": "a", "input": "hello", "slice": "s", "assert": [{"type": "icontains", "value": "hello"}]}]
    pytester.makefile(".jsonl", cases="\n".join(json.dumps(c) for c in cases))
    return pytester.path


def test_a_conftest_renderer_and_filter_work_under_pytest_render_and_validate(
    pytester: pytest.Pytester, suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makeconftest(CONFTEST)

    result = pytester.runpytest("--prompt-suite", "promptsuite.toml", "--prompt-report", "report")
    result.assert_outcomes(passed=3)
    rows = [json.loads(line) for line in (suite / "report" / "results.jsonl").read_text("utf-8").splitlines()]
    expected = {"dollar": "Q: hello", "shout": "HELLO!", "task": "Task: HELLO"}
    assert {row["variant"]: row["prompt"] for row in rows} == expected

    capsys.readouterr()
    assert main(["render", "--prompt-suite", "promptsuite.toml"]) == 0
    shown = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {s["variant"]: s["prompt"] for s in shown} == expected

    assert main(["validate", "promptsuite.toml"]) == 0
    assert capsys.readouterr().out == "ok: 1 cases in 1 slices (s)\n"


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ('template_file = "prompt.txt"\nrenderer = "dollar"', "unknown renderer 'dollar'"),
        ('task_prompts = "prompts.yml"\ntask = "answer"', "No filter named 'shout'"),
    ],
    ids=["renderer", "filter"],
)
def test_without_the_conftest_all_three_fail_alike(
    pytester: pytest.Pytester, suite: Path, capsys: pytest.CaptureFixture[str], template: str, message: str
) -> None:
    config = f'[suite]\ncases = ["cases.jsonl"]\n\n[template]\n{template}\n'
    (suite / "promptsuite.toml").write_text(config, encoding="utf-8")

    result = pytester.runpytest("--prompt-suite", "promptsuite.toml")
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error: nothing ran
    result.stdout.fnmatch_lines([f"*{message}*"])

    capsys.readouterr()
    assert main(["render", "--prompt-suite", "promptsuite.toml"]) == 1
    assert message in capsys.readouterr().err
    assert main(["validate", "promptsuite.toml"]) == 1
    assert message in capsys.readouterr().err


RENDER_COUNTER = """
import collections
import json
import sys

from pytest_promptsuite.prompts import core as prompt_module

RENDERS = collections.Counter()
HASHES = collections.Counter()
ORIGINAL = prompt_module.prompt_hash
PATCHED = []


class Counting:
    def render(self, template, row):
        RENDERS[row["input"]] += 1
        return template.replace("<input>", row["input"])


def pytest_promptsuite_make_renderer(name, params):
    if name == "counting":
        return Counting()


def _counting_hash(prompt):
    HASHES[json.dumps(prompt)] += 1
    return ORIGINAL(prompt)


def pytest_configure(config):
    # every module of the package that holds the hash function, wherever it imported it
    for name, module in list(sys.modules.items()):
        if name.startswith("pytest_promptsuite") and getattr(module, "prompt_hash", None) is ORIGINAL:
            module.prompt_hash = _counting_hash
            PATCHED.append(module)


def pytest_unconfigure(config):
    for module in PATCHED:
        module.prompt_hash = ORIGINAL
    with open("counts.json", "w") as fp:
        json.dump({"renders": RENDERS, "hashes": HASHES}, fp)
"""


def test_an_endpoint_case_is_rendered_and_hashed_once_per_attempt(
    pytester: pytest.Pytester, loopback: LoopbackServer
) -> None:
    loopback.knobs.latency_s = 0.05
    pytester.makeconftest(RENDER_COUNTER)
    pytester.makefile(
        ".toml",
        promptsuite=f"""
[model]
spec = "openai:loop-model"
base_url = "{loopback.base_url}"
max_retries = 2

[template]
template = "Say: <input>"
renderer = "counting"
""",
    )
    inputs = [f"case {i}" for i in range(20)] + ["retried [[500]]"]
    cases = [{"case_id": f"c-{i:02d}", "input": text, "slice": "s"} for i, text in enumerate(inputs)]
    pytester.makefile(".jsonl", cases="\n".join(json.dumps(c) for c in cases))

    result = pytester.runpytest_inprocess("--prompt-suite", "cases.jsonl", "-p", "no:randomly")

    result.assert_outcomes(passed=21)
    counts = json.loads((pytester.path / "counts.json").read_text(encoding="utf-8"))
    assert counts["renders"] == dict.fromkeys(inputs, 1)
    assert sorted(counts["hashes"].values()) == [1] * 21
    assert loopback.stats.requests == 22  # one call per case, plus the retry after the 500
