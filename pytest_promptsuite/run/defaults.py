"""The built-in implementations of our hooks, registered ``trylast`` like a third party's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import pluggy


if TYPE_CHECKING:
    from pytest_promptsuite.checks.check_api import Check
    from pytest_promptsuite.checks.check_api import CheckScope
    from pytest_promptsuite.config.suite import ModelConfig
    from pytest_promptsuite.config.suite import SuiteConfig
    from pytest_promptsuite.config.suite import TemplateConfig
    from pytest_promptsuite.models.model_api import Model
    from pytest_promptsuite.prompts.files.renderers import Renderer
    from pytest_promptsuite.prompts.output_parsers import OutputParser
    from pytest_promptsuite.prompts.prompt_sources import PromptMakers
    from pytest_promptsuite.prompts.prompt_sources import PromptSource


hookimpl = pluggy.HookimplMarker("pytest")


@hookimpl(trylast=True)
def pytest_promptsuite_make_model(config: Any, spec: str, settings: ModelConfig, root: Path) -> Model:
    """Make a built-in model (``fake``, ``fake:RULES.json``, ``openai:MODEL``); an unknown spec raises."""
    from pytest_promptsuite.models.builtin_models import make_model

    return make_model(spec, settings=settings, root=root)


@hookimpl(trylast=True)
def pytest_promptsuite_make_check(
    name: str, params: dict[str, Any], base_dir: Path, scope: CheckScope | None
) -> Check | None:
    """Make a built-in check type (promptfoo's names); None for other names."""
    from pytest_promptsuite.checks.builtin_checks import make_builtin_check

    return make_builtin_check(name, params, base_dir=base_dir, scope=scope)


@hookimpl(trylast=True)
def pytest_promptsuite_make_prompt_source(
    suite: SuiteConfig, table: TemplateConfig, variant: str | None, model: ModelConfig, makers: PromptMakers
) -> PromptSource | None:
    """Make the source of a template file or of a task prompt by our rules; None for other tables."""
    from pytest_promptsuite.prompts.prompt_sources import core_prompt_source

    return core_prompt_source(suite, table, variant, model, makers)


@hookimpl(trylast=True)
def pytest_promptsuite_make_renderer(name: str, params: dict[str, Any]) -> Renderer | None:
    """Make a built-in renderer (``format``, ``delimiters``, ``jinja``, ``none``); None for other names."""
    from pytest_promptsuite.prompts.files.renderers import builtin_renderer

    return builtin_renderer(name, params)


@hookimpl(trylast=True)
def pytest_promptsuite_make_output_parser(name: str, params: dict[str, Any]) -> OutputParser | None:
    """Make a built-in output parser (``strip_prefix``, ``json``, NeMo's names); None for other names."""
    from pytest_promptsuite.prompts.output_parsers import builtin_output_parser

    return builtin_output_parser(name, params)


@hookimpl(trylast=True)
def pytest_promptsuite_make_jinja_filter(name: str) -> Callable[..., Any] | None:
    """Make a built-in Jinja filter (history filters, NeMo's ``indent``); None for other names."""
    from pytest_promptsuite.prompts.files.history_filters import builtin_filter

    return builtin_filter(name)
