"""OpenCompass/AISBench semantics as a default plugin: infer_cfg tables (also a table with no template), meta
templates, retrievers, render requests and ``promptsuite import opencompass``, each loaded when asked."""

from __future__ import annotations

import argparse
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


def _import(args: argparse.Namespace) -> int:
    from pytest_promptsuite.dialects.opencompass.import_opencompass import import_opencompass
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
