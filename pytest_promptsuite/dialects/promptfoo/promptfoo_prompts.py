"""The prompt sources of promptfoo suites (``semantics = "promptfoo"``): template files and chat prompts
rendered under Nunjucks' rules, and prompt functions called as each case renders."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_promptsuite.config.suite import TemplateKind
from pytest_promptsuite.dialects.promptfoo.nunjucks import PromptfooChat
from pytest_promptsuite.dialects.promptfoo.nunjucks import PromptfooRenderer
from pytest_promptsuite.dialects.promptfoo.nunjucks import file_and_function
from pytest_promptsuite.dialects.promptfoo.prompt_code import PromptFunction
from pytest_promptsuite.dialects.promptfoo.prompt_code import transform_vars
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.prompts.fields import TemplateReads
from pytest_promptsuite.prompts.files.history_filters import MakeFilter
from pytest_promptsuite.prompts.prompt_sources import PromptMakers
from pytest_promptsuite.prompts.prompt_sources import PromptSource
from pytest_promptsuite.prompts.prompt_sources import RowSource
from pytest_promptsuite.prompts.prompt_sources import string_template
from pytest_promptsuite.prompts.prompt_sources import task_prompts_path


if TYPE_CHECKING:
    from pytest_promptsuite.cases.prompt_case import PromptCase
    from pytest_promptsuite.config.suite import SuiteConfig
    from pytest_promptsuite.config.suite import TemplateConfig
    from pytest_promptsuite.dialects.promptfoo.node import NodeFilters
    from pytest_promptsuite.prompts.core import Prompt


def promptfoo_source(
    suite: SuiteConfig, table: TemplateConfig, variant: str | None, makers: PromptMakers
) -> PromptSource:
    """Make the source of a promptfoo table: a template file, a chat prompt (``task_prompts`` + ``task``) or a
    prompt function; ConfigError naming the key for a table promptfoo's rules do not make."""
    optional = frozenset(table.optional or ())
    kind = table.kind(path=suite.path)
    if kind is TemplateKind.FUNCTION:
        return FunctionSource(_prompt_function(suite, table, makers.filter, variant), optional)
    if kind is TemplateKind.TASK_PROMPTS:
        return RowSource(_chat(suite, table, makers.filter, variant), optional)
    suite.refuse_keys_of_other_kinds(table, variant)

    def renderer() -> PromptfooRenderer:
        return _renderer(suite, table, makers.filter, variant)

    string = string_template(suite, table, makers=makers, variant=variant, make_renderer=renderer)
    assert string is not None  # the plugin makes promptfoo's template files, chat prompts and functions only
    return RowSource(string, optional)


@dataclass(frozen=True)
class FunctionSource(PromptSource):
    """The source of a prompt function: code makes each case's prompt as the case runs (collection does
    not render it: the code would run twice, and a failure is that case's error, as in promptfoo)."""

    function: PromptFunction
    optional: frozenset[str] = frozenset()
    made_by_code: bool = True

    def fields(self) -> list[TemplateReads]:
        """Say that what the code reads is known once it runs."""
        return [TemplateReads("template.prompt_function", None, self.function.path, 1)]

    def prompt(self, case: PromptCase) -> Prompt:
        """Call the function for ``case``: its text, or its chat messages."""
        return self.function.prompt(case)


def _renderer(
    config: SuiteConfig, table: TemplateConfig, make_filter: MakeFilter, variant: str | None
) -> PromptfooRenderer:
    """Make the renderer of a template (a file, a chat message, a prompt function's answer) under
    ``semantics = "promptfoo"`` (Nunjucks' rules), with the table's ``nunjucks_filters``, in the suite's folder."""
    if table.renderer not in (None, "jinja"):
        raise ConfigError(f"semantics = 'promptfoo' renders with Nunjucks' rules; drop renderer = {table.renderer!r}")
    return PromptfooRenderer(make_filter, _node_filters(config, table, variant), config.root, transform_vars)


