"""The reference pages, generated from the code at build time (a mkdocs hook), so they cannot drift from it.

Each ``*_page`` function returns one page's Markdown; tests/test_reference_docs.py compares them with the
code. mkdocs is imported only by :func:`on_files`: the page functions run without it.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from typing import NamedTuple


ROOT = Path(__file__).resolve().parents[1]
QUICK_START = "example_suites/customer_support"


def _cell(text: Any) -> str:
    """Return ``text`` fit for one table cell (pipes escaped, one line)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _code(text: Any) -> str:
    return f"`{text}`" if "`" not in str(text) else f"`` {text} ``"


def _plain(docstring: str | None) -> str:
    """Return a docstring's first paragraph in Markdown (``x`` as `x`)."""
    first = (docstring or "").strip().split("\n\n")[0]
    return " ".join(first.split()).replace("``", "`")


# -- options ---------------------------------------------------------------------------------------


def options_page() -> str:
    """List every ``--prompt-*`` option from the option table, in ``pytest --help``'s order."""
    from pytest_promptsuite.config.options import OPTIONS

    lines = [
        "# pytest options",
        "",
        "Every `--prompt-*` option, in the order `pytest --help` lists them (group `promptsuite`). This page is",
        "generated from the option table, `pytest_promptsuite/config/options.py`.",
        "",
        "| option | default | meaning |",
        "|---|---|---|",
    ]
    for option in OPTIONS:
        flag = option.flag + (f" {option.metavar}" if option.metavar else "")
        default = option.default
        shown = "—" if default in (None, [], False) else _code(default)
        repeat = " (repeatable)" if option.action == "append" else ""
        lines.append(f"| `{flag}`{repeat} | {shown} | {_cell(option.help)} |")
    lines += [
        "",
        "`promptsuite validate` and `promptsuite render` take `--prompt-config`, `--prompt-model`, `--prompt-judge`,",
        "`--prompt-variant` and `--prompt-base-url` as pytest does (`validate` also `--prompt-repeat`, for its",
        "count of items); `promptsuite diff` takes `--prompt-alpha`,",
        "`--prompt-max-regression` and `--prompt-baseline-variant` (see [the CLI](cli.md)).",
        "",
    ]
    return "\n".join(lines)


# -- the suite config ------------------------------------------------------------------------------


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _current_form(node: Any) -> Any:
    """Return a JSON Schema as pydantic 2.10 and later write it, from the forms of older pydantic releases:
    a ``$ref`` with sibling keys wrapped in a one-member ``allOf`` (before 2.9), a ``const`` with no
    ``type`` (2.6) or with an ``enum`` of itself (2.7 to 2.9)."""
    if isinstance(node, list):
        return [_current_form(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _current_form(value) for key, value in node.items()}
    wrapped = node.get("allOf")
    if isinstance(wrapped, list) and len(wrapped) == 1 and set(wrapped[0]) == {"$ref"}:
        node = {**{k: v for k, v in node.items() if k != "allOf"}, "$ref": wrapped[0]["$ref"]}
    if "const" in node:
        if node.get("enum") == [node["const"]]:
            del node["enum"]
        if isinstance(node["const"], str):
            node.setdefault("type", "string")
    return node


def _type(prop: dict[str, Any], table: str = "table") -> str:
    """Describe a JSON Schema property's type in words a TOML writer (``table``) or a JSON writer reads."""
    if "$ref" in prop:
        return table
    if "enum" in prop:
        return " \\| ".join(_code(json.dumps(v)) for v in prop["enum"])
    if "anyOf" in prop:
        kinds = [_type(p, table) for p in prop["anyOf"] if p.get("type") != "null"]
        return " or ".join(dict.fromkeys(kinds))
    kind = prop.get("type")
    if kind == "array":
        return f"list of {_type(prop.get('items', {}), table)}" if prop.get("items") else "list"
    if kind == "object":
        values = prop.get("additionalProperties")
        return f"{table} of {_type(values, table)}" if isinstance(values, dict) and values else table
    return kind if kind in ("string", "number", "integer", "boolean") else "any"


def _bounds(prop: dict[str, Any]) -> str:
    """Say a property's bounds (``>= 1``, ``<= 1024``), looking into ``anyOf`` members."""
    words = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}
    found: list[str] = []
    for member in [prop, *prop.get("anyOf", []), prop.get("additionalProperties") or {}]:
        if isinstance(member, dict):
            found += [f"{sign} {member[k]:g}" for k, sign in words.items() if k in member]
    return ", ".join(dict.fromkeys(found))


