"""Task prompts in NeMo Guardrails' ``prompts.yml`` layout under our semantics: each prompt compiled
in the Jinja sandbox when selected, and rendered from a case's row within its ``max_length``."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.prompts.core import Message
from pytest_promptsuite.prompts.core import Prompt
from pytest_promptsuite.prompts.fields import TemplateReads
from pytest_promptsuite.prompts.fields import jinja_reads
from pytest_promptsuite.prompts.files.history_filters import ROLES
from pytest_promptsuite.prompts.files.history_filters import MakeFilter
from pytest_promptsuite.prompts.files.history_filters import builtin_filter
from pytest_promptsuite.prompts.files.history_filters import role_of
from pytest_promptsuite.prompts.files.history_filters import split_turns
from pytest_promptsuite.prompts.files.jinja import compile_template
from pytest_promptsuite.prompts.files.jinja import install_filters
from pytest_promptsuite.prompts.files.jinja import render_template
from pytest_promptsuite.prompts.files.jinja import sandbox_environment
from pytest_promptsuite.prompts.output_parsers import MakeParser
from pytest_promptsuite.prompts.output_parsers import OutputParser
from pytest_promptsuite.prompts.output_parsers import builtin_output_parser
from pytest_promptsuite.prompts.output_parsers import make_output_parser
from pytest_promptsuite.prompts.prompts_yml import STANDARD
from pytest_promptsuite.prompts.prompts_yml import PromptEntry
from pytest_promptsuite.prompts.prompts_yml import check_message
from pytest_promptsuite.prompts.prompts_yml import prompt_entries
from pytest_promptsuite.prompts.prompts_yml import read_prompts
from pytest_promptsuite.prompts.prompts_yml import template_sources
from pytest_promptsuite.prompts.selection import select_prompt
from pytest_promptsuite.safety.scrub import scrub_cut


if TYPE_CHECKING:
    from pytest_promptsuite.config.suite import SuiteConfig


@dataclass(frozen=True)
class MessageTemplate:
    """One entry of ``messages``: a role and its content template, or (``role`` None) a plain
    string template that renders to a list of messages, e.g. ``"{{ history | to_messages }}"``."""

    role: str | None
    source: str
    template: jinja2.Template = field(repr=False, compare=False)


@dataclass(frozen=True)
class TaskPrompt:
    """One compiled prompt of a ``prompts.yml``: where it was written (``path:line``, named by every
    error), what it is selected on, its templates and output parser."""

    task: str
    models: tuple[str, ...]
    mode: str
    where: str
    content: jinja2.Template | None = field(default=None, repr=False, compare=False)
    messages: tuple[MessageTemplate, ...] | None = None
    max_length: int | None = None
    stop: tuple[str, ...] | None = None
    max_tokens: int | None = None
    output_parser: OutputParser | None = field(default=None, repr=False, compare=False)
    content_source: str | None = field(default=None, repr=False, compare=False)

    def template_reads(self, provides: frozenset[str] = frozenset()) -> TemplateReads:
        """Return the variables the prompt's templates read, for the static check; ``provides``
        are names the renderer gives itself."""
        env = sandbox_environment()
        sources = [self.content_source] if self.content_source is not None else []
        sources += [m.source for m in self.messages or ()]
        reads = tuple(read for source in sources for read in jinja_reads(env, source))
        file, _, line = self.where.rpartition(":")
        path, number = (Path(file), int(line)) if line.isdigit() else (None, 0)
        return TemplateReads(f"task {self.task!r} (mode {self.mode!r})", reads, path, number, provides=provides)

    @property
    def name(self) -> str:
        """This prompt's name in errors: ``prompts.yml:12 (task 'general', mode 'standard')``."""
        return f"{self.where} (task {self.task!r}, mode {self.mode!r})"

    @property
    def params(self) -> dict[str, Any]:
        """Request params the prompt sets (``stop``, ``max_tokens``), over the model's."""
        out: dict[str, Any] = {}
        if self.stop is not None:
            out["stop"] = list(self.stop)
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens
        return out

    def render_once(self, row: Mapping[str, Any]) -> Prompt:
        """Render the prompt for ``row`` as its templates do, no ``max_length`` applied."""
        if self.content is not None:
            return render_template(self.content, row, self.name)
        messages: list[Message] = []
        for i, entry in enumerate(self.messages or ()):
            where = f"{self.name} messages[{i}]"
            text = render_template(entry.template, row, where)
            if entry.role is None:
                messages.extend(_literal_messages(text, where))
            elif text.strip():
                messages.append({"role": entry.role, "content": text})
        return messages

    def render(self, row: Mapping[str, Any], *, max_length: int | None = None) -> Prompt:
        """Render the prompt for ``row`` (a string, or messages) within ``max_length`` characters
        (else the prompt's own), dropping the oldest turns of ``row['history']`` until it fits."""
        budget = max_length if max_length is not None else self.max_length
        prompt = self.render_once(row)
        if budget is None or prompt_length(prompt) <= budget:
            return prompt
        history = row.get("history")
        turns = split_turns(history) if isinstance(history, (list, tuple)) else []
        droppable = len(turns) - 1 if turns and role_of(turns[-1][0]) == "user" else len(turns)
        for k in range(1, droppable + 1):
            prompt = self.render_once({**row, "history": _without_oldest(turns, k)})
            if prompt_length(prompt) <= budget:
                return prompt
        dropped = f" even with the {droppable} oldest turn(s) of history dropped" if droppable else ""
        raise TemplateError(
            f"{self.name}: the prompt is {prompt_length(prompt)} characters, over max_length {budget}"
            + (dropped or " and it has no history turns to drop")
            + "; raise max_length or shorten the template"
        )

    def parse_output(self, text: str) -> str:
        """Return the output as the checks should see it: through ``output_parser``, else as is."""
        return self.output_parser(text) if self.output_parser is not None else text