def _chat(config: SuiteConfig, table: TemplateConfig, make_filter: MakeFilter, variant: str | None) -> PromptfooChat:
    """Make a promptfoo chat prompt: the messages of ``task`` in ``task_prompts``, rendered under promptfoo's rules."""
    from pytest_promptsuite.prompts.prompts_yml import check_message
    from pytest_promptsuite.prompts.prompts_yml import prompt_entries
    from pytest_promptsuite.prompts.prompts_yml import read_prompts

    path = task_prompts_path(config, table, variant)
    key = config.template_key(variant, "task_prompts")
    entries = prompt_entries(read_prompts(path, root=config.root))
    entry = next((e for e in entries if e.task == table.task), None)
    if entry is None or "messages" not in entry.raw:
        raise ConfigError(f"{config.where(key)}: {table.task_prompts} has no messages for task {table.task!r}")
    messages = []
    for i, message in enumerate(entry.raw["messages"]):
        role = check_message(message, f"{entry.where}: messages[{i}]")
        if role is None:
            raise ConfigError(f"{entry.where}: messages[{i}]: a promptfoo chat message is {{type, content}}")
        messages.append((role, str(message["content"])))
    assert table.task is not None  # task_prompts_path checked it
    return PromptfooChat(tuple(messages), _renderer(config, table, make_filter, variant), entry.where, table.task)


#: The Node.js filter processes of this run by their files: the variants of a suite share one.
_NODE_FILTERS: dict[tuple[tuple[str, Path], ...], NodeFilters] = {}


def end_run() -> None:
    """End this run's Nunjucks filter processes (their modules with them) and forget them."""
    for filters in _NODE_FILTERS.values():
        filters.close()
    _NODE_FILTERS.clear()


def _node_filters(config: SuiteConfig, table: TemplateConfig, variant: str | None) -> NodeFilters | None:
    """Return the ``[template] nunjucks_filters`` of a promptfoo template, each file resolved in the suite."""
    if not table.nunjucks_filters:
        return None
    from pytest_promptsuite.dialects.promptfoo.node import NodeFilters

    key = config.template_key(variant, "nunjucks_filters")
    files = tuple(
        sorted(
            (name, config.resolve(path.removeprefix("file://"), key=key))
            for name, path in table.nunjucks_filters.items()
        )
    )
    if files not in _NODE_FILTERS:
        _NODE_FILTERS[files] = NodeFilters(dict(files))
    return _NODE_FILTERS[files]


def _prompt_function(
    config: SuiteConfig, table: TemplateConfig, make_filter: MakeFilter, variant: str | None
) -> PromptFunction:
    """Make the ``[template] prompt_function`` of a promptfoo suite: its file (inside the suite's folder)
    and function, and the renderer of what it returns."""
    key = config.template_key(variant, "prompt_function")
    written = table.prompt_function
    assert written is not None
    if table.semantics != "promptfoo":
        raise ConfigError(f'{config.where(key)}: {key} is promptfoo\'s: add semantics = "promptfoo"')
    for other in ("mode", "nemo_config", "prompt_model", "renderer"):
        if getattr(table, other) is not None:
            raise ConfigError(f"{config.where(config.template_key(variant, other))}: {other} does not apply to {key}")
    file, function = file_and_function(written)
    if not file.lower().endswith((".js", ".cjs", ".mjs", ".py")):
        raise ConfigError(
            f"{config.where(key)}: {key} = {written!r}: a prompt function is FILE.js, FILE.cjs, FILE.mjs or FILE.py"
            " (optionally :NAME)"
        )
    path = config.resolve(file, key=key)
    if not path.is_file():
        raise ConfigError(f"{config.where(key)}: {key} = {written!r}: no such file {path}")
    try:
        renderer = _renderer(config, table, make_filter, variant)
    except ConfigError as exc:
        raise ConfigError(f"{config.where(key)}: {exc}") from exc
    return PromptFunction(path, function, written, renderer, dict(table.prompt_context or {}), config.root)