def _default(prop: dict[str, Any], required: bool) -> str:
    if required:
        return "required"
    if "default" not in prop or prop["default"] is None:
        return "—"
    return _code(json.dumps(prop["default"], ensure_ascii=False))


#: Each top-level key of a config: the TOML heading its keys sit under.
_HEADINGS = {
    "suite": "[suite]",
    "model": "[model]",
    "models": "[models.NAME]",
    "template": "[template]",
    "variants": "[variants.NAME]",
    "thresholds": "[thresholds]",
    "gate": "[gate]",
    "checks": "[[checks]]",
    "review": "[review]",
    "judge": "[judge]",
}


def config_tables() -> Iterator[tuple[str, str, list[tuple[str, str, str, str, str]]]]:
    """Yield each table of a suite config: its heading, its description, and (key, type, default, bounds,
    description) for each key, from the config's JSON Schema (the pydantic models)."""
    from pytest_promptsuite.config.suite import json_schema

    schema = _current_form(json_schema())
    defs = schema["$defs"]

    def rows(name: str) -> list[tuple[str, str, str, str, str]]:
        table = defs[name]
        required = set(table.get("required", []))
        return [
            (key, _type(prop), _default(prop, key in required), _bounds(prop), prop.get("description", ""))
            for key, prop in table["properties"].items()
        ]

    for key, prop in schema["properties"].items():
        heading = _HEADINGS[key]
        if key == "checks":
            (array, table) = prop["anyOf"]
            yield heading, prop["description"], rows(_ref_name(array["items"]["$ref"]))
            modules = table["properties"]["python_modules"]
            yield (
                "[checks]",
                "The other spelling of the suite checks, with python_modules.",
                [
                    ("python_modules", _type(modules), _code("[]"), "", modules["description"]),
                    ("rules", "list of table", _code("[]"), "", "The suite checks, as [[checks.rules]] tables."),
                ],
            )
            continue
        ref = str(prop.get("$ref") or prop["additionalProperties"]["$ref"])
        yield heading, prop.get("description", ""), rows(_ref_name(ref))
        if key == "model":
            yield "[model] prices", defs["Prices"]["description"], rows("Prices")
        if key == "variants":
            yield "[variants.NAME.model]", defs["ModelConfigOverride"]["description"], rows("ModelConfigOverride")


def config_page() -> str:
    """List every key of a suite config, with its type, default, bounds and meaning."""
    lines = [
        "# Suite config keys",
        "",
        "Every key of `promptsuite.toml` (or of `[tool.promptsuite]` in `pyproject.toml`), generated from the",
        "pydantic models of `pytest_promptsuite/config/`. An unknown key, a wrong type or a value out of bounds is",
        "an error with its `path:line` before anything runs. `[models.NAME]` takes the keys of `[model]`; a",
        "`[variants.NAME]` table takes the keys of `[template]` and a `model` table. The same keys are in the",
        "[JSON Schema](schemas.md) for editors.",
        "",
    ]
    for heading, about, rows in config_tables():
        lines += [f"## `{heading}`", "", _plain(about), "", "| key | type | default | bounds | meaning |"]
        lines.append("|---|---|---|---|---|")
        for key, kind, default, bounds, text in rows:
            lines.append(f"| `{key}` | {kind} | {default} | {bounds or '—'} | {_cell(text)} |")
        lines.append("")
    return "\n".join(lines)


# -- checks ----------------------------------------------------------------------------------------

