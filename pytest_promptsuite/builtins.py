"""The built-in implementations of our hooks: the models, checks, retrievers, renderers, output
parsers and Jinja filters we ship.

They register through the same hooks third parties implement (pluggy's eggsample ``lib.py``),
marked ``trylast`` so that a conftest or an installed plugin answers first. pytest-free, so the
``promptsuite`` command registers this module without importing pytest.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pluggy

from .checks import Check
from .checks import CheckScope
from .checks import make_builtin_check
from .models import Model
from .models import make_model
from .suite import ModelConfig
from .templates.filters import builtin_filter
from .templates.nemo.filters import nemo_filter
from .templates.nemo.parsers import nemo_output_parser
from .templates.parsers import OutputParser
from .templates.parsers import builtin_output_parser
from .templates.renderers import Renderer
from .templates.renderers import builtin_renderer
from .templates.retrievers import Retriever
from .templates.retrievers import builtin_retriever


hookimpl = pluggy.HookimplMarker("pytest")


@hookimpl(trylast=True)
def pytest_promptsuite_make_model(
    config: Any, spec: str, settings: ModelConfig, root: Path
) -> Model:
    """The built-in models (``fake``, ``fake:RULES.json``, ``openai:MODEL``); an unknown spec raises."""
    return make_model(spec, settings=settings, root=root)


@hookimpl(trylast=True)
def pytest_promptsuite_make_check(
    name: str, params: dict[str, Any], base_dir: Path, scope: CheckScope | None
) -> Check | None:
    """The built-in check types (promptfoo's names); None for other names."""
    return make_builtin_check(name, params, base_dir=base_dir, scope=scope)


@hookimpl(trylast=True)
def pytest_promptsuite_make_retriever(name: str, params: dict[str, Any]) -> Retriever | None:
    """The built-in retrievers (``ZeroRetriever``, ``FixKRetriever``, ...); None for other names."""
    return builtin_retriever(name, params)


@hookimpl(trylast=True)
def pytest_promptsuite_make_renderer(name: str, params: dict[str, Any]) -> Renderer | None:
    """The built-in renderers (``format``, ``delimiters``, ``jinja``, ``none``); None for other
    names. The ``jinja`` renderer gets its filter lookup from
    :func:`~pytest_promptsuite.templates.renderers.get_renderer` (``with_filters``)."""
    return builtin_renderer(name, params)


@hookimpl(trylast=True)
def pytest_promptsuite_make_output_parser(name: str, params: dict[str, Any]) -> OutputParser | None:
    """The built-in output parsers (``strip_prefix``, ``json``, NeMo's; NeMo's own semantics as
    ``nemo.NAME``); None for other names."""
    return builtin_output_parser(name, params) or nemo_output_parser(name, params)


@hookimpl(trylast=True)
def pytest_promptsuite_make_jinja_filter(name: str) -> Callable[..., Any] | None:
    """The built-in Jinja filters (history filters, NeMo's ``indent``); None for other names, so
    Jinja's own filter of that name, if any, applies. NeMo's filters answer as ``nemo.NAME``."""
    return builtin_filter(name) or nemo_filter(name)