def _without_oldest(turns: list[list[Any]], k: int) -> list[Any]:
    """Return a history without its ``k`` oldest turns, their system messages kept."""
    kept_system = [m for turn in turns[:k] for m in turn if role_of(m) == "system"]
    return kept_system + [m for turn in turns[k:] for m in turn]


def prompt_length(prompt: Prompt) -> int:
    """Count the characters of a prompt: the string's, or the sum of the messages' contents."""
    if isinstance(prompt, str):
        return len(prompt)
    return sum(len(str(m.get("content", ""))) for m in prompt)


def _literal_messages(text: str, where: str) -> list[Message]:
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError) as exc:
        raise TemplateError(
            f"{where}: a plain-string messages entry must render to a list of messages "
            f'(e.g. "{{{{ history | to_messages }}}}"), got {scrub_cut(text, 60).text!r}'
        ) from exc
    if not isinstance(value, list) or not all(isinstance(m, dict) and "content" in m for m in value):
        raise TemplateError(f"{where}: must render to a list of {{'role', 'content'}} messages")
    out = []
    for m in value:
        role = role_of(m)
        if role not in ROLES.values():
            raise TemplateError(f"{where}: unknown message role {role!r} (roles: {', '.join(ROLES)})")
        out.append({"role": role, "content": m["content"]})
    return out