#: An ``assert`` entry of each built-in type, as the checks guide shows it (every type needs one).
EXAMPLES: dict[str, dict[str, Any]] = {
    "is-json": {"type": "is-json", "value": {"required": ["id"]}},
    "contains-json": {"type": "contains-json", "value": {"required": ["id"]}},
    "pydantic": {"type": "pydantic", "value": "myapp.models:Refund"},
    "is-xml": {"type": "is-xml", "value": {"requiredElements": ["order.id"]}},
    "word-count": {"type": "word-count", "value": {"min": 20, "max": 100}},
    "char-count": {"type": "char-count", "value": {"max": 280}},
    "finish-reason": {"type": "finish-reason", "value": "stop"},
    "equals": {"type": "equals", "path": "$.refund.amount", "value": 12},
    "contains": {"type": "not-contains", "value": "sk-"},
    "icontains": {"type": "icontains", "value": "refund"},
    "contains-any": {"type": "contains-any", "value": ["refund", "return"]},
    "contains-all": {"type": "contains-all", "value": ["refund", "3 days"]},
    "icontains-any": {"type": "icontains-any", "value": ["Refund", "Return"]},
    "icontains-all": {"type": "icontains-all", "value": ["Refund", "3 Days"]},
    "starts-with": {"type": "starts-with", "value": "Yes"},
    "regex": {"type": "regex", "value": "ORD-\\d{6}", "fullmatch": False},
    "levenshtein": {"type": "levenshtein", "value": "hello world", "threshold": 5},
    "similar": {"type": "similar", "value": "refund issued", "threshold": 0.8},
    "rouge-n": {"type": "rouge-n", "value": "the refund is issued in 3 days", "threshold": 0.75},
    "is-refusal": {"type": "not-is-refusal", "value": ["I cannot help"], "defaults": True},
    "human-review": {"type": "human-review", "value": "legal wording"},
    "latency": {"type": "latency", "threshold": 2000},
    "tokens": {"type": "tokens", "threshold": 300, "field": "completion"},
    "cost": {"type": "cost", "threshold": 0.002, "prices": {"prompt": 0.15, "completion": 0.6}},
    "llm-rubric": {"type": "llm-rubric", "value": "Polite and mentions the refund", "threshold": 0.7},
    "python": {"type": "python", "value": "myapp.checks:polite", "threshold": 0.5},
    "is-valid-openai-tools-call": {"type": "is-valid-openai-tools-call"},
    "similar:cosine": {"type": "similar:cosine", "value": "Your refund has been issued", "threshold": 0.8},
    "similar:dot": {"type": "similar:dot", "value": "Your refund has been issued", "threshold": 0.8},
    "similar:euclidean": {"type": "similar:euclidean", "value": "Your refund has been issued", "threshold": 0.5},
    "is-valid-openai-function-call": {
        "type": "is-valid-openai-function-call",
        "value": [{"name": "lookup_order", "parameters": {"type": "object", "required": ["order_id"]}}],
    },
    "tool-call-f1": {"type": "tool-call-f1", "value": ["lookup_order"], "threshold": 0.8},
    "trajectory:tool-used": {"type": "not-trajectory:tool-used", "value": "issue_refund"},
    "trajectory:tool-sequence": {
        "type": "trajectory:tool-sequence",
        "value": {"steps": ["lookup_order", "issue_refund"], "mode": "in_order"},
    },
    "trajectory:tool-args-match": {
        "type": "trajectory:tool-args-match",
        "value": {"name": "lookup_order", "args": {"order_id": "A1234"}, "mode": "partial"},
    },
    "trajectory:step-count": {"type": "trajectory:step-count", "value": {"min": 1, "max": 3}},
    "conversation:turn-count": {"type": "conversation:turn-count", "value": {"min": 2, "max": 6}},
    "conversation:keeps": {"type": "conversation:keeps", "value": "A[0-9]{4}", "regex": True, "turn": 3},
    "conversation:goal-met": {"type": "conversation:goal-met", "value": "a refund for order A1234", "threshold": 0.7},
    "conversation:role-adherence": {
        "type": "conversation:role-adherence",
        "value": "a polite support agent of ACME who never issues refunds",
        "threshold": 0.7,
    },
}
#: What a probe compiles in place of an example's module (the example's module does not exist here).
_PROBE_VALUES = {"pydantic": "pydantic:BaseModel", "python": "json:dumps"}


class CheckType(NamedTuple):
    """A built-in check type as the reference shows it, read from its factory."""

    name: str
    layer: str
    summary: str
    negatable: bool
    reads_output: bool
    params: list[tuple[str, bool, str]]  # (key, required, what it takes)


