"""Prompt sources: what a case sends when its ``[template]`` table is a task prompt or a template
file, instead of an OpenCompass ``infer_cfg`` (which :mod:`.case_prompts` renders).

Which kind a table is, is decided by :meth:`TemplateConfig.kind` in the suite config. Everything is
loaded and compiled when the source is made (while the suite's prompts are built, at collection),
so any mistake is a ConfigError before a case runs.

Template files are read byte for byte relative to the suite config, and a path that leaves the
suite's folder (``../x.txt``, or a symlink pointing outside) is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any

from ..errors import ConfigError
from ..errors import TemplateError
from ..suite import TemplateKind
from .filters import builtin_filter
from .jinja import MakeFilter
from .nemo.prompt import NemoPrompt
from .nemo.prompt import nemo_prompt
from .nemo.prompt import nemo_semantics
from .parsers import MakeParser
from .parsers import builtin_output_parser
from .renderers import MakeRenderer
from .renderers import Renderer
from .renderers import builtin_renderer
from .renderers import get_renderer
from .row import task_row
from .task_prompts import TaskPrompt
from .task_prompts import load_task_prompts


if TYPE_CHECKING:
    from ..cases import PromptCase
    from ..suite import SuiteConfig
    from ..suite import TemplateConfig
    from .prompt import Prompt


__all__ = ["PromptSource", "StringTemplate", "load_template_file", "prompt_source", "string_template"]


def load_template_file(config: SuiteConfig, relative: str) -> str:
    """The text of ``template_file = RELATIVE``, byte for byte (UTF-8, no newline translation).

    The path is resolved against the config's folder with links followed, and must stay inside
    it (ConfigError otherwise, from :meth:`SuiteConfig.resolve`).
    """
    path = config.resolve(relative, key="template.template_file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"{config.path}: template.template_file = {relative!r}: cannot read {path}: {exc.strerror}"
        ) from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: the template file is not UTF-8 text: {exc}") from exc


@dataclass(frozen=True)
class StringTemplate:
    """A template string with its renderer and a name for errors (the file, or ``template``)."""

    text: str
    renderer: Renderer
    name: str

    def render(self, row: Mapping[str, Any]) -> str:
        """The prompt for ``row``; a TemplateError names this template."""
        try:
            return self.renderer.render(self.text, row)
        except TemplateError as exc:
            raise TemplateError(f"{self.name}: {exc}") from exc


def string_template(
    config: SuiteConfig,
    template: TemplateConfig | None = None,
    *,
    make: MakeRenderer = builtin_renderer,
    make_filter: MakeFilter = builtin_filter,
) -> StringTemplate | None:
    """``template_file`` (or an inline ``template`` string) of a template table with its
    ``renderer``; None when the table is not of the template-file kind. ``template`` defaults to
    ``config.template``; ``make`` and ``make_filter`` are the renderer and Jinja filter lookups."""
    table = template if template is not None else config.template
    if table.kind(path=config.path) is not TemplateKind.FILE:
        if table.renderer is not None:
            raise ConfigError(f"{config.path}: template.renderer needs a 'template_file' or 'template'")
        return None
    if table.template_file is not None and table.template is not None:
        raise ConfigError(f"{config.path}: [template] has both 'template_file' and 'template'; keep one")
    if table.template_file is not None:
        text = load_template_file(config, table.template_file)
        name = table.template_file
    else:
        assert table.template is not None
        text, name = table.template, "template"
    try:
        renderer = get_renderer(table.renderer, make=make, make_filter=make_filter)
    except ConfigError as exc:
        raise ConfigError(f"{config.path}: {exc}") from exc
    return StringTemplate(text, renderer, name)


@dataclass(frozen=True)
class PromptSource:
    """What each case sends when its ``[template]`` table (after the variant) uses a task prompt
    or a string template: one of the two is set."""

    task_prompt: TaskPrompt | NemoPrompt | None = None
    string: StringTemplate | None = None

    def prompt(self, case: PromptCase) -> Prompt:
        """The prompt of ``case``: a string, or OpenAI-role messages (task prompts' ``messages``).
        TemplateError (naming the prompt or file, and the variable) when it does not render."""
        row = task_row(case)
        if self.task_prompt is not None:
            return self.task_prompt.render(row)
        assert self.string is not None
        return self.string.render(row)

    @property
    def params(self) -> dict[str, Any]:
        """Request params the task prompt sets (``stop``, ``max_tokens``); merge over the model's."""
        return self.task_prompt.params if self.task_prompt is not None else {}

    def parse_output(self, text: str) -> str:
        """The output the checks see (the task prompt's ``output_parser``); may raise
        :class:`OutputParserError`, which should fail the case, not error it."""
        return self.task_prompt.parse_output(text) if self.task_prompt is not None else text


def prompt_source(
    config: SuiteConfig,
    table: TemplateConfig | None = None,
    *,
    model: str | None = None,
    make_renderer: MakeRenderer = builtin_renderer,
    make_filter: MakeFilter = builtin_filter,
    make_parser: MakeParser = builtin_output_parser,
) -> PromptSource | None:
    """The prompt source of a ``[template]`` table (default ``config.template``; pass
    :meth:`SuiteConfig.template_for` for a variant), or None when it is an infer_cfg (the
    :class:`CasePrompts` engine's business). ConfigError when it mixes kinds.

    Loads and compiles everything now, so any mistake is a ConfigError before a case runs; the
    task prompt is selected for ``table.prompt_model``, else ``model`` (the model's spec), and
    ``table.mode``; under NeMo semantics by NeMo's rules (:mod:`.nemo`).
    """
    table = table if table is not None else config.template
    if table.kind(path=config.path) is TemplateKind.TASK_PROMPTS:
        if nemo_semantics(table) and table.task is not None:
            nemo = nemo_prompt(config, table, make_filter=make_filter, make_parser=make_parser)
            return PromptSource(task_prompt=nemo)
        if table.task_prompts is None or table.task is None:
            missing = "task_prompts" if table.task_prompts is None else "task"
            raise ConfigError(f"{config.path}: [template] uses task prompts but has no {missing!r}")
        if table.prompt_model is not None:
            model = table.prompt_model
        prompts = load_task_prompts(
            config, table.task_prompts, make_filter=make_filter, make_parser=make_parser
        )
        return PromptSource(task_prompt=prompts.select(table.task, model, table.mode))
    for key in ("mode", "nemo_config", "semantics", "prompt_model"):
        if getattr(table, key) is not None:
            raise ConfigError(f"{config.path}: template.{key} applies to task prompts; add task_prompts and task")
    string = string_template(config, table, make=make_renderer, make_filter=make_filter)
    return PromptSource(string=string) if string is not None else None
