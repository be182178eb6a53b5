"""How many NeMo Guardrails prompt entries render as written under ``semantics = "nemo"``, and how
many equal NeMo's own ``LLMTaskManager.render_task_prompt`` byte for byte; and how often our
prompt selection picks the prompt NeMo's ``get_prompt`` picks.

    python benchmarks/nemo_compat.py --nemo-python /tmp/nemo-venv/bin/python
    python benchmarks/nemo_compat.py --nemo-python ... --extra NeMo-Guardrails/examples --extra .../docs

The reference runs in a Python that has ``nemoguardrails`` installed (0.10.1 measured; default:
``$PROMPTSUITE_NEMO_PYTHON``, else this Python when it can import it). Entries: every prompt of
the package's ``llm/prompts/*.yml`` and of the example config ``example_suites/nemo_guardrails``,
each run through a suite written to a temporary folder (a NeMo config with that one entry and
no conftest), with the same events and context variables on both sides.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pluggy


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_promptsuite.config.suite import load_config  # noqa: E402
from pytest_promptsuite.dialects.nemo.guardrails_config import library_prompts  # noqa: E402
from pytest_promptsuite.dialects.nemo.guardrails_config import read_nemo_config  # noqa: E402
from pytest_promptsuite.dialects.nemo.nemo_prompt import nemo_prompt  # noqa: E402
from pytest_promptsuite.dialects.nemo.nemo_selection import select_nemo_prompt  # noqa: E402
from pytest_promptsuite.errors import PromptSuiteError  # noqa: E402
from pytest_promptsuite.formats.jsonio import encode  # noqa: E402
from pytest_promptsuite.prompts.prompts_yml import prompt_entries  # noqa: E402
from pytest_promptsuite.prompts.prompts_yml import prompts_in  # noqa: E402
from pytest_promptsuite.prompts.prompts_yml import read_yaml_file  # noqa: E402
from pytest_promptsuite.run.registration import register_builtins  # noqa: E402


EXAMPLE = ROOT / "example_suites" / "nemo_guardrails" / "config"
MODELS = [
    "unknown",
    "openai/gpt-3.5-turbo-instruct",
    "openai/gpt-3.5-turbo",
    "openai/gpt-4o",
    "openai/gpt-4",
    "nemollm/gpt-43b-905",
    "nim/meta/llama3-8b-instruct",
    "cohere/command",
    "huggingface/databricks/dolly-v2-3b",
    "vertexai/mosaicml/mpt-7b",
    "nvidia_ai_endpoints/meta/llama-3.1-70b-instruct",
    "azure/gpt-35-turbo",
    "nemollm",
]
MODES = ["standard", "compact"]
EVENTS: list[dict[str, Any]] = [
    {"type": "UtteranceUserActionFinished", "final_transcript": "Hi there"},
    {"type": "UserMessage", "text": "Hi there"},
    {"type": "UserIntent", "intent": "express greeting"},
    {"type": "BotIntent", "intent": "express greeting"},
    {"type": "StartUtteranceBotAction", "script": "Hello! How can I help?"},
    {"type": "UtteranceUserActionFinished", "final_transcript": "What is the refund policy?"},
    {"type": "UserMessage", "text": "What is the refund policy?"},
]
INSTRUCTIONS = "You are a support bot for ACME.\nAnswer briefly.\n"
SAMPLE = 'user "Hello"\n  express greeting\nbot express greeting\n  "Hi! How can I help?"\n'
#: Values of the variables that are not strings in NeMo's runtime (``context.relevant_chunks``,
#: the evaluation's ``policy.id``).
VALUES: dict[str, Any] = {
    "context": {"relevant_chunks": "<relevant chunks value>"},
    "policy": {"id": "<policy id>", "description": "<policy description>"},
}
PROVIDED = {"history", "general_instructions", "sample_conversation", "sample_conversation_two_turns"}
MANAGER = pluggy.PluginManager("pytest")
register_builtins(MANAGER)  # the built-ins and NeMo's default plugin, as a run without conftest has them

REFERENCE = r"""
import json, os, sys, logging
logging.disable(logging.CRITICAL)
from jinja2 import meta
import nemoguardrails
from nemoguardrails.rails.llm.config import RailsConfig
from nemoguardrails.llm.taskmanager import LLMTaskManager
from nemoguardrails.llm import prompts as library
job = json.load(sys.stdin)
out = {"folder": os.path.dirname(nemoguardrails.__file__), "version": nemoguardrails.__version__,
       "renders": [], "choices": []}
env = LLMTaskManager(RailsConfig.parse_object({"models": []})).env
for item in job["entries"]:
    prompt = dict(item["prompt"], task=item["task"])
    texts = [prompt["content"]] if prompt.get("content") else [
        m if isinstance(m, str) else m["content"] for m in prompt["messages"]]
    names = set()
    for t in texts:
        names |= meta.find_undeclared_variables(env.parse(t))
    config = RailsConfig.parse_object({
        "instructions": [{"type": "general", "content": job["instructions"]}],
        "sample_conversation": job["sample"], "prompting_mode": prompt.get("mode", "standard"),
        "prompts": [prompt], "models": []})
    context = {n: job["values"].get(n, "<%s value>" % n) for n in names if n not in job["provided"]}
    try:
        rendered = LLMTaskManager(config).render_task_prompt(item["task"], context, job["events"])
        out["renders"].append({"ok": True, "names": sorted(names), "prompt": rendered})
    except Exception as exc:
        out["renders"].append({"ok": False, "names": sorted(names), "error": repr(exc)})