@functools.cache
def check_types() -> tuple[CheckType, ...]:
    """Compile each built-in type's example through its factory, recording every parameter the factory reads."""
    import importlib

    from pytest_promptsuite.checks.builtin_checks import BUILTIN_TYPES
    from pytest_promptsuite.checks.check_api import Params
    from pytest_promptsuite.checks.compile_checks import COMMON_FIELDS

    class Recording(Params):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.read: list[tuple[str, bool, str]] = []

        def _get(self, key: str, required: bool, what: str) -> Any:
            if key not in [k for k, _, _ in self.read]:
                self.read.append((key, required, what))
            return super()._get(key, required, what)

    found: list[CheckType] = []
    for name, where in BUILTIN_TYPES.items():
        if name not in EXAMPLES:
            raise LookupError(f"docs/hooks.py: the check type {name!r} has no example in EXAMPLES")
        module, _, path = where.partition(".")
        factory: Any = importlib.import_module(f"pytest_promptsuite.checks.{module}")
        for attr in path.split("."):
            factory = getattr(factory, attr)
        entry = {k: v for k, v in EXAMPLES[name].items() if k not in COMMON_FIELDS}
        if name in _PROBE_VALUES:
            entry["value"] = _PROBE_VALUES[name]
        with tempfile.TemporaryDirectory() as folder:
            params = Recording(name, entry, base_dir=Path(folder))
            check = factory(params)
            params.done()
        found.append(
            CheckType(
                name,
                check.layer.value,
                _plain(factory.__doc__).removeprefix("Make ").removeprefix(f"`{name}`: "),
                check.negatable,
                check.reads_output,
                params.read,
            )
        )
    return tuple(found)


def checks_page() -> str:
    """List every built-in check type with its layer, parameters and an example entry."""
    from pytest_promptsuite.checks.compile_checks import COMMON_FIELDS

    lines = [
        "# Check types",
        "",
        "Every built-in `assert` type, generated from the check registry",
        "(`pytest_promptsuite/checks/builtin_checks.py`): each type's parameters are the ones its factory reads. The",
        "[checks guide](../guides/checks.md) explains the",
        "layers and how entries combine.",
        "",
        "Fields every entry may carry: " + ", ".join(f"`{f}`" for f in COMMON_FIELDS) + ". `type` is the type, or",
        "`not-TYPE` for its negation; `weight` (a number >= 0, default 1; 0 records without gating); `path`",
        "(`$.a.b`, `[0]`, `['key']`) checks one field of JSON output; `metric` names a score to report.",
        "",
        "| type | layer | `not-` | `path` | parameters | checks that |",
        "|---|---|---|---|---|---|",
    ]
    for t in check_types():
        params = "; ".join(f"`{k}`{' (required)' if req else ''}: {what}" for k, req, what in t.params) or "—"
        yes = {True: "yes", False: "no"}
        lines.append(
            f"| `{t.name}` | {t.layer} | {yes[t.negatable]} | {yes[t.reads_output]} | {_cell(params)} | "
            f"{_cell(t.summary)} |"
        )
    lines += [
        "| `assert-set` | — | no | no | `assert` (required): a list of entries; `threshold`: the weighted share "
        "of them that must pass | a group of checks that counts as one |",
        "",
        "## Examples",
        "",
        "One `assert` entry of each type, as a case line holds it:",
        "",
        "```json",
    ]
    lines += [json.dumps(EXAMPLES[t.name], ensure_ascii=False) for t in check_types()]
    lines += ["```", ""]
    return "\n".join(lines)


# -- the case line ---------------------------------------------------------------------------------


def case_page() -> str:
    """List every field of a case line, from the case line's pydantic model."""
    from pytest_promptsuite.cases.case_schema import json_schema

    schema = json_schema()
    required = set(schema["required"])
    lines = [
        "# Case line fields",
        "",
        "One JSON object a line, UTF-8. Generated from `CaseLine`, the pydantic model of",
        "`pytest_promptsuite/cases/case_schema.py`; the [JSON Schema](schemas.md) holds the same rules. Any other key",
        "is an error naming its line.",
        "",
        "| field | required | type | meaning |",
        "|---|---|---|---|",
    ]
    for key, prop in schema["properties"].items():
        kind = _type(prop, "object")
        bounds = _bounds(prop)
        lines.append(
            f"| `{key}` | {'yes' if key in required else 'no'} | {kind}{f' ({bounds})' if bounds else ''} | "
            f"{_cell(prop.get('description', ''))} |"
        )
    lines.append("")
    return "\n".join(lines)


# -- results and summary ---------------------------------------------------------------------------

