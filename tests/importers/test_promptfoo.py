"""``promptsuite import promptfoo``: the imported suite runs under pytest with no edits and gives
the same per-test verdicts as promptfoo on its echo provider; bad input is ``path:line``."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.checks.check_api import NO_JUDGE
from pytest_promptsuite.cli.main import main
from pytest_promptsuite.formats.tomlio import parse_toml
from tests.importers.promptfoo_run import import_config
from tests.importers.promptfoo_run import promptfoo_command
from tests.importers.promptfoo_run import run_imported
from tests.importers.promptfoo_run import run_promptfoo
from tests.loopback import LoopbackServer
from tests.suite import Suite


FULL = Path(__file__).parent / "fixtures" / "promptfoo" / "full"


_import = import_config


def _our_verdicts(suite: Suite, imported: Path) -> dict[tuple[int, int], bool]:
    verdicts = {}
    for row in run_imported(suite, imported):
        key = (int(row["case_id"].removeprefix("test-")) - 1, int((row["variant"] or "p1").removeprefix("p")) - 1)
        verdicts[key] = row["outcome"] == "passed"
    return verdicts


def test_the_imported_suite_gives_promptfoos_recorded_verdicts(tmp_path: Path, suite: Suite) -> None:
    status, imported = _import(tmp_path, FULL / "promptfooconfig.yaml", "--slice-key", "area")
    assert status == 0
    recorded = json.loads((FULL / "promptfoo-verdicts.json").read_text(encoding="utf-8"))["verdicts"]
    theirs = {(v["test"], v["prompt"]): v["pass"] for v in recorded}
    ours = _our_verdicts(suite, imported)
    assert len(theirs) == 30 and {k: ours.get(k) for k in theirs} == theirs
    assert sorted(set(theirs.values())) == [False, True]  # both verdicts occur


#: The imports of ``promptfoo_asserts.py`` as ``promptsuite import promptfoo`` wrote them before the dialects
#: moved (each form a landed version wrote); those suites run unchanged.
OLD_HEADS = {
    "runtime": (
        "from pytest_promptsuite.importers.promptfoo.runtime import javascript\n"
        "from pytest_promptsuite.importers.promptfoo.runtime import not_carried\n"
        "from pytest_promptsuite.importers.promptfoo.runtime import python_assert\n"
        "from pytest_promptsuite.importers.promptfoo.runtime import transformed\n"
        "from pytest_promptsuite.importers.promptfoo.runtime import Transform\n"
    ),
    "runtime-and-prompt-code": (
        "from pytest_promptsuite.importers.promptfoo.runtime import javascript\n"
        "from pytest_promptsuite.importers.promptfoo.runtime import not_carried\n"
        "from pytest_promptsuite.importers.promptfoo.runtime import python_assert\n"
        "from pytest_promptsuite.importers.promptfoo.runtime import transformed\n"
        "from pytest_promptsuite.prompts.files.promptfoo_code import Transform\n"
    ),
}


@pytest.mark.parametrize("head", OLD_HEADS)
def test_a_suite_written_by_an_earlier_import_still_runs(tmp_path: Path, suite: Suite, head: str) -> None:
    status, imported = _import(tmp_path, FULL / "promptfooconfig.yaml", "--slice-key", "area")
    assert status == 0
    module = imported / "promptfoo_asserts.py"
    source = module.read_text(encoding="utf-8")
    new_head = "".join(line + "\n" for line in source.splitlines() if line.startswith("from pytest_promptsuite."))
    assert new_head and "dialects.promptfoo" in new_head
    module.write_text(source.replace(new_head, OLD_HEADS[head]), encoding="utf-8")
    recorded = json.loads((FULL / "promptfoo-verdicts.json").read_text(encoding="utf-8"))["verdicts"]
    assert _our_verdicts(suite, imported) == {(v["test"], v["prompt"]): v["pass"] for v in recorded}


@pytest.mark.skipif(
    promptfoo_command() is None,
    reason=(
        "promptfoo is not installed (npm install promptfoo@0.123.1; set PROMPTFOO to its bin, or to "
        "'node PATH/dist/src/main.js' on Node 20, or put it on PATH): the recorded-verdicts test covers the same config"
    ),
)
def test_promptfoo_itself_agrees_on_every_verdict(tmp_path: Path, suite: Suite) -> None:
    results = run_promptfoo(FULL / "promptfooconfig.yaml", tmp_path)
    theirs = {(r["testIdx"], r["promptIdx"]): r["success"] for r in results}
    status, imported = _import(tmp_path, FULL / "promptfooconfig.yaml", "--slice-key", "area")
    assert status == 0
    ours = _our_verdicts(suite, imported)
    assert len(theirs) == 30 and {k: ours.get(k) for k in theirs} == theirs


TRANSFORMS = Path(__file__).parent / "fixtures" / "promptfoo" / "transforms"


def _verdicts_and_asserts(rows: list[dict[str, Any]]) -> dict[int, tuple[bool, list[bool]]]:
    return {
        int(r["case_id"].removeprefix("test-")) - 1: (r["outcome"] == "passed", [c["passed"] for c in r["checks"]])
        for r in rows
    }


def test_transforms_give_promptfoos_recorded_verdicts(tmp_path: Path, suite: Suite) -> None:
    # defaultTest's transform, a test's own over it, an assert's on top (JavaScript inline and file://,
    # Python file://), an object from a transform reaching a javascript assert and contains as JSON
    status, imported = _import(tmp_path, TRANSFORMS / "promptfooconfig.yaml")
    assert status == 0
    recorded = json.loads((TRANSFORMS / "promptfoo-verdicts.json").read_text(encoding="utf-8"))["verdicts"]
    ours = _verdicts_and_asserts(run_imported(suite, imported))
    assert len(ours) == len(recorded) == 5
    for verdict in recorded:  # promptfoo's per-assert verdicts where it has them (an error has none)
        passed, asserts = ours[verdict["test"]]
        assert (passed, verdict["asserts"] or asserts) == (verdict["pass"], asserts), verdict
    thrown = suite.rows()[4]["checks"][1]["message"]
    assert (
        f"transform output.nope.deeper ({TRANSFORMS / 'promptfooconfig.yaml'}:27: assert[1]): the JavaScript raised"
        in (thrown)
    )
    assert "Cannot read properties of undefined" in thrown


@pytest.mark.skipif(promptfoo_command() is None, reason="promptfoo is not installed: the recorded verdicts cover it")
def test_promptfoo_itself_agrees_on_the_transforms(tmp_path: Path, suite: Suite) -> None:
    results = run_promptfoo(TRANSFORMS / "promptfooconfig.yaml", tmp_path)
    theirs = {r["testIdx"]: r["success"] for r in results}
    status, imported = _import(tmp_path, TRANSFORMS / "promptfooconfig.yaml")
    assert status == 0
    assert {k: v[0] for k, v in _verdicts_and_asserts(run_imported(suite, imported)).items()} == theirs


TRANSFORM_VARS = Path(__file__).parent / "fixtures" / "promptfoo" / "transform-vars"


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
def test_transform_vars_give_promptfoos_recorded_verdicts(tmp_path: Path, suite: Suite) -> None:
    # defaultTest's inline transformVars, a test's file:// one over it (JavaScript, Python), the vars it
    # makes read by the prompt, by an assert's value and by a javascript assert's context, a composed var
    status, imported = _import(tmp_path, TRANSFORM_VARS / "promptfooconfig.yaml")
    assert status == 0
    recorded = json.loads((TRANSFORM_VARS / "promptfoo-verdicts.json").read_text(encoding="utf-8"))["verdicts"]
    rows = run_imported(suite, imported)
    ours = {k: (passed, sorted(asserts)) for k, (passed, asserts) in _verdicts_and_asserts(rows).items()}
    assert len(ours) == len(recorded) == 4
    assert {v["test"]: (v["pass"], sorted(v["asserts"])) for v in recorded} == ours
    assert [r["output"] for r in rows] == ["Hello ADA!", "Hello grace?", "Hello linus (5)", "Hello KEN!"]


@pytest.mark.skipif(promptfoo_command() is None, reason="promptfoo is not installed: the recorded verdicts cover it")
def test_promptfoo_itself_agrees_on_transform_vars(tmp_path: Path, suite: Suite) -> None:
    results = run_promptfoo(TRANSFORM_VARS / "promptfooconfig.yaml", tmp_path)
    theirs = {r["testIdx"]: r["success"] for r in results}
    status, imported = _import(tmp_path, TRANSFORM_VARS / "promptfooconfig.yaml")
    assert status == 0
    assert {k: v[0] for k, v in _verdicts_and_asserts(run_imported(suite, imported)).items()} == theirs


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
def test_a_failing_transform_vars_stops_collection_naming_its_case_and_transform(
    tmp_path: Path, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    # a transform that throws or returns no object: promptfoo stops the eval; we stop collection, every case named
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "prompts: ['Say {{ x }}']\nproviders: [echo]\ntests:\n"
        "  - vars: {x: hi}\n    options: {transformVars: vars.nope.deeper}\n    assert: [{type: contains, value: hi}]\n"
        "  - vars: {x: hi}\n    options: {transformVars: '[1, 2]'}\n    assert: [{type: contains, value: hi}]\n"
        "  - vars: {x: hi}\n    assert: [{type: contains, value: hi}]\n",
        encoding="utf-8",
    )
    status, imported = _import(tmp_path, config)
    assert status == 0
    shutil.copytree(imported, pytester.path / "suite")
    result = pytester.runpytest("--prompt-suite", "suite", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    out = result.stdout.str()
    assert (
        f"suite/cases.jsonl:1: test-1: prompts/prompt-1.txt: transformVars: transform vars.nope.deeper "
        f"({config}:4: options.transformVars): the JavaScript raised: TypeError: Cannot read properties of undefined"
    ) in out
    assert (
        f"suite/cases.jsonl:2: test-2: prompts/prompt-1.txt: transformVars: transform [1, 2] "
        f"({config}:7: options.transformVars) returned list, not an object of vars"
    ) in out
    assert "cases.jsonl:3" not in out


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
def test_transform_vars_on_array_vars_runs_on_each_combination_and_says_so(
    tmp_path: Path, suite: Suite, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "prompts: ['Say {{ x }}{{ y }}']\nproviders: [echo]\ntests:\n"
        "  - vars: {x: [a, b]}\n    options: {transformVars: '({y: vars.x + 1})'}\n"
        "    assert: [{type: contains, value: '{{ y }}'}]\n",
        encoding="utf-8",
    )
    status, imported = _import(tmp_path, config)
    assert status == 0
    printed = capsys.readouterr().out
    assert f"not carried over: {config}:4: transformVars runs on each of the 2 combinations" in printed
    rows = run_imported(suite, imported)  # promptfoo: once, on ['a', 'b'] (y = 'a,b1'); here once per value
    assert [(r["output"], r["outcome"]) for r in rows] == [("Say aa1", "passed"), ("Say bb1", "passed")]


def test_an_openai_providers_tools_reach_the_request_and_the_checks(
    tmp_path: Path, suite: Suite, loopback: LoopbackServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # promptfoo's is-valid-openai-tools-call reads the provider's tools: so do ours, offered with the request
    (tmp_path / "tools.yaml").write_text(
        "- type: function\n  function:\n    name: lookup_order\n"
        "    parameters: {type: object, properties: {order_id: {type: string}}, required: [order_id]}\n",
        encoding="utf-8",
    )
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "prompts: ['Where is order {{ id }}?']\n"
        f"providers:\n  - id: openai:chat:loop-model\n    config: {{apiBaseUrl: '{loopback.base_url}', "
        "tools: file://tools.yaml, tool_choice: auto, response_format: {type: text}}\n"
        "tests:\n"
        "  - vars: {id: A1234}\n    assert: [{type: is-valid-openai-tools-call}]\n"
        "  - vars: {id: BROKEN}\n    assert: [{type: is-valid-openai-tools-call}]\n",
        encoding="utf-8",
    )
    loopback.reset(
        tool_script=[
            ("A1234", [{"name": "lookup_order", "arguments": {"order_id": "A1234"}}]),
            ("BROKEN", [{"name": "lookup_order", "arguments": {"id": 7}}]),
        ]
    )
    status, imported = _import(tmp_path, config)
    assert status == 0
    assert "not carried over" not in capsys.readouterr().out
    rows = run_imported(suite, imported)
    assert [r["outcome"] for r in rows] == ["passed", "failed"]
    assert "arguments do not fit its parameters" in rows[1]["checks"][0]["message"]
    body = loopback.stats.log[0]["body"]
    assert body["tools"][0]["function"]["name"] == "lookup_order"
    assert (body["tool_choice"], body["response_format"]) == ("auto", {"type": "text"})


def test_an_openai_providers_legacy_functions_are_offered_as_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "prompts: ['Hi']\nproviders:\n  - id: openai:gpt-4o-mini\n"
        "    config: {functions: [{name: f, parameters: {type: object}}]}\ntests: [{vars: {}}]\n",
        encoding="utf-8",
    )
    status, imported = _import(tmp_path, config)
    assert status == 0
    template = parse_toml((imported / "promptsuite.toml").read_bytes(), "promptsuite.toml")[0]["template"]
    assert template["tools"] == [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    assert f"{config}:3: the provider's functions are offered as tools" in capsys.readouterr().out


def test_a_rubric_without_a_judge_is_reported_by_the_import_and_stops_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "prompts: ['Say {{ q }}']\nproviders: [echo]\ntests:\n"
        "  - vars: {q: hi}\n    assert: [{type: llm-rubric, value: is polite}]\n"
        "  - vars: {q: there}\n    assert: [{type: contains, value: there}]\n"
        "  - vars: {q: x}\n    assert: [{type: assert-set, assert: [{type: not-llm-rubric, value: rude}]}]\n",
        encoding="utf-8",
    )
    status, imported = _import(tmp_path, config)
    assert status == 0
    assert (
        "llm-rubric in 2 cases needs a judge: add [models.judge] to promptsuite.toml or pass --prompt-judge SPEC"
    ) in capsys.readouterr().out
    assert main(["validate", str(imported)]) == 1
    errors = capsys.readouterr().err.splitlines()
    assert errors[0].endswith("cases.jsonl:1: case 'test-1': assert[0] (llm-rubric): " + NO_JUDGE), errors
    assert errors[1].endswith("cases.jsonl:3: case 'test-3': assert[0].assert[0] (not-llm-rubric): " + NO_JUDGE)
    assert main(["validate", "--prompt-judge", "fake", str(imported)]) == 0


def test_a_test_without_an_input_var_renders_input_empty_as_promptfoo_does(tmp_path: Path, suite: Suite) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "prompts: ['Q: [{{ input }}] [{{ question }}] {{ x }}']\nproviders: [echo]\ntests:\n"
        "  - {description: a greeting, vars: {x: hi}}\n"
        "  - {description: given, vars: {x: yo, input: it}}\n"
        "  - vars: {x: z, input: 0}\n",
        encoding="utf-8",
    )
    status, imported = _import(tmp_path, config)
    assert status == 0
    rows = run_imported(suite, imported)  # Nunjucks renders a var no test sets as ""; promptfoo has no input else
    assert [(r["case_id"], r["output"]) for r in rows] == [
        ("test-1", "Q: [] [] hi"),
        ("test-2", "Q: [it] [] yo"),
        ("test-3", "Q: [0] [] z"),
    ]


def test_promptfoos_max_concurrency_bounds_every_model_of_the_suite(
    tmp_path: Path, suite: Suite, loopback: LoopbackServer, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    provider = f"{{id: 'openai:chat:m', config: {{apiBaseUrl: '{loopback.base_url}'}}, label: LABEL}}"
    config.write_text(
        "prompts: ['Say {{ x }}']\n"
        f"providers: [{provider.replace('LABEL', 'a')}, {provider.replace('LABEL', 'b')}]\n"
        "evaluateOptions: {maxConcurrency: 2, repeat: 1}\n"
        "tests:\n"
        + "".join(f"  - {{vars: {{x: '{i}'}}, assert: [{{type: contains, value: '{i}'}}]}}\n" for i in range(6)),
        encoding="utf-8",
    )
    status, imported = _import(tmp_path, config)
    assert status == 0
    printed = capsys.readouterr().out
    assert "concurrency = 2, from evaluateOptions.maxConcurrency" in printed
    assert f"{config}:3: evaluateOptions not carried over: repeat" in printed
    written = parse_toml((imported / "promptsuite.toml").read_bytes(), "promptsuite.toml")[0]
    assert [written["variants"][name]["model"]["concurrency"] for name in ("p1-a", "p1-b")] == [2, 2]
    loopback.reset(latency_s=0.05, max_concurrent=4)  # a 4-slot server: a fifth call in flight gets a 429
    rows = run_imported(suite, imported)
    assert [r["outcome"] for r in rows] == ["passed"] * 12
    assert loopback.stats.max_in_flight <= 4  # two providers, each bounded at 2: never past the slots


def test_without_max_concurrency_the_import_says_what_the_suite_uses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text("prompts: ['Hi']\nproviders: [echo]\ntests: [{vars: {}}]\n", encoding="utf-8")
    status, imported = _import(tmp_path, config)
    assert status == 0
    assert (
        "concurrency: ours, 8 calls in flight (auto for an https:// OpenAI endpoint); the config sets no "
        "evaluateOptions.maxConcurrency, so promptfoo runs 4: set [model] concurrency = 4 to match it"
    ) in capsys.readouterr().out
    assert "concurrency" not in parse_toml((imported / "promptsuite.toml").read_bytes(), "promptsuite.toml")[0]["model"]
    config.write_text(
        "prompts: ['Hi']\nproviders: [echo]\nevaluateOptions:\n  maxConcurrency: many\ntests: [{vars: {}}]\n"
    )
    assert _import(tmp_path / "again", config)[0] == 1
    assert f"{config}:4: maxConcurrency is a whole number of calls, at least 1, not 'many'" in capsys.readouterr().err
    config.write_text("prompts: ['Hi']\nproviders: [echo]\nevaluateOptions: [4]\ntests: [{vars: {}}]\n")
    assert _import(tmp_path / "third", config)[0] == 1
    assert f"{config}:3: evaluateOptions is a mapping (maxConcurrency, repeat, ...)" in capsys.readouterr().err


def _run_without_node(
    tmp_path: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tests: str
) -> tuple[Path, pytest.RunResult]:
    """Import a one-test config on echo (``tests``: its YAML after ``tests:``), then run it with no Node.js on PATH."""
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text("prompts: ['Say {{ x }}']\nproviders: [echo]\ntests:\n" + tests, encoding="utf-8")
    status, suite = _import(tmp_path, config)
    assert status == 0
    shutil.copytree(suite, pytester.path / "suite")
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    return config, pytester.runpytest("--prompt-suite", "suite", "-p", "no:cacheprovider")


def test_a_transform_without_node_names_it_and_its_test(
    tmp_path: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, result = _run_without_node(
        tmp_path,
        pytester,
        monkeypatch,
        "  - vars: {x: hi}\n    options: {transform: output.toUpperCase()}\n"
        "    assert: [{type: contains, value: HI}]\n",
    )
    result.assert_outcomes(failed=1)
    assert (
        f"transform output.toUpperCase() ({config}:4: assert[0]): needs Node.js, and 'node' is not on PATH"
        in result.stdout.str()
    )


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
def test_a_chat_prompt_renders_as_promptfoo_renders_it(tmp_path: Path, suite: Suite) -> None:
    # each message under Nunjucks' rules (undefined empty, true as JavaScript prints it, dump), transformVars too
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "prompts:\n  - '["
        '{"role": "system", "content": "Be {{ tone }}. {{ flag }}"}, '
        '{"role": "user", "content": "Say {{ x | upper }} {{ obj.k }} {{ data | dump }} {{ y }}"}'
        "]'\nproviders: [echo]\n"
        "defaultTest:\n  options: {transformVars: '({ y: vars.x + \"!\" })'}\n"
        "tests:\n  - vars: {x: hi, flag: true, obj: {k: 1.0}, data: {a: [1, 2]}}\n"
        "    assert: [{type: contains, value: 'Say HI 1'}, {type: contains, value: 'Be . true'}]\n",
        encoding="utf-8",
    )
    status, imported = _import(tmp_path, config)
    assert status == 0
    rows = run_imported(suite, imported)
    promptfoos = (  # promptfoo 0.123.1's echo output for this config, and its verdict: passed
        '[\n  {\n    "role": "system",\n    "content": "Be . true"\n  },\n'
        '  {\n    "role": "user",\n    "content": "Say HI 1 {\\"a\\":[1,2]} hi!"\n  }\n]'
    )
    assert [(r["output"], r["outcome"]) for r in rows] == [(promptfoos, "passed")]


def test_a_javascript_transform_vars_without_node_stops_collection_naming_it(
    tmp_path: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, result = _run_without_node(
        tmp_path,
        pytester,
        monkeypatch,
        "  - vars: {x: hi}\n    options: {transformVars: '({x: vars.x + 1})'}\n"
        "    assert: [{type: contains, value: hi1}]\n",
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert (
        f"suite/cases.jsonl:1: test-1: prompts/prompt-1.txt: transformVars: transform ({{x: vars.x + 1}}) "
        f"({config}:4: options.transformVars): needs Node.js, and 'node' is not on PATH"
    ) in result.stdout.str()


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
def test_nunjucks_filters_render_as_promptfoo_renders_them(tmp_path: Path, suite: Suite) -> None:
    (tmp_path / "filters").mkdir()
    (tmp_path / "filters" / "allcaps.js").write_text("module.exports = (s) => String(s).toUpperCase();\n")
    (tmp_path / "filters" / "wrap.js").write_text("module.exports = (s, a, b) => a + s + b;\n")
    (tmp_path / "filters" / "double.js").write_text("module.exports = { default: (n) => Number(n) * 2 };\n")
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        'prompts: [\'{{ x | allcaps }} and {{ x | wrap("[", "]") }} {{ n | double }}\']\n'
        "providers: [echo]\n"
        "nunjucksFilters: {allcaps: ./filters/allcaps.js, wrap: filters/wrap.js, double: filters/double.js}\n"
        "tests:\n"
        "  - vars: {x: hi, n: 2}\n    assert: [{type: equals, value: 'HI and [hi] 4'}]\n"
        "  - vars: {x: yo, n: 5}\n    assert: [{type: contains, value: 'YO and [yo] 10'}]\n",
        encoding="utf-8",
    )
    status, imported = _import(tmp_path, config)
    assert status == 0
    rows = run_imported(suite, imported)  # promptfoo 0.123.1 on echo: 'HI and [hi] 4', 'YO and [yo] 10', both pass
    assert [(r["output"], r["outcome"]) for r in rows] == [("HI and [hi] 4", "passed"), ("YO and [yo] 10", "passed")]


def test_function_and_tools_call_checks_fail_on_echo_as_in_promptfoo(tmp_path: Path, suite: Suite) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "prompts: ['Call lookup_order for {{ id }}']\nproviders: [echo]\ntests:\n"
        "  - vars: {id: A1}\n    assert: [{type: is-valid-openai-function-call}]\n"
        "  - vars: {id: A1}\n    assert: [{type: is-valid-openai-tools-call}]\n"
        "  - vars: {id: A1}\n    assert: [{type: not-is-valid-openai-function-call}]\n",  # promptfoo ignores not-
        encoding="utf-8",
    )
    status, imported = _import(tmp_path, config)
    assert status == 0
    rows = run_imported(suite, imported)  # promptfoo 0.123.1 on echo: all three fail (no call to check)
    assert [(r["outcome"], r["checks"][0]["name"]) for r in rows] == [
        ("failed", "is-valid-openai-function-call"),
        ("failed", "is-valid-openai-tools-call"),
        ("failed", "is-valid-openai-function-call"),
    ]
    assert all("was not carried over" not in r["checks"][0]["message"] for r in rows)


def test_what_is_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, suite = _import(tmp_path, FULL / "promptfooconfig.yaml", "--slice-key", "area")
    assert status == 0
    config = parse_toml((suite / "promptsuite.toml").read_bytes(), "promptsuite.toml")[0]
    assert config["model"] == {"spec": "echo"}
    assert config["variants"]["p3"] == {"task_prompts": "prompts.yml", "task": "prompt-3", "semantics": "promptfoo"}
    assert config["variants"]["p2"] == {"template_file": "prompts/prompt-2.txt", "semantics": "promptfoo"}
    assert (suite / "prompts" / "prompt-2.txt").read_text(encoding="utf-8") == (
        "You are a support agent{% if team %} of the {{ team | upper }} team{% endif %}.\n"
        "Customer {{ name }} asks: {{ question }}"  # trimmed, as promptfoo reads a .txt prompt
    )
    cases = [json.loads(x) for x in (suite / "cases.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [c["slice"] for c in cases] == ["refunds", *["billing"] * 6, "shipping", "accounts", "accounts"]
    assert cases[0]["tags"] == ["area=refunds"] and cases[0]["assert"][0] == {"type": "not-contains", "value": "sk-"}
    assert cases[1]["assert"][-1] == {"type": "contains", "value": "Bob is a VIP"}  # {{ name }} filled
    assert cases[6]["vars"]["question"] == "My order never arrived."  # a file:// var, trimmed
    assert (suite / "asserts.js").is_file() and (suite / "asserts.py").is_file()


def test_providers_and_what_cannot_be_carried_over(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "prompts: ['Say {{ x }}']\n"
        "providers:\n"
        "  - id: openai:chat:gpt-4o-mini\n"
        "    config: {temperature: 0, max_tokens: 64, apiBaseUrl: 'http://localhost:8000/v1', frequency_penalty: 1}\n"
        "  - anthropic:messages:claude-3-5-sonnet\n"
        "tests:\n"
        "  - vars: {x: hi}\n"
        "    assert:\n"
        "      - type: factuality\n"
        "        value: hi\n"
        "      - type: contains\n"
        "        value: hi\n",
        encoding="utf-8",
    )
    status, suite = _import(tmp_path, config)
    printed = capsys.readouterr().out
    assert status == 0
    written = parse_toml((suite / "promptsuite.toml").read_bytes(), "promptsuite.toml")[0]
    assert written["model"] == {
        "spec": "openai:gpt-4o-mini",
        "endpoint": "chat",
        "base_url": "http://localhost:8000/v1",
        "params": {"temperature": 0, "max_tokens": 64},
    }
    assert f"{config}:5: provider anthropic:messages:claude-3-5-sonnet is not supported" in printed
    assert "settings not carried over: frequency_penalty" in printed
    assert f"not carried over: {config}:7: assert[0]: factuality" in printed


def test_javascript_without_node_names_the_check(
    tmp_path: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, result = _run_without_node(
        tmp_path,
        pytester,
        monkeypatch,
        "  - vars: {x: hi}\n    assert:\n      - type: javascript\n        value: output.length > 0\n",
    )
    result.assert_outcomes(failed=1)
    assert f"javascript assert ({config}:4: assert[0]): needs Node.js, and 'node' is not on PATH" in result.stdout.str()


@pytest.mark.parametrize(
    ("text", "files", "message"),
    [
        ("prompts: ['a'\n", {}, ":2: invalid YAML"),
        ("prompts: [a]\nprovider: [echo]\ntests: [{vars: {}}]\n", {}, ":2: unknown key 'provider'"),
        ("prompts: [file://../secret.txt]\ntests: [{vars: {}}]\n", {}, ":1: file://../secret.txt lies outside"),
        ("prompts: [a]\ntests:\n  - vars: {}\n    assert: [{value: x}]\n", {}, ":3: assert[0]: an assert is an object"),
        (  # promptfoo throws on it too (an unknown __ column is a var, as promptfoo reads it)
            "prompts: [a]\ntests: [file://t.csv]\n",
            {"t.csv": "x,__expected,__config:__expected0:threshold\n1,2,3\n"},
            "t.csv:2: __config:__expected0:threshold: the assert is __expected or __expected<N>",
        ),
        (
            "prompts: [file://p.json]\ntests: [{vars: {}}]\n",
            {"p.json": '[\n{"role": "user",}\n]'},
            "p.json:2: invalid JSON",
        ),
        (  # promptfoo 0.123.1 reads a folder as one empty test
            "prompts: [a]\ntests: file://cases/\n",
            {"cases/a.yaml": "- vars: {}\n"},
            ":2: file://cases is a folder: name its files with a glob",
        ),
    ],
)
def test_bad_input_is_path_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, files: dict[str, str], message: str
) -> None:
    folder = tmp_path / "cfg"
    folder.mkdir()
    (tmp_path / "secret.txt").write_text("sk-secret", encoding="utf-8")
    for name, content in files.items():
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_text(content, encoding="utf-8")
    config = folder / "promptfooconfig.yaml"
    config.write_text(text, encoding="utf-8")
    status, suite = _import(tmp_path, config)
    err = capsys.readouterr().err
    assert status == 1
    assert message in err and err.startswith(str(folder))
    assert not suite.exists()


def test_a_key_in_the_config_is_never_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = "sk-import-test-KEY-9876543210"
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        f"prompts: ['Use {key} for {{{{ x }}}}']\n"
        f"providers:\n  - id: openai:gpt-4o-mini\n    config: {{apiKey: {key}}}\n"
        "tests:\n  - vars: {x: hi}\n",
        encoding="utf-8",
    )
    status, suite = _import(tmp_path, config)
    printed = capsys.readouterr().out
    assert status == 0 and "apiKey" in printed and key not in printed
    written = [p.read_text(encoding="utf-8") for p in suite.rglob("*") if p.is_file()]
    assert len(written) == 3 and not any(key in text for text in written)
    assert "Use *** for {{ x }}" in (suite / "prompts" / "prompt-1.txt").read_text(encoding="utf-8")


def test_an_uncarried_assert_never_turns_into_a_passing_case(
    tmp_path: Path, suite: Suite, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "prompts: ['Say {{ x }}']\n"
        "providers: [echo]\n"
        "tests:\n"
        "  - vars: {x: hi}\n"  # every assert dropped: promptfoo's verdict cannot be known
        "    assert: [{type: factuality, value: hi}]\n"
        "  - vars: {x: hi}\n"  # the carried one passes, the dropped one decides
        "    assert: [{type: contains, value: hi}, {type: g-eval, value: hi}]\n"
        "  - vars: {x: hi}\n"  # an assert whose contextTransform is not carried
        "    assert: [{type: contains, value: hi, contextTransform: output.toUpperCase()}]\n"
        "  - vars: {x: hi}\n"  # transformVars is carried ('Say 1' passes, as in promptfoo); provider is listed
        "    options: {transformVars: '({x: 1})', provider: openai:gpt-4o}\n"
        "    assert: [{type: contains, value: Say}]\n"
        "  - vars: {x: hi}\n"  # carried in full: it passes
        "    assert: [{type: contains, value: hi}]\n",
        encoding="utf-8",
    )
    status, imported = _import(tmp_path, config)
    printed = capsys.readouterr().out
    assert status == 0
    assert f"not carried over: {config}:4: assert[0]: factuality" in printed
    assert f"not carried over: {config}:6: assert[1]: g-eval" in printed
    assert f"not carried over: {config}:8: assert[0]: contains (its contextTransform)" in printed
    assert f"not carried over: {config}:10: options (provider)" in printed
    outcomes = {k: v for k, v in sorted(_our_verdicts(suite, imported).items())}
    assert outcomes == {(0, 0): False, (1, 0): False, (2, 0): False, (3, 0): True, (4, 0): True}
    failed = [row for row in suite.rows() if row["outcome"] != "passed"]
    assert all(any("was not carried over by the import" in c["message"] for c in row["checks"]) for row in failed)


def test_the_tests_embedding_provider_becomes_models_embedding(
    tmp_path: Path, suite: Suite, loopback: LoopbackServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """``defaultTest.options.provider.embedding`` (promptfoo's ``openai:embedding:MODEL`` with its
    ``apiBaseUrl``) is the suite's ``[models.embedding]``: the imported ``similar`` runs on it; the text
    grader beside it, and a test's other embedding model, are listed as not carried over."""
    loopback.knobs.vectors = {"Say refund": [1.0, 0.0], "refund": [1.0, 0.1], "weather": [0.0, 1.0]}
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "prompts: ['Say {{ x }}']\n"
        "providers: [echo]\n"
        "defaultTest:\n"
        "  options:\n"
        "    provider:\n"
        "      text: openai:gpt-4o-mini\n"
        f"      embedding: {{id: 'openai:embedding:emb-model', config: {{apiBaseUrl: '{loopback.base_url}'}}}}\n"
        "tests:\n"
        "  - vars: {x: refund}\n"
        "    assert: [{type: similar, value: refund, threshold: 0.9}]\n"
        "  - vars: {x: refund}\n"
        "    assert: [{type: similar, value: weather, threshold: 0.9}]\n"
        "  - vars: {x: refund}\n"
        "    options: {provider: 'openai:embeddings:other-model'}\n"
        "    assert: [{type: contains, value: refund}]\n",
        encoding="utf-8",
    )
    status, imported = _import(tmp_path, config)
    printed = capsys.readouterr().out
    assert status == 0
    written = parse_toml((imported / "promptsuite.toml").read_bytes(), "promptsuite.toml")[0]
    table = written["models"]["embedding"]
    assert table == {"spec": "openai:emb-model", "base_url": loopback.base_url}
    assert f"not carried over: {config}:9: options (provider.text)" in printed
    assert f"not carried over: {config}:13: options (provider (another embedding model than the first test's))" in (
        printed
    )
    assert _our_verdicts(suite, imported) == {(0, 0): True, (1, 0): False, (2, 0): True}
    assert {(e["path"], e["body"]["model"]) for e in loopback.stats.log} == {("/v1/embeddings", "emb-model")}
    assert len(loopback.stats.log) == 2