tasks = sorted({p.task for p in library._prompts})
for model in job["models"]:
    engine, _, name = model.partition("/")
    for mode in job["modes"]:
        models = [] if model == "unknown" else [{"type": "main", "engine": engine, "model": name or None}]
        config = RailsConfig.parse_object({"models": models, "prompting_mode": mode})
        for task in tasks:
            try:
                chosen = library._prompts.index(library.get_prompt(config, task))
            except ValueError:
                chosen = None
            out["choices"].append([model, mode, task, chosen])
json.dump(out, sys.stdout)
"""


def reference(python: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """NeMo's renderings of ``entries`` and its choices over the probes, from ``python``."""
    job = {
        "entries": entries,
        "events": EVENTS,
        "instructions": INSTRUCTIONS,
        "sample": SAMPLE,
        "models": MODELS,
        "modes": MODES,
        "provided": sorted(PROVIDED),
        "values": VALUES,
    }
    done = subprocess.run(
        [python, "-c", REFERENCE],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    if done.returncode != 0:
        raise SystemExit(f"the NeMo reference failed:\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def ours(item: dict[str, Any], names: list[str], folder: Path) -> Any:
    """Our rendering of one entry, through a suite written as a user would: a NeMo config folder
    holding the entry as written (under its own task name) and a promptsuite.toml."""
    config = folder / "config"
    config.mkdir(parents=True)
    entry = {"prompts": [dict(item["prompt"], task=item["task"])]}
    (config / "prompts.yml").write_text(encode(entry), encoding="utf-8")  # JSON is YAML
    (config / "config.yml").write_text(
        encode(
            {
                "instructions": [{"type": "general", "content": INSTRUCTIONS}],
                "sample_conversation": SAMPLE,
                "prompting_mode": item["prompt"].get("mode", "standard"),
            }
        ),
        encoding="utf-8",
    )
    (folder / "promptsuite.toml").write_text(
        f'[template]\nnemo_config = "config"\ntask = "{item["task"]}"\n', encoding="utf-8"
    )
    suite = load_config(folder / "promptsuite.toml")
    hook = MANAGER.hook
    prompt = nemo_prompt(
        suite,
        suite.template,
        make_filter=lambda name: hook.pytest_promptsuite_make_jinja_filter(name=name),
        make_parser=lambda name, params: hook.pytest_promptsuite_make_output_parser(name=name, params=params),
    )
    row = {n: VALUES.get(n, f"<{n} value>") for n in names if n not in PROVIDED}
    return prompt.render({"input": "What is the refund policy?", **row, "events": EVENTS})


def _same(theirs: Any, mine: Any) -> bool:
    if isinstance(theirs, str) or isinstance(mine, str):
        return bool(theirs == mine)
    roles = {"bot": "assistant"}
    return [(roles.get(m["type"], m["type"]), m["content"]) for m in theirs] == [
        (m["role"], m["content"]) for m in mine
    ]


def main() -> None:
    """Print the counts: entries rendering as written, byte-equal to NeMo, selection agreement."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nemo-python", default=os.environ.get("PROMPTSUITE_NEMO_PYTHON", sys.executable))
    parser.add_argument(
        "--extra",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="also every prompt of the *.yml / *.yaml files under DIR (e.g. NeMo's examples)",
    )
    args = parser.parse_args()
    where = "import json, os, nemoguardrails; print(json.dumps(os.path.dirname(nemoguardrails.__file__)))"
    folder = Path(
        json.loads(subprocess.run([args.nemo_python, "-c", where], capture_output=True, text=True, check=True).stdout)
    )
    raw = list(library_prompts(folder)) + list(read_nemo_config(EXAMPLE).prompts)
    for extra in args.extra:
        for file in sorted(extra.rglob("*.y*ml")):
            data, node = read_yaml_file(file)
            raw += prompts_in(data, node, file, required=False)
    entries = [{"task": f"compat_{i}", "prompt": dict(p), "where": w} for i, (p, w) in enumerate(raw)]
    ref = reference(args.nemo_python, entries)
    rendered = equal = 0
    for item, theirs in zip(entries, ref["renders"], strict=True):
        with tempfile.TemporaryDirectory() as tmp:
            try:
                mine = ours(item, theirs["names"], Path(tmp))
            except PromptSuiteError as exc:
                print(f"  does not render: {item['where']}: {exc}")
                continue
        rendered += 1
        if theirs["ok"] and _same(theirs["prompt"], mine):
            equal += 1
        else:
            print(f"  differs from NeMo: {item['where']}")
    library = prompt_entries(list(library_prompts(folder)))
    agree = 0
    for model, mode, task, chosen in ref["choices"]:
        try:
            mine_index = library.index(select_nemo_prompt(library, task, model, mode, "library"))
        except PromptSuiteError:
            mine_index = None
        agree += mine_index == chosen
    files = len({w.rsplit(":", 1)[0] for _, w in raw})
    print(f"nemoguardrails {ref['version']}: {len(entries)} prompt entries in {files} files")
    print(f"  render as written (no conftest): {rendered} / {len(entries)}")
    print(f"  byte-equal to NeMo's rendering:   {equal} / {len(entries)}")
    print(
        f"  selection as NeMo's get_prompt:  {agree} / {len(ref['choices'])} probes "
        f"({len(MODELS)} model names x {len(MODES)} modes x tasks)"
    )


if __name__ == "__main__":
    main()