#: What each field of a ``results.jsonl`` row holds.
ROW_FIELDS = {
    "case_id": "The case's id.",
    "slice": "The case's slice.",
    "variant": "The prompt variant (`[variants.NAME]`), or null.",
    "repeat": "Which run of the case (0 .. N-1 under `--prompt-repeat N`).",
    "outcome": "`passed`, `failed`, `error`, `review` or `skipped`.",
    "output": "What the checks saw (after output parsers and transforms), or null.",
    "checks": "Every check: `layer`, `name`, `passed`, `message`, `gating`, `skipped`, `score`, `details`.",
    "error": "Null, or why the case could not run: the HTTP status and the endpoint's text, or the render error.",
    "prompt": "What was sent: the string, or `[{role, content}]` messages with OpenAI roles.",
    "prompt_hash": "A hash of the prompt (and of every label's prompt in the ppl mode).",
    "latency_ms": "The call's time in ms; null on a cache hit.",
    "usage": "The endpoint's token counts (`prompt_tokens`, `completion_tokens`, `total_tokens`), or null.",
    "finish_reason": "Why the model stopped, as the endpoint said: `stop`, `length` (the answer was cut at "
    "`max_tokens`; the terminal names such answers after the totals, the dashboard marks them ✂, and their failed "
    "checks say so), "
    "`tool_calls`, or null; on every row with an answer (`output`), absent otherwise.",
    "location": "`path:line` of the case.",
    "tags": "The case's tags.",
    "metadata": "The case's metadata, untouched.",
    "replies": "A multi-turn case's replies, in order (the last is `output`); absent otherwise.",
    "cached": "`true` when the answer came from the response cache; absent otherwise.",
    "tool_calls": "The tools the final answer called: `id`, `name` and `arguments` (parsed JSON), or `arguments_text` "
    "when they were not JSON; absent when it called none.",
    "trajectory": "A run with tools: every model step's `text`, `tool_calls` and the `tool_results` sent back; absent "
    "when no tool was called.",
    "tool_stop": "Why a run with `tool_results` stopped early (a call with no result given, `max_steps` reached), "
    'or that `tool_choice = "required"` was sent and the answer called no tool; '
    "absent otherwise.",
    "judge_fingerprint": "The fingerprint of the judge that decided the row's `llm-rubric` checks (its model, the "
    "served model name, params, rubric prompt template and reply parser, hashed); absent when no judge decided one. "
    "See [Calibrating your judge](../guides/calibrating-your-judge.md).",
    "turns": "A conversation's transcript, a turn each: `turn`, `user` (the user's message), `reply`, `passed`, "
    "`checks` (the turn's own, each message naming the turn), `usage`, `latency_ms`, and where they apply "
    "`tool_steps` and `user_usage` (the simulated user's tokens); absent for a single-turn case.",
    "format_version": "The row format's version (a row without it is version 1).",
}
#: What each key of ``summary.json`` holds.
SUMMARY_FIELDS = {
    "format_version": "The summary format's version.",
    "totals": "Counts over the run: `cases`, `passed`, `failed`, `error`, `review`, `skipped`.",
    "slices": "The slice table, a row per slice (and variant): the fields below.",
    "regressions": "Case ids that passed in the baseline and fail now.",
    "fixes": "Case ids that failed in the baseline and pass now.",
    "new": "Case ids the baseline does not have.",
    "removed": "Case ids of the baseline this run does not have.",
    "gate": "`passed`, and `reasons`: each failure's sentence.",
    "tags": "The same counts per tag.",
    "variants": "Each prompt variant's table, side by side, with the cases that flipped.",
    "flaky": "Cases that passed in some repeats only.",
    "baseline": "The baseline's path, or null.",
    "policy": "Where each threshold came from: the config's slices, the option, the config's default.",
    "compared_variants": "With `[gate] compare_variants`: the variants gated against the first.",
    "alpha": "The level of the paired regression test.",
    "correction": "`holm` or `none`.",
    "regression": "The regression rule: `auto`, `paired` or `delta`.",
    "compare_variants": "Whether later variants were gated against the first.",
    "max_regression": "The allowed drop of a slice's pass rate.",
    "case_pass": "`[gate] case_pass`: the share of a case's repeats that must pass (`any` for one), or null.",
    "max_tokens_increase": "`[gate] max_tokens_increase`: the allowed rise of tokens per case, or null.",
    "max_cost_increase": "`[gate] max_cost_increase`: the allowed rise of cost per case, or null.",
    "regression_tests": "Each regression test in numbers (strata, p-value, power).",
    "run": "What the run used: each variant's model spec, base URL and params, the case files' and prompts' "
    "hashes, the promptsuite version.",
    "baseline_run": "The same of the baseline's run, or null.",
    "usage": "Calls, cache hits, tokens, cost and latency (p50, p95): in total, per slice and per variant.",
    "judge_fingerprint": "The fingerprint of the run's `llm-rubric` judge (a list when suites had different "
    "judges), or null without one.",
    "ungated_judge_checks": "Under `[judge] min_agreement`: each rubric whose checks did not gate, why (no "
    "calibration, another judge's calibration, too few labels, a kappa interval below the bound) and how many "
    "checks; their outcome was `review`.",
    "judge_changed": "With a baseline: each slice whose judged checks another judge decided there (`slice`, "
    "`baseline_fingerprint`, `fingerprint`); its cases count as unchanged against the baseline, its verdict is "
    "`judge changed`.",
}
#: What each field of a slice row (``summary.json``'s ``slices``, ``slices.csv``) holds.
SLICE_FIELDS = {
    "slice": "The slice's name.",
    "cases": "Rows of the slice (a repeated case counts once per repeat).",
    "passed": "Rows that passed.",
    "failed": "Rows that failed.",
    "error": "Rows that ended in an error.",
    "review": "Rows left for a human look (not counted in the pass rate).",
    "skipped": "Rows skipped (a budget reached, a batch file written).",
    "pass_rate": "`passed / (cases - review)`.",
    "ci_low": "The low end of the 95 % Wilson interval of the pass rate.",
    "ci_high": "The high end of that interval.",
    "threshold": "The pass rate the slice must reach.",
    "threshold_source": "Where the threshold came from (`config slice`, `option`, `config default`, ...).",
    "baseline_pass_rate": "The baseline's pass rate over all its rows of the slice, or null.",
    "delta": "The change against the baseline, or null.",
    "regressions": "How many cases passed in the baseline and fail now.",
    "fixes": "How many cases failed in the baseline and pass now.",
    "p_value": "The exact two-sided McNemar p-value on the paired flips; null without a baseline.",
    "p_regression": "The one-sided p-value of the test the gate uses.",
    "verdict": "`regressed`, `inconclusive` or `no evidence of a drop`; `judge changed` when the baseline's judge "
    "decided the slice's judged checks and no regression was found.",
    "detectable_drop": "The smallest drop this slice catches with 90 % power.",
    "gate": "`pass` or `fail`.",
}


