"""Prompt sources: what the cases of one ``[template]`` table send, made by the ``make_prompt_source`` hook;
the core's own are template files and task prompts by our rules (the dialects add theirs)."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import Protocol

from pytest_promptsuite.config.suite import TemplateKind
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.formats.tomlio import line_of_key
from pytest_promptsuite.prompts.fields import FieldRead
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
    from pytest_promptsuite.config.suite import ModelConfig
    from pytest_promptsuite.config.suite import SuiteConfig
    from pytest_promptsuite.config.suite import TemplateConfig
    from pytest_promptsuite.prompts.core import Prompt


@dataclass(frozen=True)
class PromptMakers:
    """The ``make_*`` hooks a prompt source builds its parts with: renderers, Jinja filters, output
    parsers and in-context example retrievers (``retriever(name=..., params=...)``; None: the built-ins)."""

    renderer: MakeRenderer = builtin_renderer
    filter: MakeFilter = builtin_filter
    parser: MakeParser = builtin_output_parser
    retriever: Callable[..., Any] | None = None


#: The built-in ``make_*`` answers (a suite's run passes the hooks instead).
BUILTIN_MAKERS = PromptMakers()


class PromptSource:
    """What the cases of one ``[template]`` table (a variant's) send: one prompt a case by default.

    A source that sends more (the turns of a multi-turn case, one prompt per label) overrides
    :meth:`follow_up`, :meth:`known_requests` and :meth:`label_prompts`.
    """

    #: ``[template] optional``: fields a case may leave out; they render empty.
    optional: frozenset[str] = frozenset()
    #: True when code makes each prompt as its case runs: collection does not render it.
    made_by_code: bool = False

    @property
    def ppl(self) -> bool:
        """Tell whether each case scores one prompt per label (OpenCompass's ``ppl`` inferencer)."""
        return False

    def fields(self) -> list[TemplateReads]:
        """Return what this source's templates read, for the static check."""
        raise NotImplementedError

    def prompt(self, case: PromptCase) -> Prompt:
        """Render the (first) prompt ``case`` sends; TemplateError naming the template and variable."""
        raise NotImplementedError

    @property
    def params(self) -> dict[str, Any]:
        """Give the request params the prompt sets (a task prompt's ``stop``); they override the model's."""
        return {}

    @property
    def default_params(self) -> dict[str, Any]:
        """Give the request params the prompt implies (a meta template's ``stop``); the model's override them."""
        return {}

    def parse_output(self, text: str) -> str:
        """Return the output the checks see (through an ``output_parser``, if the source has one)."""
        return text

    def label_prompts(self, case: PromptCase) -> list[tuple[str, Prompt]]:
        """Render each label and the prompt it scores (``ppl`` sources only)."""
        raise TemplateError(f"case {case.case_id!r}: this [template] does not score labels")

    def follow_up(self, case: PromptCase, replies: Sequence[str]) -> Prompt | None:
        """Render the next prompt of ``case`` after ``replies`` (one per request so far), or None."""
        return None

    def known_requests(self, case: PromptCase) -> list[Prompt]:
        """Render every request of ``case`` that does not depend on a model reply."""
        if self.ppl:
            return [prompt for _, prompt in self.label_prompts(case)]
        return [self.prompt(case)]

    def train_rows(self) -> list[dict[str, Any]]:
        """Return the rows the in-context examples fill from (``[suite] train``), if this source reads them."""
        return []


class RowTemplate(Protocol):
    """A template that renders a case's row into a prompt (a template file, a task prompt)."""

    def render(self, row: Mapping[str, Any]) -> Prompt:
        """Render the prompt for ``row``."""

    def template_reads(self, provides: frozenset[str] = frozenset()) -> TemplateReads:
        """Return what the template reads; ``provides`` are names its renderer gives itself."""

    @property
    def params(self) -> dict[str, Any]:
        """Give the request params the template sets."""

    def parse_output(self, text: str) -> str:
        """Return the output the checks see."""


@dataclass(frozen=True)
class RowSource(PromptSource):
    """A source that renders each case's row (:func:`case_row`) through one :class:`RowTemplate`."""

    template: RowTemplate
    optional: frozenset[str] = frozenset()
    #: Names the template provides itself (a NeMo context's variables): never missing from a row.
    provides: frozenset[str] = field(default_factory=frozenset)

    def fields(self) -> list[TemplateReads]:
        """Return what the template reads, for the static check."""
        return [self.template.template_reads(self.provides)]

    def prompt(self, case: PromptCase) -> Prompt:
        """Render the prompt of ``case`` from its row, an ``optional`` field it lacks rendering empty."""
        row = case_row(case)
        for name in self.optional:
            row.setdefault(name, "")
        return self.template.render(row)

    @property
    def params(self) -> dict[str, Any]:
        """Give the request params the template sets (``stop``, ``max_tokens``), over the model's."""
        return self.template.params

    def parse_output(self, text: str) -> str:
        """Return the output the checks see (through the template's ``output_parser``)."""
        return self.template.parse_output(text)


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

    def template_reads(self, provides: frozenset[str] = frozenset()) -> TemplateReads:
        """Return what the template reads, as its renderer says (None from a renderer without
        ``fields``); a syntax error or an unknown filter is a ConfigError naming the file."""
        path, line = self.origin
        reads = getattr(self.renderer, "fields", None)
        try:  # a renderer's syntax errors are TemplateErrors (the jinja one compiles first)
            found = tuple(reads(self.text)) if callable(reads) else None
        except TemplateError as exc:
            place = f"{path}:{line}" if path is not None and line else (str(path) if path else self.name)
            raise ConfigError(f"{place}: {self.key}: {exc}") from exc
        return TemplateReads(self.key, found, path, line or (1 if path is not None else 0), provides=provides)

    @property
    def params(self) -> dict[str, Any]:
        """Give the request params a template file sets: none."""
        return {}

    def parse_output(self, text: str) -> str:
        """Return the output as it is."""
        return text


@dataclass(frozen=True)
class SystemTemplate:
    """A system message, as written, then the user's: ``user`` rendered, else the case's input (a
    multi-turn input: its turns). ``key`` and ``origin`` say where the system message is set."""

    system: str
    user: StringTemplate | None
    key: str = "template.system"
    origin: tuple[Path | None, int] = (None, 0)

    def render(self, row: Mapping[str, Any]) -> Prompt:
        """Render the messages for ``row``: the system message, then the user's."""
        return [{"role": "system", "content": self.system}, *self._user_messages(row)]

    def _user_messages(self, row: Mapping[str, Any]) -> list[dict[str, Any]]:
        if self.user is not None:
            return [{"role": "user", "content": self.user.render(row)}]
        return list(row["history"])  # the input's turns (one user message for a single input)

    def template_reads(self, provides: frozenset[str] = frozenset()) -> TemplateReads:
        """Return what the user message reads: the template's fields, else the input."""
        if self.user is not None:
            return self.user.template_reads(provides)
        return TemplateReads(self.key, (FieldRead("input"),), *self.origin, provides=provides)

    @property
    def params(self) -> dict[str, Any]:
        """Give the request params a system message sets: none."""
        return {}

    def parse_output(self, text: str) -> str:
        """Return the output as it is."""
        return text


def system_template(
    config: SuiteConfig, table: TemplateConfig, variant: str | None, user: StringTemplate | None
) -> SystemTemplate | None:
    """Make the system message of a table (``system``, or the file ``system_file`` names) before ``user``, None
    when it has none; ``renderer`` with no template to render is a ConfigError."""
    if table.system is None and table.system_file is None:
        return None
    if user is None and table.renderer is not None:
        where = config.where(config.template_key(variant, "renderer"))
        raise ConfigError(
            f"{where}: template.renderer needs a 'template_file' or 'template' (system is sent as written)"
        )
    if table.system_file is not None:
        key = config.template_key(variant, "system_file")
        text = load_template_file(config, table.system_file, key=key)
        return SystemTemplate(text, user, key, (config.resolve(table.system_file, key=key), 1))
    key = config.template_key(variant, "system")
    return SystemTemplate(table.system or "", user, key, (config.path, line_of_key(config.lines, key) or 0))


def string_template(
    config: SuiteConfig,
    template: TemplateConfig | None = None,
    *,
    makers: PromptMakers = BUILTIN_MAKERS,
    variant: str | None = None,
    make_renderer: Callable[[], Renderer] | None = None,
) -> StringTemplate | None:
    """Make the ``template_file`` (or inline ``template``) of a template table with its ``renderer`` (or the
    one ``make_renderer`` makes: a dialect's), None for a table of another kind; ``variant`` names the table."""
    table = template if template is not None else config.template

    def where(key: str) -> str:
        return config.where(config.template_key(variant, key))

    if table.kind(path=config.path) is not TemplateKind.FILE:
        return None
    if table.template_file is not None and table.template is not None:
        raise ConfigError(f"{where('template')}: [template] has both 'template_file' and 'template'; keep one")
    text, name, origin, key = _template_text(config, table, variant)
    try:
        if make_renderer is not None:
            renderer = make_renderer()
        else:
            renderer = get_renderer(table.renderer, make=makers.renderer, make_filter=makers.filter)
    except ConfigError as exc:
        raise ConfigError(f"{where('renderer')}: {exc}") from exc
    return StringTemplate(text, renderer, name, origin=origin, key=key)


def _template_text(
    config: SuiteConfig, table: TemplateConfig, variant: str | None
) -> tuple[str, str, tuple[Path | None, int], str]:
    """Return a template's text, its name, where it starts (file, line) and its key: the ``template_file``'s,
    else the inline ``template``'s."""
    if table.template_file is not None:
        key = config.template_key(variant, "template_file")
        text = load_template_file(config, table.template_file, key=key)
        return text, table.template_file, (config.resolve(table.template_file, key=key), 1), key
    assert table.template is not None
    key = config.template_key(variant, "template")
    return table.template, "template", (config.path, line_of_key(config.lines, key) or 0), key


def task_prompts_path(config: SuiteConfig, table: TemplateConfig, variant: str | None) -> Path:
    """Resolve a task-prompt table's ``task_prompts`` (it must exist); ConfigError naming the key when
    ``task_prompts`` or ``task`` is missing."""
    if table.task_prompts is None or table.task is None:
        missing = "task_prompts" if table.task_prompts is None else "task"
        where = config.where(config.template_key(variant, "task_prompts"))
        raise ConfigError(f"{where}: [template] uses task prompts but has no {missing!r}")
    key = config.template_key(variant, "task_prompts")
    path = config.resolve(table.task_prompts, key=key)
    if not path.exists():
        raise ConfigError(f"{config.where(key)}: {key} = {table.task_prompts!r}: no such file or folder")
    return path


def core_prompt_source(
    suite: SuiteConfig, table: TemplateConfig, variant: str | None, model: ModelConfig, makers: PromptMakers
) -> PromptSource | None:
    """Make the source of a template file or of a task prompt by our rules (selected for
    ``prompt_model``, else the model's spec), None for a table of another kind. Loads and compiles
    everything now: any mistake is a ConfigError before a case runs."""
    optional = frozenset(table.optional or ())
    kind = table.kind(path=suite.path)
    if kind is TemplateKind.TASK_PROMPTS:
        from pytest_promptsuite.prompts.task_prompts import TaskPrompts  # YAML and Jinja2 load here

        path = task_prompts_path(suite, table, variant)
        assert table.task is not None  # task_prompts_path checked it
        prompts = TaskPrompts.load(path, root=suite.root, make_filter=makers.filter, make_parser=makers.parser)
        try:
            chosen = prompts.select(table.task, table.prompt_model or model.spec, table.mode)
        except ConfigError as exc:
            raise ConfigError(f"{suite.where(suite.template_key(variant, 'task'))}: {exc}") from exc
        return RowSource(chosen, optional)
    if kind is not TemplateKind.FILE:
        return None
    suite.refuse_keys_of_other_kinds(table, variant)
    has_template = table.template is not None or table.template_file is not None
    string = string_template(suite, table, makers=makers, variant=variant) if has_template else None
    system = system_template(suite, table, variant, string)
    template = system if system is not None else string
    assert template is not None  # a table of kind FILE: a template, or a system message
    return RowSource(template, optional)
