"""One set of hooks everywhere: a conftest's renderer and Jinja filter work the same under pytest,
``promptsuite render`` and ``promptsuite validate``, and their absence fails all three the same
way (a task prompt is compiled before the run; a ``jinja`` template still fails per case, which
the validation issue turns into one collection error); and an endpoint case is rendered and
hashed once per attempt, prefetched or not."""

from __future__ import annotations

import json

import pytest

from pytest_promptsuite.cli.main import main
from tests.loopback import LoopbackServer
from tests.suite import Suite


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

CONFIG = """\
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

PROMPTS = """\
prompts:
  - task: answer
    content: "Task: {{ input | shout }}"
"""


@pytest.fixture
def three_variants(suite: Suite) -> Suite:
    """A suite of one case and three variants: a ``dollar`` renderer, a ``shout`` filter, a task prompt."""
    suite.config(CONFIG)
    suite.write("prompt.txt", "Q: $input")
    suite.write("prompts.yml", PROMPTS)
    suite.cases([{"case_id": "a", "input": "hello", "slice": "s", "assert": [{"type": "icontains", "value": "hello"}]}])
    return suite


def test_a_conftest_renderer_and_filter_work_under_pytest_render_and_validate(
    three_variants: Suite, capsys: pytest.CaptureFixture[str]
) -> None:
    three_variants.pytester.makeconftest(CONFTEST)

    result = three_variants.run("--prompt-report", "report", paths=["promptsuite.toml"])
    result.assert_outcomes(passed=3)
    rows = three_variants.rows()
    expected = {"dollar": "Q: hello", "shout": "HELLO!", "task": "Task: HELLO"}
    assert {row["variant"]: row["prompt"] for row in rows} == expected

    capsys.readouterr()
    assert main(["render", "--prompt-suite", "promptsuite.toml"]) == 0
    shown = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {s["variant"]: s["prompt"] for s in shown} == expected

    assert main(["validate", "promptsuite.toml"]) == 0
    assert capsys.readouterr().out == "ok: 1 cases in 1 slices (s), 3 items (3 variants x 1 repeat)\n"


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ('template_file = "prompt.txt"\nrenderer = "dollar"', "unknown renderer 'dollar'"),
        ('task_prompts = "prompts.yml"\ntask = "answer"', "No filter named 'shout'"),
    ],
    ids=["renderer", "filter"],
)
def test_without_the_conftest_all_three_fail_alike(
    three_variants: Suite, capsys: pytest.CaptureFixture[str], template: str, message: str
) -> None:
    three_variants.config(f'[suite]\ncases = ["cases.jsonl"]\n\n[template]\n{template}\n')

    result = three_variants.run(paths=["promptsuite.toml"])
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


def test_an_endpoint_case_is_rendered_to_check_and_to_send_and_hashed_once_per_attempt(
    suite: Suite, loopback: LoopbackServer
) -> None:
    loopback.knobs.latency_s = 0.05
    suite.pytester.makeconftest(RENDER_COUNTER)
    suite.config(
        {"model": loopback.model(max_retries=2), "template": {"template": "Say: <input>", "renderer": "counting"}}
    )
    inputs = [f"case {i}" for i in range(20)] + ["retried [[500]]"]
    suite.cases({"case_id": f"c-{i:02d}", "input": text, "slice": "s"} for i, text in enumerate(inputs))

    result = suite.pytester.runpytest_inprocess("--prompt-suite", "cases.jsonl", "-p", "no:randomly")

    result.assert_outcomes(passed=21)
    counts = json.loads((suite.path / "counts.json").read_text(encoding="utf-8"))
    assert counts["renders"] == dict.fromkeys(inputs, 2)  # once checked at collection, once when it runs
    assert sorted(counts["hashes"].values()) == [1] * 21
    assert loopback.stats.requests == 22  # one call per case, plus the retry after the 500