def quick_start_report() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run the Quick start suite on the fake model into a temporary report; return its rows and summary."""
    with tempfile.TemporaryDirectory() as folder:
        command = [sys.executable, "-m", "pytest", "--prompt-suite", QUICK_START, "--prompt-report", folder]
        command += ["-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"the Quick start suite failed while building the docs:\n{done.stdout}{done.stderr}")
        rows = [json.loads(line) for line in (Path(folder) / "results.jsonl").read_text("utf-8").splitlines()]
        summary = json.loads((Path(folder) / "summary.json").read_text("utf-8"))
    return rows, summary


def row_keys() -> list[str]:
    """Return every key a ``results.jsonl`` row can hold, in the row's order."""
    from pytest_promptsuite.checks.outcome import Outcome
    from pytest_promptsuite.models.tool_calls import Step
    from pytest_promptsuite.models.tool_calls import ToolCall
    from pytest_promptsuite.results.case_result import CaseResult

    call = ToolCall("call_1", "lookup_order", {})
    row = CaseResult(
        "c",
        "s",
        Outcome.PASSED,
        output="a",
        replies=("a",),
        cached=True,
        tool_calls=(call,),
        trajectory=(Step("", (call,)),),
        turns=({"turn": 1},),
    )
    return list(dataclasses.replace(row, tool_stop="stopped", judge_fingerprint="0123456789abcdef").to_dict())


def _fields_table(fields: dict[str, str], keys: list[str], what: str) -> list[str]:
    missing = [k for k in keys if k not in fields]
    stale = [k for k in fields if k not in keys]
    if missing or stale:
        raise LookupError(f"docs/hooks.py: {what}: undescribed {missing}, described but gone {stale}")
    return ["| field | meaning |", "|---|---|", *(f"| `{k}` | {_cell(fields[k])} |" for k in keys), ""]


