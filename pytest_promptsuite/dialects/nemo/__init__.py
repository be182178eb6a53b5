"""NeMo Guardrails semantics as a default plugin: task prompts under ``nemo_config`` or ``semantics = "nemo"``,
and NeMo's filters and output parsers under the names ``nemo.NAME`` (which NeMo prompts ask first)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import Any

import pluggy


if TYPE_CHECKING:
    from pytest_promptsuite.config.suite import SuiteConfig
    from pytest_promptsuite.config.suite import TemplateConfig
    from pytest_promptsuite.prompts.output_parsers import OutputParser
    from pytest_promptsuite.prompts.prompt_sources import PromptMakers
    from pytest_promptsuite.prompts.prompt_sources import PromptSource


#: The prefix under which NeMo prompts ask the hooks for a filter or an output parser.
NEMO_PREFIX = "nemo."

hookimpl = pluggy.HookimplMarker("pytest")


@hookimpl(trylast=True)
def pytest_promptsuite_make_jinja_filter(name: str) -> Callable[..., Any] | None:
    """Make NeMo's filter for ``nemo.NAME``; None for any other name."""
    if not name.startswith(NEMO_PREFIX):
        return None
    from pytest_promptsuite.dialects.nemo.nemo_filters import NEMO_FILTERS

    return NEMO_FILTERS.get(name[len(NEMO_PREFIX) :])


@hookimpl(trylast=True)
def pytest_promptsuite_make_output_parser(name: str, params: dict[str, Any]) -> OutputParser | None:
    """Make NeMo's output parser for ``nemo.NAME`` (they take no params); None for any other name."""
    if not name.startswith(NEMO_PREFIX):
        return None
    from pytest_promptsuite.dialects.nemo.nemo_parsers import NEMO_OUTPUT_PARSERS
    from pytest_promptsuite.prompts.pluggable import check_params

    short = name[len(NEMO_PREFIX) :]
    if short not in NEMO_OUTPUT_PARSERS:
        return None
    check_params("output parser", short, params, ())
    return NEMO_OUTPUT_PARSERS[short]


@hookimpl(trylast=True)
def pytest_promptsuite_make_prompt_source(
    suite: SuiteConfig, table: TemplateConfig, makers: PromptMakers
) -> PromptSource | None:
    """Make the source of a task prompt under NeMo's semantics (``nemo_config`` or ``semantics = "nemo"``,
    and a ``task``): selected by NeMo's rule, rendered in NeMo's context; None for any other table."""
    if table.task is None or (table.nemo_config is None and table.semantics != "nemo"):
        return None
    from pytest_promptsuite.dialects.nemo.nemo_prompt import nemo_prompt
    from pytest_promptsuite.prompts.prompt_sources import RowSource

    nemo = nemo_prompt(suite, table, make_filter=makers.filter, make_parser=makers.parser)
    return RowSource(nemo, frozenset(table.optional or ()), provides=nemo.provides)
