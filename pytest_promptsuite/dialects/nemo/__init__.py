"""NeMo Guardrails' filters and output parsers as a default plugin: our hooks answer them under the
names ``nemo.NAME``, which NeMo prompts ask first, so a conftest can replace one for them alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import Any

import pluggy


if TYPE_CHECKING:
    from pytest_promptsuite.prompts.output_parsers import OutputParser


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
