"""promptfoo semantics as a default plugin: template files and chat prompts under Nunjucks' rules, prompt
functions, the code asserts' runtime and ``promptsuite import promptfoo``, each loaded when asked."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pluggy


if TYPE_CHECKING:
    from pytest_promptsuite.config.suite import SuiteConfig
    from pytest_promptsuite.config.suite import TemplateConfig
    from pytest_promptsuite.prompts.prompt_sources import PromptMakers
    from pytest_promptsuite.prompts.prompt_sources import PromptSource


hookimpl = pluggy.HookimplMarker("pytest")


@hookimpl(trylast=True)
def pytest_promptsuite_make_prompt_source(
    suite: SuiteConfig, table: TemplateConfig, variant: str | None, makers: PromptMakers
) -> PromptSource | None:
    """Make the source of a promptfoo template file or chat prompt (``semantics = "promptfoo"``) or of a prompt
    function; None for any other table."""
    from pytest_promptsuite.config.suite import TemplateKind

    kind = table.kind(path=suite.path)
    if kind is not TemplateKind.FUNCTION and not (
        table.semantics == "promptfoo" and kind in (TemplateKind.FILE, TemplateKind.TASK_PROMPTS)
    ):
        return None
    from pytest_promptsuite.dialects.promptfoo.promptfoo_prompts import promptfoo_source

    return promptfoo_source(suite, table, variant, makers)


#: The modules that keep what a run's code gave (each has ``end_run``), loaded only when a suite used them.
_RUN_STATE = ("prompt_code", "code_asserts", "promptfoo_prompts")


@hookimpl(trylast=True)
def pytest_unconfigure() -> None:
    """End what this run's promptfoo code kept (memos, loaded modules, Node.js processes): the next run in
    this process (pytester's, an IDE's) reads every file afresh."""
    for name in _RUN_STATE:
        module = sys.modules.get(f"{__name__}.{name}")
        if module is not None:
            module.end_run()


def _import(args: argparse.Namespace) -> int:
    from pytest_promptsuite.dialects.promptfoo.import_promptfoo import import_promptfoo
    from pytest_promptsuite.dialects.promptfoo.refusals import Refused
    from pytest_promptsuite.safety.scrub import printable
    from pytest_promptsuite.safety.scrub import register

    register(os.environ.get("OPENAI_API_KEY"))
    try:
        result = import_promptfoo(args.config, out=args.out, slice_key=args.slice_key)
    except Refused as exc:  # a feature the import does not carry: one line, exit 2, nothing written
        print(printable(" ".join(str(exc).split())), file=sys.stderr)
        return 2
    print(printable(result.report()))
    return 0


@hookimpl(trylast=True)
def pytest_promptsuite_add_importer(importers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``promptsuite import promptfoo``."""
    command = importers.add_parser("promptfoo", help="a promptfooconfig.yaml")
    command.add_argument("config", type=Path, metavar="CONFIG.yaml")
    command.add_argument("--slice-key", metavar="KEY", help="the metadata key whose value is each case's slice")
    command.add_argument("--out", type=Path, required=True, metavar="DIR", help="a new or empty folder")
    command.set_defaults(run=_import)
