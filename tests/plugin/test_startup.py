"""Start-up: what a run imports. A pytest run without prompt cases loads none of the stages, and a
one-case run only the stages it uses (``benchmarks/bench_startup.py`` measures the time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


CASE = {"case_id": "c1", "input": "Can I return an opened item?", "slice": "s", "must_include": ["return"]}
#: Never needed by a run on the fake model with a format template and ``must_include``.
HEAVY = {"pydantic", "jinja2", "yaml", "rapidfuzz", "httpx", "pandas", "jsonschema", "asyncio"}


def _imported(folder: Path, *args: str, status: int = 0) -> set[str]:
    """The modules a ``pytest ARGS`` run in ``folder`` imported (its exit status must be ``status``)."""
    script = (
        "import json, sys, pytest\n"
        f"code = pytest.main({['-q', '-p', 'no:cacheprovider', '-p', 'no:thirdparty_example', *args]!r})\n"
        "print(json.dumps(sorted(sys.modules)))\n"
        "sys.exit(code)\n"
    )
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run([sys.executable, "-c", script], cwd=folder, capture_output=True, text=True, env=env)
    assert done.returncode == status, done.stdout[-2000:] + done.stderr[-2000:]
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


#: The dialects' plugin modules: registered with the built-ins, each loads its dialect only when asked.
DIALECT_PLUGINS = {
    "pytest_promptsuite.dialects",
    "pytest_promptsuite.dialects.nemo",
    "pytest_promptsuite.dialects.opencompass",
    "pytest_promptsuite.dialects.promptfoo",
}


def _tops(modules: set[str]) -> set[str]:
    return {name.split(".")[0] for name in modules}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert True\n", encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text(json.dumps(CASE) + "\n", encoding="utf-8")
    return tmp_path


def test_a_run_without_cases_loads_no_stage(folder: Path) -> None:
    modules = _imported(folder, "-p", "pytest_promptsuite.plugin", "test_plain.py")
    ours = {m for m in modules if m.startswith("pytest_promptsuite.")}
    stage_names = {"cases", "checks", "results", "report", "prompts", "dialects", "models", "items"}
    stage_modules = {
        "pytest_promptsuite.config.suite",
        "pytest_promptsuite.config.discovery",
        "pytest_promptsuite.run.session",
        "pytest_promptsuite.run.pipeline",
        "pytest_promptsuite.run.assembly",
        "pytest_promptsuite.run.prefetch",
    }
    stages = {m for m in ours - DIALECT_PLUGINS if m.split(".")[1] in stage_names or m in stage_modules}
    assert stages == set()
    assert _tops(modules) & HEAVY == set()


def test_a_one_case_run_loads_only_what_it_uses(folder: Path) -> None:
    modules = _imported(folder, "-p", "pytest_promptsuite.plugin", "--prompt-suite", "cases.jsonl")
    assert "pytest_promptsuite.run.session" in modules  # the run did load the stages
    assert _tops(modules) & HEAVY == set()
    unused = {
        "pytest_promptsuite.prompts.task_prompts",
        "pytest_promptsuite.prompts.files.jinja",
        "pytest_promptsuite.checks.jsonpath",
        "pytest_promptsuite.checks.structure",
        "pytest_promptsuite.checks.metric",
        "pytest_promptsuite.report.writer",
        "pytest_promptsuite.report.html",
        "pytest_promptsuite.importers",
    }
    assert modules & unused == set()
    # the default template engine is OpenCompass's; the other dialects load only their plugin module
    assert {
        m
        for m in modules
        if m.startswith(("pytest_promptsuite.dialects.nemo.", "pytest_promptsuite.dialects.promptfoo."))
    } == set()


def test_a_one_case_run_loads_no_batch_sequential_or_http_module(folder: Path) -> None:
    """Batch mode, ``--prompt-sequential`` and the HTTP client (aiohttp under httpx) load with the runs that use
    them, not with a one-case run on the fake model."""
    modules = _imported(folder, "-p", "pytest_promptsuite.plugin", "--prompt-suite", "cases.jsonl")
    assert "pytest_promptsuite.models.runner" in modules  # the run did load the runner
    assert (
        modules
        & {
            "pytest_promptsuite.models.batch",
            "pytest_promptsuite.models.batch.requests",
            "pytest_promptsuite.run.sequential_run",
            "pytest_promptsuite.results.eprocess",
            "pytest_promptsuite.models.openai",
            "pytest_promptsuite.models.http_transport",
        }
        == set()
    )
    assert _tops(modules) & {"aiohttp", "httpx_aiohttp", "multidict", "yarl"} == set()


def test_a_config_file_is_read_by_pydantic_and_a_run_without_one_never_loads_it(folder: Path) -> None:
    """The suite config's tables are validated by pydantic (``config/config_schema.py``), loaded with the
    first ``promptsuite.toml``; a run without a config imports neither, and neither run anything
    else heavy."""
    schema = {"pydantic", "pydantic_core", "pytest_promptsuite.config.config_schema"}
    plain = _imported(folder, "-p", "pytest_promptsuite.plugin", "--prompt-suite", "cases.jsonl")
    assert "pytest_promptsuite.config.suite" in plain and plain & schema == set()
    (folder / "promptsuite.toml").write_text(
        '[model]\nspec = "fake"\ntimeout_s = 30\n[template]\nprompt_template = "Q: {input}"\n'
        '[thresholds]\ndefault = 0.8\nslices = { s = 1.0 }\n[variants.v2]\nprompt_template = "Question: {input}"\n'
        "[variants.v2.model]\nmax_retries = 2\n[gate]\nalpha = 0.1\n",
        encoding="utf-8",
    )
    modules = _imported(folder, "-p", "pytest_promptsuite.plugin", "--prompt-suite", ".")
    assert schema <= modules
    assert _tops(modules) & HEAVY == {"pydantic"}


def test_what_a_suite_uses_loads_when_it_uses_it(folder: Path) -> None:
    """The other side of the lazy imports: a Jinja template and a report load their modules."""
    (folder / "promptsuite.toml").write_text(
        '[template]\ntemplate = "Q: {{ input }}"\nrenderer = "jinja"\n', encoding="utf-8"
    )
    case = {**CASE, "assert": [{"type": "is-json", "path": "$.a"}]}
    (folder / "cases.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    modules = _imported(
        folder, "-p", "pytest_promptsuite.plugin", "--prompt-suite", ".", "--prompt-report", "out", status=1
    )  # the output is no JSON: the case fails, and the run with it
    assert {
        "jinja2",
        "pytest_promptsuite.prompts.files.jinja",
        "pytest_promptsuite.checks.jsonpath",
        "pytest_promptsuite.checks.structure",
        "pytest_promptsuite.report.writer",
    } <= modules
    assert (folder / "out" / "summary.json").exists()
