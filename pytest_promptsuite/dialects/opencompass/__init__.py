"""OpenCompass/AISBench semantics as a default plugin: infer_cfg tables (also a table with no template), meta
templates, retrievers, render requests and ``promptsuite import opencompass``, each loaded when asked."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import pluggy


if TYPE_CHECKING:
    from pytest_promptsuite.config.suite import ModelConfig
    from pytest_promptsuite.config.suite import SuiteConfig
    from pytest_promptsuite.config.suite import TemplateConfig
    from pytest_promptsuite.dialects.opencompass.retrievers import Retriever
    from pytest_promptsuite.prompts.prompt_sources import PromptMakers
    from pytest_promptsuite.prompts.prompt_sources import PromptSource


hookimpl = pluggy.HookimplMarker("pytest")


@hookimpl(trylast=True)
def pytest_promptsuite_make_prompt_source(
    suite: SuiteConfig, table: TemplateConfig, variant: str | None, model: ModelConfig, makers: PromptMakers
) -> PromptSource | None:
    """Make the source of an infer_cfg table (``prompt_template``, ``ice_template``, or none); None otherwise."""
    from pytest_promptsuite.config.suite import TemplateKind

    if table.kind(path=suite.path) is not TemplateKind.INFER_CFG:
        return None
    from pytest_promptsuite.dialects.opencompass.infer_cfg import InferCfgSource

    return InferCfgSource.from_table(suite, table, variant, model, makers)


@hookimpl(trylast=True)
def pytest_promptsuite_make_retriever(name: str, params: dict[str, Any]) -> Retriever | None:
    """Make a built-in retriever (``ZeroRetriever``, ``FixKRetriever``, ...); None for other names."""
    from pytest_promptsuite.dialects.opencompass.retrievers import builtin_retriever

    return builtin_retriever(name, params)


@hookimpl(trylast=True)
def pytest_promptsuite_render_request(request: Any) -> dict[str, Any]:
    """Render a request of the templates guide (prompt and ice templates, a retriever, a meta template)."""
    from pytest_promptsuite.dialects.opencompass.render_request import render_request

    return render_request(request)


#: The ``-X`` option that marks the command run again without the key variables.
_RUN_AGAIN = "promptsuite-without-keys"


def _is_the_command() -> bool:
    """Tell whether this process is the ``promptsuite import opencompass`` command, so its ``sys.argv`` is
    the import's own (not a program that called ``main([...])``)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    started = getattr(spec, "name", None) == "pytest_promptsuite.__main__" or Path(sys.argv[0]).name == "promptsuite"
    return started and sys.argv[1:3] == ["import", "opencompass"]


def _without_keys() -> None:
    """Run this command again with only the variables it needs (POSIX), before any config runs: the config's
    code can read its importer's environment (``/proc/PID/environ``), and after exec it holds none of the
    old one. A call from Python is left as it is (see the security page)."""
    from pytest_promptsuite.dialects.opencompass.execute import kept_environment

    kept = kept_environment(os.environ)
    again = _RUN_AGAIN in sys._xoptions  # never a third time, whatever startup adds to the environment
    if len(kept) < len(os.environ) and not again and os.name == "posix" and sys.executable and _is_the_command():
        sys.stdout.flush()
        sys.stderr.flush()
        command = [sys.executable, "-X", _RUN_AGAIN, "-m", "pytest_promptsuite", *sys.argv[1:]]
        os.execve(sys.executable, command, kept)


def _import(args: argparse.Namespace) -> int:
    from pytest_promptsuite.dialects.opencompass.import_opencompass import import_opencompass

    _without_keys()
    from pytest_promptsuite.safety.scrub import printable

    given = {"model": args.model, "data": args.data, "train": args.train, "root": args.config_root}
    paths = {key: Path(value) if value else None for key, value in given.items()}
    print(printable(import_opencompass(args.config, out=args.out, **paths).report()))
    return 0


@hookimpl(trylast=True)
def pytest_promptsuite_add_importer(importers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``promptsuite import opencompass``."""
    command = importers.add_parser(
        "opencompass", help="an OpenCompass dataset config (.py), run as OpenCompass runs it"
    )
    command.add_argument("config", type=Path, metavar="CONFIG.py")
    command.add_argument(
        "--model", metavar="MODEL.py", help="an OpenCompass model config: its meta template and settings"
    )
    command.add_argument("--data", metavar="FILE", help="rows to map to cases: JSONL, CSV or a dataset folder on disk")
    command.add_argument("--train", metavar="FILE", help="rows for in-context examples (JSONL or CSV)")
    command.add_argument(
        "--config-root",
        metavar="DIR",
        help="the folder base configs must lie in (default: the nearest 'configs' folder above the config, "
        "else its folder)",
    )
    command.add_argument("--out", type=Path, required=True, metavar="DIR", help="a new or empty folder")
    command.set_defaults(run=_import)
