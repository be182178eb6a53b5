"""What ``promptsuite validate`` accepts is what runs: a corpus of broken suites, one per error
class and prompt kind. Each one fails ``validate`` and ``pytest --collect-only`` alike (their
verdicts agree), with its message naming the file and line, and a full run stops before any
call: the loopback server counts zero requests. Valid suites of each kind pass both.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_promptsuite.cli.main import main
from tests.loopback import LoopbackServer


CASES = "".join(
    f'{{"case_id": "c-{i}", "input": "question {i}", "slice": "s", "vars": {{"traveller_tier": "gold"}}}}\n'
    for i in range(3)
)
MODEL = '[model]\nspec = "openai:m"\nbase_url = "{url}"\nmax_retries = 0\n'

#: name -> (files, the message both validate and pytest print; {d} is the suite's folder as shown)
BROKEN: dict[str, tuple[dict[str, str], str]] = {
    "format-file-unknown-field": (
        {"promptsuite.toml": '[template]\ntemplate_file = "p.txt"\n', "p.txt": "Hi\nTier: {traveler_tier}\n"},
        "p.txt:2: template.template_file reads the field 'traveler_tier', which no case of * provides "
        "(did you mean 'traveller_tier'?); 3 cases lack it*",
    ),
    "inline-template-unknown-field": (
        {"promptsuite.toml": '[suite]\ncases = ["cases.jsonl"]\n[template]\ntemplate = "Tier {tier}"\n'},
        "*promptsuite.toml:4: template.template reads the field 'tier', which no case of * provides*",
    ),
    "delimiters-unknown-field": (
        {
            "promptsuite.toml": '[template]\ntemplate_file = "p.txt"\nrenderer = { type = "delimiters", start = "<", '
            'end = ">" }\n',
            "p.txt": '{"json": 1}\n<input> <travler_tier>\n',
        },
        "p.txt:2: template.template_file reads the field 'travler_tier'*(did you mean 'traveller_tier'?)*",
    ),
    "jinja-file-unknown-field": (
        {
            "promptsuite.toml": '[template]\ntemplate_file = "p.j2"\nrenderer = "jinja"\n',
            "p.j2": "{{ input }}\n\n{{ traveler_tier }}\n",
        },
        "p.j2:3: template.template_file reads the field 'traveler_tier'*(did you mean 'traveller_tier'?)*",
    ),
    "jinja-file-unknown-filter": (
        {
            "promptsuite.toml": '[template]\ntemplate_file = "p.j2"\nrenderer = "jinja"\n',
            "p.j2": "{{ input | shoutt }}\n",
        },
        "*p.j2:1: template.template_file: line 1 of the template: No filter named 'shoutt'*",
    ),
    "jinja-file-syntax-error": (
        {"promptsuite.toml": '[template]\ntemplate_file = "p.j2"\nrenderer = "jinja"\n', "p.j2": "{{ input \n"},
        "*p.j2:1: template.template_file: line 1 of the template: unexpected end of template*",
    ),
    "task-prompt-unknown-field": (
        {
            "promptsuite.toml": '[template]\ntask_prompts = "prompts.yml"\ntask = "t"\n',
            "prompts.yml": "prompts:\n  - task: t\n    content: '{{ input }} {{ travellers_tier }}'\n",
        },
        "*prompts.yml:2: task 't' (mode 'standard') reads the field 'travellers_tier'*"
        "(did you mean 'traveller_tier'?)*",
    ),
    "task-prompt-unknown-filter": (
        {
            "promptsuite.toml": '[template]\ntask_prompts = "prompts.yml"\ntask = "t"\n',
            "prompts.yml": "prompts:\n  - task: t\n    content: '{{ input | nope }}'\n",
        },
        "*prompts.yml:2 (task 't', mode 'standard'): line 1 of the template: No filter named 'nope'*",
    ),
    "task-prompt-unknown-parser": (
        {
            "promptsuite.toml": '[template]\ntask_prompts = "prompts.yml"\ntask = "t"\n',
            "prompts.yml": "prompts:\n  - task: t\n    content: '{{ input }}'\n    output_parser: jsn\n",
        },
        "*prompts.yml:2: unknown output parser 'jsn' (did you mean 'json'?)*",
    ),
    "task-prompt-unknown-task": (
        {
            "promptsuite.toml": '[template]\ntask_prompts = "prompts.yml"\ntask = "tt"\n',
            "prompts.yml": "prompts:\n  - task: t\n    content: '{{ input }}'\n",
        },
        "*promptsuite.toml:3: *prompts.yml: no prompt for task 'tt' (did you mean 't'?)*",
    ),
    "prompts-yml-bad-key": (
        {
            "promptsuite.toml": '[template]\ntask_prompts = "prompts.yml"\ntask = "t"\n',
            "prompts.yml": "prompts:\n  - task: t\n    contnet: x\n",
        },
        "*prompts.yml:2: unknown key 'contnet' (did you mean 'content'?)*",
    ),
    "infer-cfg-unknown-field": (
        {
            "promptsuite.toml": '[template]\nprompt_template = { template = "Q: {input}\\nTier: {tier}\\nA: {answer}" '
            "}\n"
        },
        "*promptsuite.toml:2: template.prompt_template reads the field 'tier', which no case of * provides*",
    ),
    "multiturn-unknown-field": (
        {
            "promptsuite.toml": '[template]\nmultiturn_template = { template = { round = [{ role = "HUMAN", prompt = '
            '"{question} {mood}" }, { role = "BOT", prompt = "{answer}" }] } }\n',
            "cases.jsonl": '{"case_id": "m-1", "input": ["a", "b"], "slice": "s"}\n',
        },
        "*promptsuite.toml:2: template.multiturn_template reads the field 'mood', which no case of * provides*",
    ),
    "variant-file-some-cases-lack": (
        {
            "promptsuite.toml": '[template]\ntemplate_file = "p.txt"\n[variants.v1]\n[variants.v2]\n'
            'template_file = "q.txt"\n',
            "p.txt": "{input}\n",
            "q.txt": "{input} {city}\n",
            "cases.jsonl": CASES.replace('"gold"}', '"gold", "city": "Oslo"}', 2),
        },
        "q.txt:1: variants.v2.template_file (variant v2) reads the field 'city', which 1 of 3 cases of * lack: c-2*",
    ),
    "meta-template-unknown": (
        {"promptsuite.toml": '[template]\nprompt_template = "{input}"\n', "model+": 'meta_template = "nope"\n'},
        "*promptsuite.toml:7: meta_template = 'nope' is not a built-in meta template*",
    ),
    "infer-cfg-unknown-retriever": (
        {"promptsuite.toml": '[template]\nretriever = { type = "Nope" }\nprompt_template = "{input}"\n'},
        "*promptsuite.toml:2: template.retriever.type: unknown retriever 'Nope'*",
    ),
    "task-prompt-syntax-error": (
        {
            "promptsuite.toml": '[template]\ntask_prompts = "prompts.yml"\ntask = "t"\n',
            "prompts.yml": "prompts:\n  - task: u\n    content: ok\n  - task: t\n    content: '{% if input %}'\n",
        },
        "*prompts.yml:4 (task 't', mode 'standard'): line 1 of the template: Unexpected end of template*",
    ),
    "prompts-yml-invalid": (
        {
            "promptsuite.toml": '[template]\ntask_prompts = "prompts.yml"\ntask = "t"\n',
            "prompts.yml": "prompts:\n  - task: t\n    content: : x\n",
        },
        "*prompts.yml:3: invalid YAML: *",
    ),
    "toml-unknown-key": (
        {"promptsuite.toml": '[suite]\ncases = ["cases.jsonl"]\n\n[thresholds]\ndefualt = 0.8\n'},
        "*promptsuite.toml:5: unknown key 'thresholds.defualt' (did you mean 'default'?)*",
    ),
    "toml-wrong-type": (
        {"promptsuite.toml": '[thresholds]\ndefault = "high"\n'},
        "*promptsuite.toml:2: thresholds.default: Input should be a valid number*",
    ),
    "toml-syntax": (
        {"promptsuite.toml": "[thresholds]\ndefault = 0.8\n[suite\n", "model!": ""},
        "*promptsuite.toml:3: invalid TOML: *",
    ),
    "toml-path-outside": (
        {"promptsuite.toml": '[suite]\ncases = ["cases.jsonl"]\n[template]\ntemplate_file = "../p.txt"\n'},
        "*promptsuite.toml:4: template.template_file = '../p.txt' points outside the suite's folder*",
    ),
    "toml-missing-template-file": (
        {"promptsuite.toml": '[suite]\ncases = ["cases.jsonl"]\n\n[template]\ntemplate_file = "gone.txt"\n'},
        "*promptsuite.toml:5: template.template_file = 'gone.txt': cannot read *",
    ),
    "toml-missing-rules-file": (
        {"promptsuite.toml": '[suite]\ncases = ["cases.jsonl"]\n', "model!": '[model]\nspec = "fake:gone.json"\n'},
        "*promptsuite.toml:4: model.spec = 'fake:gone.json': *gone.json: cannot read the fake model's rules*",
    ),
    "toml-missing-task-prompts": (
        {"promptsuite.toml": '[template]\ntask_prompts = "gone.yml"\ntask = "t"\n'},
        "*promptsuite.toml:2: template.task_prompts = 'gone.yml': no such file or folder*",
    ),
    "case-file-bad-line": (
        {"cases.jsonl": '{"case_id": "a", "input": "x", "slice": "s"}\n{"case_id": "b", "input": "x"}\n'},
        "*cases.jsonl:2: missing required field 'slice'*",
    ),
    # what only a render shows, a render that needs no model answer: collection renders each case
    "multiturn-system-role-not-in-gemma": (
        {
            "promptsuite.toml": '[template]\nmultiturn_template = { template = { begin = [{ role = "SYSTEM", prompt = '
            '"Be brief." }], round = [{ role = "HUMAN", prompt = "{question}" }, { role = "BOT", prompt = "{answer}" '
            "}] } }\n",
            "model+": 'meta_template = "gemma"\n',
            "cases.jsonl": '{"case_id": "m-1", "input": ["a", "b"], "slice": "s"}\n'
            '{"case_id": "m-2", "input": ["c"], "slice": "s"}\n',
        },
        "suite/cases.jsonl:1: m-1 and 1 more case (m-2): role 'SYSTEM' is not in the meta template and the item "
        "has no fallback_role (roles: HUMAN, BOT)",
    ),
    "round-role-not-in-meta-template": (
        {
            "promptsuite.toml": '[template]\nprompt_template = { template = { round = [{ role = "NARRATOR", prompt = '
            '"{input}" }] } }\n',
            "model+": 'endpoint = "completions"\nmeta_template = "chatml"\n',
        },
        "suite/cases.jsonl:1: c-0 and 2 more cases (c-1, c-2): role 'NARRATOR' is not in the meta template's round*",
    ),
    "jinja-sandbox-limit-of-one-case": (
        {
            "promptsuite.toml": '[template]\ntemplate_file = "p.j2"\nrenderer = "jinja"\n',
            "p.j2": "{% for i in range(n) %}x{% endfor %}",
            "cases.jsonl": '{"case_id": "ok", "input": "hi", "slice": "s", "vars": {"n": 2}}\n'
            '{"case_id": "huge", "input": "hi", "slice": "s", "vars": {"n": 100000000000}}\n',
        },
        "suite/cases.jsonl:2: huge: p.j2: refused by the sandbox: range(100000000000,) has 100,000,000,000 "
        "numbers, more than the template range limit of 10,000 numbers",
    ),
    "jinja-error-on-a-value": (
        {
            "promptsuite.toml": '[template]\ntemplate_file = "p.j2"\nrenderer = "jinja"\n',
            "p.j2": "{{ 1 // n }}",
            "cases.jsonl": '{"case_id": "z", "input": "hi", "slice": "s", "vars": {"n": 0}}\n',
        },
        "suite/cases.jsonl:1: z: p.j2: ZeroDivisionError: integer division or modulo by zero",
    ),
    "jinja-missing-item": (
        {
            "promptsuite.toml": '[template]\ntemplate_file = "p.j2"\nrenderer = "jinja"\n',
            "p.j2": "{{ d.b.c }}",
            "cases.jsonl": '{"case_id": "u", "input": "hi", "slice": "s", "vars": {"d": {"a": 1}}}\n',
        },
        "suite/cases.jsonl:1: u: p.j2: 'dict object' has no attribute 'b'",
    ),
    "plugin-renderer-raises": (
        {
            "promptsuite.toml": '[template]\ntemplate = "<input>"\nrenderer = "picky"\n',
            "conftest.py": "class Picky:\n    def render(self, template, row):\n"
            "        if row['input'].endswith('1'):\n            raise ValueError('no ones')\n"
            "        return row['input']\n\n\ndef pytest_promptsuite_make_renderer(name, params):\n"
            "    return Picky() if name == 'picky' else None\n",
        },
        "suite/cases.jsonl:2: c-1: rendering raised ValueError: no ones",
    ),
    "case-unknown-check": (
        {
            "cases.jsonl": '{"case_id": "a", "input": "x", "slice": "s", "assert": [{"type": "contians", '
            '"value": "x"}]}\n'
        },
        "*cases.jsonl:1: *unknown check type 'contians' (did you mean 'contains'?)*",
    ),
}

#: Valid suites of each kind (and a ``vars`` field no template reads: a warning, not an error).
VALID: dict[str, dict[str, str]] = {
    "format-file": {"promptsuite.toml": '[template]\ntemplate_file = "p.txt"\n', "p.txt": "{input} {traveller_tier}"},
    "optional-field": {
        "promptsuite.toml": '[template]\ntemplate_file = "p.txt"\noptional = ["city"]\n',
        "p.txt": "{input} {city}",
    },
    "jinja-guarded": {
        "promptsuite.toml": '[template]\ntemplate_file = "p.j2"\nrenderer = "jinja"\n',
        "p.j2": "{{ input }}{% if city is defined %}{{ city }}{% endif %}{{ mood | default('') }}",
    },
    "task-prompt": {
        "promptsuite.toml": '[template]\ntask_prompts = "prompts.yml"\ntask = "t"\n',
        "prompts.yml": "prompts:\n  - task: t\n    content: '{{ input }} {{ traveller_tier }} {{ history }}'\n",
    },
    "unused-var": {"promptsuite.toml": '[template]\ntemplate_file = "p.txt"\n', "p.txt": "{input} {answer}"},
}


def _write(folder: Path, files: dict[str, str], url: str) -> Path:
    folder.mkdir(parents=True)
    config = files.get("promptsuite.toml", "")
    if "model!" in files:  # the suite's own [model] table (or none)
        config += files["model!"]
    else:
        config += MODEL.format(url=url) + files.get("model+", "")
    (folder / "promptsuite.toml").write_text(config, encoding="utf-8")
    for name, text in files.items():
        if name not in ("promptsuite.toml", "model!", "model+"):
            (folder / name).write_text(text, encoding="utf-8")
    if not (folder / "cases.jsonl").exists():
        (folder / "cases.jsonl").write_text(CASES, encoding="utf-8")
    return folder


def _validate(pytester: pytest.Pytester, folder: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    status = main(["validate", folder])
    captured = capsys.readouterr()
    return status, captured.err + captured.out


@pytest.mark.parametrize("name", list(BROKEN))
def test_a_broken_suite_fails_validate_and_collection_alike_before_any_call(
    pytester: pytest.Pytester, loopback: LoopbackServer, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    files, message = BROKEN[name]
    _write(pytester.path / "suite", files, loopback.base_url)
    status, said = _validate(pytester, "suite", capsys)
    assert status == 1, said
    pytest_lines = said.splitlines()
    assert any(_matches(line, message) for line in pytest_lines), said
    assert said.rstrip().endswith("found")  # "1 problem found"

    collected = pytester.runpytest("--prompt-suite", "suite", "--collect-only", "-p", "no:cacheprovider")
    assert collected.ret != 0  # the same verdict as validate
    collected_text = collected.stdout.str() + collected.stderr.str()
    assert any(_matches(line, message) for line in collected_text.splitlines()), collected_text
    # every line validate printed but its count, as collection prints it (a config's error as a usage
    # error: "ERROR: " and the config's whole path first)
    problems, lines = said.splitlines()[:-1], collected_text.splitlines()
    assert all(any(line.endswith(problem) for line in lines) for problem in problems), (problems, collected_text)

    run = pytester.runpytest("--prompt-suite", "suite", "-p", "no:cacheprovider")
    assert run.ret != 0
    assert loopback.stats.requests == 0


def _matches(line: str, pattern: str) -> bool:
    from fnmatch import fnmatch

    return fnmatch(line, pattern if pattern.startswith("*") else "*" + pattern)


@pytest.mark.parametrize("name", list(VALID))
def test_a_valid_suite_passes_validate_and_collection_alike(
    pytester: pytest.Pytester, loopback: LoopbackServer, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    _write(pytester.path / "suite", VALID[name], loopback.base_url)
    status, said = _validate(pytester, "suite", capsys)
    assert status == 0, said
    assert "ok: 3 cases in 1 slices (s)" in said
    collected = pytester.runpytest("--prompt-suite", "suite", "--collect-only", "-p", "no:cacheprovider")
    assert collected.ret == 0
    collected.stdout.fnmatch_lines(["*3 tests collected*"])
    assert loopback.stats.requests == 0
    if name == "unused-var":
        assert (
            "warning: suite/cases.jsonl:1: vars field 'traveller_tier' (in 3 cases, first c-0) is read by no "
            "template of the suite" in said
        )


def test_the_misspelled_variable_is_one_message_not_one_per_case(
    pytester: pytest.Pytester, loopback: LoopbackServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's 30-case suite with ``{traveler_tier}`` for ``{traveller_tier}``."""
    cases = "".join(
        f'{{"case_id": "flight-{i:03}", "input": "q{i}", "slice": "flights", "vars": {{"traveller_tier": "gold"}}}}\n'
        for i in range(30)
    )
    _write(
        pytester.path / "suite",
        {
            "promptsuite.toml": '[template]\ntemplate_file = "v1.txt"\n',
            "v1.txt": "Tier: {traveler_tier}\n{input}\n",
            "cases.jsonl": cases,
        },
        loopback.base_url,
    )
    status, said = _validate(pytester, "suite", capsys)
    assert status == 1
    assert said.splitlines() == [
        "suite/v1.txt:1: template.template_file reads the field 'traveler_tier', which no case of suite/cases.jsonl "
        "provides (did you mean 'traveller_tier'?); 30 cases lack it. Give it in each case's \"vars\", or list it "
        "in [template] optional to render it empty",
        "1 problem found",
    ]
    result = pytester.runpytest("--prompt-suite", "suite", "-p", "no:cacheprovider")
    assert result.ret != 0
    assert result.stdout.str().count("reads the field 'traveler_tier'") == 1
    assert loopback.stats.requests == 0