@dataclass(frozen=True)
class TaskPrompts:
    """Every prompt of one ``prompts.yml`` (or folder), in file order, each compiled on first use."""

    entries: tuple[PromptEntry, ...]
    source: str
    env: SandboxedEnvironment = field(repr=False, compare=False)
    make_filter: MakeFilter = field(default=builtin_filter, repr=False, compare=False)
    make_parser: MakeParser = field(default=builtin_output_parser, repr=False, compare=False)
    _compiled: dict[str, TaskPrompt] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def load(
        cls,
        path: Path | str,
        *,
        root: Path | None = None,
        make_filter: MakeFilter = builtin_filter,
        make_parser: MakeParser = builtin_output_parser,
    ) -> TaskPrompts:
        """Load a ``prompts.yml``, or every ``*.yml``/``*.yaml`` under a folder: every prompt's keys
        are checked now, its templates and output parser only when it is selected."""
        path = Path(path)
        entries = prompt_entries(read_prompts(path, root=root))
        return cls(entries, str(path), sandbox_environment(), make_filter, make_parser)

    @property
    def prompts(self) -> tuple[TaskPrompt, ...]:
        """Compile every prompt, in file order (a bad template anywhere is a ConfigError)."""
        return tuple(self.compiled(entry) for entry in self.entries)

    def compiled(self, entry: PromptEntry) -> TaskPrompt:
        """Compile ``entry`` once: its templates, the filters they use, its output parser."""
        if entry.where not in self._compiled:
            self._compiled[entry.where] = compile_prompt(entry, self.env, self.make_filter, self.make_parser)
        return self._compiled[entry.where]

    def select(self, task: str, model: str | None = None, mode: str | None = None) -> TaskPrompt:
        """Pick and compile the prompt for ``task`` on ``model`` in ``mode`` (default ``standard``)
        by our rule."""
        return self.compiled(select_prompt(self.entries, task, model, mode or STANDARD, self.source))


def compile_prompt(
    entry: PromptEntry, env: SandboxedEnvironment, make_filter: MakeFilter, make_parser: MakeParser
) -> TaskPrompt:
    """Compile one prompt in ``env`` with the filters it uses and its output parser; a ConfigError
    names ``path:line``, the task and the construct (an unknown filter or parser, a syntax error)."""
    install_filters(env, template_sources([(dict(entry.raw), entry.where)]), make_filter)
    return _build(dict(entry.raw), entry.where, env, make_parser)


def _build(entry: dict[str, Any], where: str, env: SandboxedEnvironment, make_parser: MakeParser) -> TaskPrompt:
    task, mode, stop = entry["task"], entry.get("mode", STANDARD), entry.get("stop")
    name = f"{where} (task {task!r}, mode {mode!r})"
    content = None
    messages = None
    try:
        if "content" in entry:
            content = compile_template(env, entry["content"], name)
        else:
            messages = _build_messages(entry["messages"], where, name, env)
    except TemplateError as exc:
        raise ConfigError(str(exc)) from exc
    output_parser = None
    if entry.get("output_parser") is not None:
        try:
            output_parser = make_output_parser(entry["output_parser"], make=make_parser)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from exc
    return TaskPrompt(
        task=task,
        models=tuple(entry.get("models") or []),
        mode=mode,
        where=where,
        content=content,
        messages=messages,
        max_length=entry.get("max_length"),
        stop=tuple(stop) if stop is not None else None,
        max_tokens=entry.get("max_tokens"),
        output_parser=output_parser,
        content_source=entry.get("content"),
    )


def _build_messages(value: list[Any], where: str, name: str, env: SandboxedEnvironment) -> tuple[MessageTemplate, ...]:
    out = []
    for i, m in enumerate(value):
        role = check_message(m, f"{where}: messages[{i}]")
        source = m if role is None else m["content"]
        out.append(MessageTemplate(role, source, compile_template(env, source, f"{name} messages[{i}]")))
    return tuple(out)


def load_task_prompts(
    config: SuiteConfig,
    relative: str,
    *,
    make_filter: MakeFilter = builtin_filter,
    make_parser: MakeParser = builtin_output_parser,
) -> TaskPrompts:
    """Load ``[template] task_prompts = RELATIVE``: a file or folder inside the config's folder."""
    path = config.resolve(relative, key="template.task_prompts")
    if not path.exists():
        raise ConfigError(f"{config.path}: template.task_prompts = {relative!r}: no such file or folder")
    return TaskPrompts.load(path, root=config.root, make_filter=make_filter, make_parser=make_parser)