def results_page() -> str:
    """Describe ``results.jsonl`` and ``summary.json`` field by field, with rows of a real run."""
    rows, summary = quick_start_report()
    failed = next(row for row in rows if row["outcome"] == "failed")
    shown = {**summary, "slices": summary["slices"][:1], "tags": summary["tags"][:1]}
    usage = shown.get("usage")
    if isinstance(usage, dict):
        shown["usage"] = {k: v for k, v in usage.items() if k == "total"}
    lines = [
        "# Results and summary formats",
        "",
        "What `--prompt-report DIR` writes. The field lists are checked against the code when the docs build, and",
        f"the examples are a real run of the Quick start suite (`pytest --prompt-suite {QUICK_START}`).",
        "",
        "| file | what |",
        "|---|---|",
        "| `results.jsonl` | a row per executed case × variant × repeat |",
        "| `summary.json` | the slice table, the baseline diff, the gate and what the run used |",
        "| `slices.csv` | the `slices` table of `summary.json` |",
        "| `summary.md` | for `$GITHUB_STEP_SUMMARY`: the verdict first |",
        "| `dashboard.html` | one offline file: charts, the baseline diff, case tables, review decisions |",
        "",
        "## `results.jsonl`",
        "",
        *_fields_table(ROW_FIELDS, row_keys(), "results.jsonl rows"),
        "A failed row of the Quick start run:",
        "",
        "```json",
        json.dumps(failed, ensure_ascii=False, indent=2),
        "```",
        "",
        "## `summary.json`",
        "",
        *_fields_table(SUMMARY_FIELDS, list(summary), "summary.json keys"),
        "### A slice row",
        "",
        *_fields_table(SLICE_FIELDS, list(summary["slices"][0]), "summary.json slice rows"),
        "The Quick start run's `summary.json` (its first slice and tag, its total usage):",
        "",
        "```json",
        json.dumps(shown, ensure_ascii=False, indent=2),
        "```",
        "",
        "`pytest_promptsuite.read_results(path)` and `read_history(paths)` read these files back as pandas",
        "DataFrames ([CI guide](../guides/ci.md#results-as-pandas-frames)).",
        "",
    ]
    return "\n".join(lines)


# -- the CLI ---------------------------------------------------------------------------------------


def cli_page() -> str:
    """Show ``promptsuite --help`` and each command's help, as argparse prints them."""
    from pytest_promptsuite.cli.main import _parser

    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "110"
    try:
        parser = _parser()
        lines = [
            "# The `promptsuite` command",
            "",
            "Generated from the command's argument parser (`pytest_promptsuite/cli/main.py`).",
            "",
            "```",
            parser.format_help().rstrip(),
            "```",
            "",
        ]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    lines += [f"## `promptsuite {name}`", "", "```", sub.format_help().rstrip(), "```", ""]
                    for inner in sub._actions:
                        if isinstance(inner, argparse._SubParsersAction):
                            for kind, leaf in inner.choices.items():
                                lines += [f"### `promptsuite {name} {kind}`", "", "```"]
                                lines += [leaf.format_help().rstrip(), "```", ""]
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before
    return "\n".join(lines)


# -- schemas ---------------------------------------------------------------------------------------


def schema_files() -> dict[str, str]:
    """Return the published JSON Schema files by their path in the site."""
    from pytest_promptsuite.cases.case_schema import json_schema as case_schema
    from pytest_promptsuite.config.suite import json_schema as config_schema

    return {
        "schemas/promptsuite.schema.json": json.dumps(config_schema(), indent=2, ensure_ascii=False) + "\n",
        "schemas/case.schema.json": json.dumps(case_schema(), indent=2, ensure_ascii=False) + "\n",
    }


#: Every generated page by its path under docs/, with the function that writes it.
PAGES = {
    "reference/options.md": options_page,
    "reference/config.md": config_page,
    "reference/checks.md": checks_page,
    "reference/case-line.md": case_page,
    "reference/results.md": results_page,
    "reference/cli.md": cli_page,
}


def pages() -> dict[str, str]:
    """Return every generated page and schema file by its path under docs/."""
    return {**{path: write() for path, write in PAGES.items()}, **schema_files()}


def on_files(files: Any, config: Any) -> Any:
    """Add the generated pages and schema files to the site (mkdocs' ``on_files`` event)."""
    from mkdocs.structure.files import File

    for path, content in pages().items():
        files.append(File.generated(config, path, content=content))
    return files
