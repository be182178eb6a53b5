"""The built-in implementations of our hooks: the models, checks and retrievers we ship.

They register through the same hooks third parties implement (pluggy's eggsample ``lib.py``),
marked ``trylast`` so that a conftest or an installed plugin answers first. pytest-free, so the
``promptsuite`` command registers this module without importing pytest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pluggy

from .checks import Check
from .checks import make_builtin_check
from .models import Model
from .models import make_model
from .suite import ModelConfig
from .templates.retrievers import Retriever
from .templates.retrievers import builtin_retriever


hookimpl = pluggy.HookimplMarker("pytest")


@hookimpl(trylast=True)
def pytest_promptsuite_make_model(
    config: Any, spec: str, settings: ModelConfig, root: Path
) -> Model:
    return make_model(spec, settings=settings, root=root)


@hookimpl(trylast=True)
def pytest_promptsuite_make_check(name: str, params: dict[str, Any], base_dir: Path) -> Check | None:
    return make_builtin_check(name, params, base_dir=base_dir)


@hookimpl(trylast=True)
def pytest_promptsuite_make_retriever(name: str, params: dict[str, Any]) -> Retriever | None:
    """The built-in retrievers (``ZeroRetriever``, ``FixKRetriever``, ...); None for other names."""
    return builtin_retriever(name, params)
