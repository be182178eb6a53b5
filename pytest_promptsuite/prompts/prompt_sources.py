"""Prompt sources: what a case sends when its ``[template]`` table is a task prompt (ours or NeMo's)
or a template file, loaded and compiled when made so that a mistake is an early ConfigError."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from pytest_promptsuite.config.suite import TemplateKind
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.formats.tomlio import line_of_key
from pytest_promptsuite.prompts.fields import TemplateReads
from pytest_promptsuite.prompts.files.history_filters import MakeFilter
from pytest_promptsuite.prompts.files.history_filters import builtin_filter
from pytest_promptsuite.prompts.files.renderers import MakeRenderer
from pytest_promptsuite.prompts.files.renderers import Renderer
from pytest_promptsuite.prompts.files.renderers import builtin_renderer
from pytest_promptsuite.prompts.files.renderers import get_renderer
from pytest_promptsuite.prompts.output_parsers import MakeParser
from pytest_promptsuite.prompts.output_parsers import builtin_output_parser
from pytest_promptsuite.prompts.template_row import case_row


if TYPE_CHECKING:
    from pytest_promptsuite.cases.prompt_case import PromptCase
    from pytest_promptsuite.config.suite import SuiteConfig
    from pytest_promptsuite.config.suite import TemplateConfig
    from pytest_promptsuite.dialects.nemo.nemo_prompt import NemoPrompt
    from pytest_promptsuite.dialects.promptfoo.node import NodeFilters
    from pytest_promptsuite.dialects.promptfoo.nunjucks import PromptfooChat
    from pytest_promptsuite.dialects.promptfoo.nunjucks import PromptfooRenderer
    from pytest_promptsuite.dialects.promptfoo.prompt_code import PromptFunction
    from pytest_promptsuite.prompts.core import Prompt
    from pytest_promptsuite.prompts.task_prompts import TaskPrompt


def load_template_file(config: SuiteConfig, relative: str, *, key: str = "template.template_file") -> str:
    """Read ``template_file = RELATIVE`` (inside the config's folder) byte for byte as UTF-8; errors
    name the line of ``key``, the setting that named it (``variants.v1.template_file``)."""
    path = config.resolve(relative, key=key)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{config.where(key)}: {key} = {relative!r}: cannot read {path}: {exc.strerror}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: the template file is not UTF-8 text: {exc}") from exc


@dataclass(frozen=True)
class StringTemplate:
    """A template string with its renderer and a name for errors (the file, or ``template``);
    ``origin`` is the file it is written in and the line it starts on (0: unknown)."""

    text: str
    renderer: Renderer
    name: str
    origin: tuple[Path | None, int] = (None, 0)
    key: str = "template.template_file"

    def render(self, row: Mapping[str, Any]) -> str:
        """Render the prompt for ``row``; a TemplateError names this template."""
        try:
            return self.renderer.render(self.text, row)
        except TemplateError as exc:
            raise TemplateError(f"{self.name}: {exc}") from exc

    def fields(self) -> TemplateReads:
        """Return what the template reads, as its renderer says (None from a renderer without
        ``fields``); a syntax error or an unknown filter is a ConfigError naming the file."""
        path, line = self.origin
        reads = getattr(self.renderer, "fields", None)
        try:  # a renderer's syntax errors are TemplateErrors (the jinja one compiles first)
            found = tuple(reads(self.text)) if callable(reads) else None
        except TemplateError as exc:
            place = f"{path}:{line}" if path is not None and line else (str(path) if path else self.name)
            raise ConfigError(f"{place}: {self.key}: {exc}") from exc
        return TemplateReads(self.key, found, path, line or (1 if path is not None else 0))


def string_template(
    config: SuiteConfig,
    template: TemplateConfig | None = None,
    *,
    make: MakeRenderer = builtin_renderer,
    make_filter: MakeFilter = builtin_filter,
    variant: str | None = None,
) -> StringTemplate | None:
    """Make the ``template_file`` (or inline ``template``) of a template table with its ``renderer``,
    None for a table of another kind; ``variant`` names the table in messages."""
    table = template if template is not None else config.template

    def where(key: str) -> str:
        return config.where(config.template_key(variant, key))

    if table.kind(path=config.path) is not TemplateKind.FILE:
        if table.renderer is not None:
            raise ConfigError(f"{where('renderer')}: template.renderer needs a 'template_file' or 'template'")
        return None
    if table.template_file is not None and table.template is not None:
        raise ConfigError(f"{where('template')}: [template] has both 'template_file' and 'template'; keep one")
    origin: tuple[Path | None, int]
    if table.template_file is not None:
        key = config.template_key(variant, "template_file")
        text = load_template_file(config, table.template_file, key=key)
        name, origin = table.template_file, (config.resolve(table.template_file, key=key), 1)
    else:
        assert table.template is not None
        key = config.template_key(variant, "template")
        text, name, origin = table.template, "template", (config.path, line_of_key(config.lines, key) or 0)
    renderer: Renderer
    try:
        if table.semantics == "promptfoo":
            renderer = _promptfoo_renderer(config, table, make_filter, variant)
        else:
            renderer = get_renderer(table.renderer, make=make, make_filter=make_filter)
    except ConfigError as exc:
        raise ConfigError(f"{where('renderer')}: {exc}") from exc
    return StringTemplate(text, renderer, name, origin=origin, key=key)


def _promptfoo_renderer(
    config: SuiteConfig, table: TemplateConfig, make_filter: MakeFilter, variant: str | None
) -> PromptfooRenderer:
    """Make the renderer of a template (a file, a chat message, a prompt function's answer) under
    ``semantics = "promptfoo"`` (Nunjucks' rules), with the table's ``nunjucks_filters``, in the suite's folder."""
    if table.renderer not in (None, "jinja"):
        raise ConfigError(f"semantics = 'promptfoo' renders with Nunjucks' rules; drop renderer = {table.renderer!r}")
    from pytest_promptsuite.dialects.promptfoo.nunjucks import PromptfooRenderer
    from pytest_promptsuite.dialects.promptfoo.prompt_code import transform_vars

    return PromptfooRenderer(make_filter, _node_filters(config, table, variant), config.root, transform_vars)


def _promptfoo_chat(
    config: SuiteConfig, table: TemplateConfig, make_filter: MakeFilter, variant: str | None
) -> PromptfooChat:
    """Make a promptfoo chat prompt: the messages of ``task`` in ``task_prompts``, rendered under promptfoo's rules."""
    from pytest_promptsuite.dialects.promptfoo.nunjucks import PromptfooChat
    from pytest_promptsuite.prompts.prompts_yml import check_message
    from pytest_promptsuite.prompts.prompts_yml import prompt_entries
    from pytest_promptsuite.prompts.prompts_yml import read_prompts

    key = config.template_key(variant, "task_prompts")
    assert table.task_prompts is not None and table.task is not None  # prompt_source checked both
    entries = prompt_entries(read_prompts(config.resolve(table.task_prompts, key=key), root=config.root))
    entry = next((e for e in entries if e.task == table.task), None)
    if entry is None or "messages" not in entry.raw:
        raise ConfigError(f"{config.where(key)}: {table.task_prompts} has no messages for task {table.task!r}")
    messages = []
    for i, message in enumerate(entry.raw["messages"]):
        role = check_message(message, f"{entry.where}: messages[{i}]")
        if role is None:
            raise ConfigError(f"{entry.where}: messages[{i}]: a promptfoo chat message is {{type, content}}")
        messages.append((role, str(message["content"])))
    return PromptfooChat(
        tuple(messages), _promptfoo_renderer(config, table, make_filter, variant), entry.where, table.task
    )


#: The Node.js filter processes by their files: the variants of a suite share one.
_NODE_FILTERS: dict[tuple[tuple[str, Path], ...], NodeFilters] = {}


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


@dataclass(frozen=True)
class PromptSource:
    """What each case sends when its ``[template]`` table is a task prompt, a string template or a
    promptfoo prompt function (one of the three is set)."""

    task_prompt: TaskPrompt | NemoPrompt | PromptfooChat | None = None
    string: StringTemplate | None = None
    function: PromptFunction | None = None
    #: ``[template] optional``: fields a case may leave out; they render empty.
    optional: frozenset[str] = frozenset()
    #: Names this source provides itself (a NeMo context's variables): never missing from a row.
    provides: frozenset[str] = field(default_factory=frozenset)

    def fields(self) -> list[TemplateReads]:
        """Return what this source's template reads, for the static check."""
        if self.string is not None:
            return [replace(self.string.fields(), provides=self.provides)]
        if self.function is not None:  # what code reads is known once it runs
            return [TemplateReads("template.prompt_function", None, self.function.path, 1)]
        assert self.task_prompt is not None
        return [self.task_prompt.template_reads(self.provides)]

    def prompt(self, case: PromptCase) -> Prompt:
        """Render the prompt of ``case``: a string, or messages; TemplateError naming the prompt or
        file and the variable when it does not render."""
        if self.function is not None:
            return self.function.prompt(case)
        row = case_row(case)
        for name in self.optional:
            row.setdefault(name, "")
        if self.task_prompt is not None:
            return self.task_prompt.render(row)
        assert self.string is not None
        return self.string.render(row)

    @property
    def params(self) -> dict[str, Any]:
        """Request params the task prompt sets (``stop``, ``max_tokens``), over the model's."""
        return self.task_prompt.params if self.task_prompt is not None else {}

    def parse_output(self, text: str) -> str:
        """Return the output the checks see (through the task prompt's ``output_parser``)."""
        return self.task_prompt.parse_output(text) if self.task_prompt is not None else text


def prompt_source(
    config: SuiteConfig,
    table: TemplateConfig | None = None,
    *,
    model: str | None = None,
    make_renderer: MakeRenderer = builtin_renderer,
    make_filter: MakeFilter = builtin_filter,
    make_parser: MakeParser = builtin_output_parser,
    variant: str | None = None,
) -> PromptSource | None:
    """Make the prompt source of a ``[template]`` table (a variant's, named by ``variant``), None
    for an infer_cfg table; the task prompt is selected for ``prompt_model``, else ``model``.
    Loads and compiles everything now: any mistake is a ConfigError before a case runs."""
    table = table if table is not None else config.template

    def where(key: str) -> str:
        return config.where(config.template_key(variant, key))

    optional = frozenset(table.optional or ())
    if table.kind(path=config.path) is TemplateKind.TASK_PROMPTS:
        from pytest_promptsuite.prompts.task_prompts import load_task_prompts  # YAML and Jinja2 load here

        if (table.nemo_config is not None or table.semantics == "nemo") and table.task is not None:
            from pytest_promptsuite.dialects.nemo.nemo_prompt import nemo_prompt

            nemo = nemo_prompt(config, table, make_filter=make_filter, make_parser=make_parser)
            return PromptSource(task_prompt=nemo, optional=optional, provides=nemo.provides)
        if table.task_prompts is None or table.task is None:
            missing = "task_prompts" if table.task_prompts is None else "task"
            raise ConfigError(f"{where('task_prompts')}: [template] uses task prompts but has no {missing!r}")
        key = config.template_key(variant, "task_prompts")
        if not config.resolve(table.task_prompts, key=key).exists():
            raise ConfigError(f"{config.where(key)}: {key} = {table.task_prompts!r}: no such file or folder")
        if table.semantics == "promptfoo":
            return PromptSource(task_prompt=_promptfoo_chat(config, table, make_filter, variant), optional=optional)
        if table.prompt_model is not None:
            model = table.prompt_model
        prompts = load_task_prompts(config, table.task_prompts, make_filter=make_filter, make_parser=make_parser)
        try:
            chosen = prompts.select(table.task, model, table.mode)
        except ConfigError as exc:
            raise ConfigError(f"{where('task')}: {exc}") from exc
        return PromptSource(task_prompt=chosen, optional=optional)
    if table.kind(path=config.path) is TemplateKind.FUNCTION:
        function = _prompt_function(config, table, make_filter, variant)
        return PromptSource(function=function, optional=optional)
    for key in ("mode", "nemo_config", "semantics", "prompt_model"):
        if key == "semantics" and table.semantics == "promptfoo" and table.kind() is TemplateKind.FILE:
            continue  # promptfoo's rules for a template file (string_template)
        if key == "semantics" and table.semantics == "opencompass" and table.kind() is TemplateKind.INFER_CFG:
            continue  # OpenCompass's rules for an infer_cfg (InferSetup)
        if getattr(table, key) is not None:
            raise ConfigError(f"{where(key)}: template.{key} applies to task prompts; add task_prompts and task")
    if table.nunjucks_filters and not (table.semantics == "promptfoo" and table.kind() is TemplateKind.FILE):
        raise ConfigError(f"{where('nunjucks_filters')}: template.nunjucks_filters applies to semantics = 'promptfoo'")
    string = string_template(config, table, make=make_renderer, make_filter=make_filter, variant=variant)
    return PromptSource(string=string, optional=optional) if string is not None else None


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
    from pytest_promptsuite.dialects.promptfoo.nunjucks import file_and_function
    from pytest_promptsuite.dialects.promptfoo.prompt_code import PromptFunction

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
        renderer = _promptfoo_renderer(config, table, make_filter, variant)
    except ConfigError as exc:
        raise ConfigError(f"{config.where(key)}: {exc}") from exc
    return PromptFunction(path, function, written, renderer, dict(table.prompt_context or {}), config.root)
