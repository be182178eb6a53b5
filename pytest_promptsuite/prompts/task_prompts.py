"""Task prompts in NeMo Guardrails' ``prompts.yml`` layout, rendered with a sandboxed Jinja2.

A file (or a folder of ``*.yml``/``*.yaml`` files, like NeMo's ``PROMPTS_DIR``) holds a
``prompts:`` list; each prompt has a ``task``, optional ``models`` and ``mode``, and either a
completion ``content`` or chat ``messages`` (``type`` system / user / assistant / bot), plus an
optional ``max_length`` (characters) and ``output_parser``. :meth:`TaskPrompts.select` picks the
prompt for (task, model, mode); :meth:`TaskPrompt.render` fills it from a case's row.

Rules, and where we differ from NeMo on purpose:

- Selection: a prompt must be for the task and either have no ``models`` or list the model. A
  prompt of the requested mode beats every ``standard`` one (the seed: a mode with no prompt falls
  back to ``standard``); then an exact model match beats a model-name-only match
  (``gpt-4o`` for ``openai:gpt-4o``), which beats a provider match (``openai``), which beats a
  prompt without ``models``; among equals the last in file order wins. NeMo scores mode and
  model together (a standard prompt for the model can beat a compact default) and lets a prompt
  whose ``models`` does not list the model win when nothing else matches; we do neither.
- Templates run in a sandbox that refuses *every* attribute access on data (``input.upper()``,
  ``''.__class__``): only item access (``turn.content`` on a dict works as ``turn['content']``)
  and loop helpers. Undefined variables are errors naming the variable and the prompt.
- ``max_length`` has no default (NeMo's is 16000): without it nothing is dropped. With it, whole
  oldest turns of ``history`` are dropped until the prompt fits; the template's system prompt and
  the last user turn are never dropped, and a prompt that cannot fit is an error, never cut.
- Only a selected prompt compiles (its templates, the filters they use, its output parser): a
  construct that one prompt of a file uses and we lack blocks no other prompt of the file.
- A chat message whose rendered content is blank is left out (NeMo does the same), so a message
  can be made conditional with ``{% if %}``.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import Union

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.errors import did_you_mean
from pytest_promptsuite.prompts.fields import FieldRead
from pytest_promptsuite.prompts.fields import jinja_reads
from pytest_promptsuite.prompts.files.filters import ROLES
from pytest_promptsuite.prompts.files.filters import MakeFilter
from pytest_promptsuite.prompts.files.filters import builtin_filter
from pytest_promptsuite.prompts.files.filters import role_of
from pytest_promptsuite.prompts.files.filters import split_turns
from pytest_promptsuite.prompts.files.jinja import compile_template
from pytest_promptsuite.prompts.files.jinja import install_filters
from pytest_promptsuite.prompts.files.jinja import render_template
from pytest_promptsuite.prompts.files.jinja import sandbox_environment
from pytest_promptsuite.prompts.output_parsers import MakeParser
from pytest_promptsuite.prompts.output_parsers import OutputParser
from pytest_promptsuite.prompts.output_parsers import OutputParserError
from pytest_promptsuite.prompts.output_parsers import builtin_output_parser
from pytest_promptsuite.prompts.output_parsers import make_output_parser
from pytest_promptsuite.prompts.prompts_yml import STANDARD
from pytest_promptsuite.prompts.prompts_yml import RawPrompt
from pytest_promptsuite.prompts.prompts_yml import check_message
from pytest_promptsuite.prompts.prompts_yml import check_prompt
from pytest_promptsuite.prompts.prompts_yml import read_prompts
from pytest_promptsuite.prompts.prompts_yml import template_sources


if TYPE_CHECKING:
    from pytest_promptsuite.config.suite import SuiteConfig


__all__ = [
    "MessageTemplate",
    "OutputParserError",
    "PromptEntry",
    "TaskPrompt",
    "TaskPrompts",
    "compile_prompt",
    "load_task_prompts",
    "prompt_entries",
    "prompt_length",
]

Message = dict[str, Any]
Rendered = Union[str, list[Message]]


@dataclass(frozen=True)
class MessageTemplate:
    """One entry of ``messages``: a role and its content template, or (``role`` None) a plain
    string template that renders to a list of messages, e.g. ``"{{ history | to_messages }}"``."""

    role: str | None
    source: str
    template: jinja2.Template = field(repr=False, compare=False)


@dataclass(frozen=True)
class TaskPrompt:
    """One prompt of a ``prompts.yml``: where it was written, what it selects on, its template."""

    task: str
    models: tuple[str, ...]
    mode: str
    where: str
    """``path:line`` of the prompt, used in every error message."""
    content: jinja2.Template | None = field(default=None, repr=False, compare=False)
    messages: tuple[MessageTemplate, ...] | None = None
    max_length: int | None = None
    output_parser: Any = None
    stop: tuple[str, ...] | None = None
    max_tokens: int | None = None
    parser: OutputParser | None = field(default=None, repr=False, compare=False)
    content_source: str | None = field(default=None, repr=False, compare=False)

    def fields(self) -> list[FieldRead]:
        """The variables the prompt's templates read (:func:`.fields.jinja_reads`)."""
        env = sandbox_environment()
        sources = [self.content_source] if self.content_source is not None else []
        sources += [m.source for m in self.messages or ()]
        return [read for source in sources for read in jinja_reads(env, source)]

    @property
    def name(self) -> str:
        """How errors name this prompt: ``prompts.yml:12 (task 'general', mode 'standard')``."""
        return f"{self.where} (task {self.task!r}, mode {self.mode!r})"

    @property
    def params(self) -> dict[str, Any]:
        """Request params the prompt sets (``stop``, ``max_tokens``), to merge into the model's."""
        out: dict[str, Any] = {}
        if self.stop is not None:
            out["stop"] = list(self.stop)
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens
        return out

    def render_once(self, row: Mapping[str, Any]) -> Rendered:
        """The prompt for ``row`` as the templates render it (no ``max_length`` applied)."""
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

    def render(self, row: Mapping[str, Any], *, max_length: int | None = None) -> Rendered:
        """The prompt for ``row``: a string (``content``) or OpenAI-role messages (``messages``).

        ``max_length`` (else the prompt's own) is a budget in characters (of the string, or of
        the messages' contents summed); over it, the oldest turns of ``row['history']`` are
        dropped one whole turn at a time until it fits. Raises TemplateError naming the prompt.
        """
        budget = max_length if max_length is not None else self.max_length
        prompt = self.render_once(row)
        if budget is None or prompt_length(prompt) <= budget:
            return prompt
        history = row.get("history")
        turns = split_turns(history) if isinstance(history, (list, tuple)) else []
        droppable = len(turns) - 1 if turns and role_of(turns[-1][0]) == "user" else len(turns)
        for k in range(1, droppable + 1):
            kept_system = [m for turn in turns[:k] for m in turn if role_of(m) == "system"]
            shorter = kept_system + [m for turn in turns[k:] for m in turn]
            prompt = self.render_once({**row, "history": shorter})
            if prompt_length(prompt) <= budget:
                return prompt
        raise TemplateError(
            f"{self.name}: the prompt is {prompt_length(prompt)} characters, over max_length "
            f"{budget}"
            + (
                f" even with the {droppable} oldest turn(s) of history dropped"
                if droppable
                else " and it has no history turns to drop"
            )
            + "; raise max_length or shorten the template"
        )

    def parse_output(self, text: str) -> str:
        """The output as the checks should see it: parsed by ``output_parser``, else as is."""
        return self.parser(text) if self.parser is not None else text


def prompt_length(prompt: Rendered) -> int:
    """Characters of a prompt: the string's, or the sum of the messages' contents."""
    if isinstance(prompt, str):
        return len(prompt)
    return sum(len(str(m.get("content", ""))) for m in prompt)


def _literal_messages(text: str, where: str) -> list[Message]:
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError) as exc:
        raise TemplateError(
            f"{where}: a plain-string messages entry must render to a list of messages "
            f'(e.g. "{{{{ history | to_messages }}}}"), got {text[:60]!r}'
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


def _model_rank(prompt: PromptEntry, model: str | None) -> int | None:
    """How well ``prompt.models`` matches ``model``: 3 exact, 2 model name, 1 provider,
    0 no ``models`` at all, None when the prompt is for other models."""
    if not prompt.models:
        return 0
    if model is None:
        return None
    norm = model.replace(":", "/", 1)
    provider, _, name = norm.partition("/")
    best: int | None = None
    for entry in prompt.models:
        entry = entry.replace(":", "/", 1)
        if entry == norm:
            return 3
        rank = 2 if name and entry == name else 1 if entry == provider else None
        if rank is not None and (best is None or rank > best):
            best = rank
    return best


@dataclass(frozen=True)
class TaskPrompts:
    """Every prompt of one ``prompts.yml`` (or folder), in file order."""

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
        """Load a ``prompts.yml`` or every ``*.yml``/``*.yaml`` under a folder (sorted by path;
        files without a ``prompts`` key are skipped there). Every prompt's keys are checked now;
        a prompt's templates compile and its output parser is made only when it is selected, so
        a construct one prompt lacks support for blocks no other. With ``root``, a file that
        resolves outside it (a symlink) is refused. ``make_filter`` and ``make_parser`` are the
        Jinja filter and output parser lookups (the hooks under pytest)."""
        path = Path(path)
        entries = prompt_entries(read_prompts(path, root=root))
        return cls(entries, str(path), sandbox_environment(), make_filter, make_parser)

    @property
    def prompts(self) -> tuple[TaskPrompt, ...]:
        """Every prompt compiled, in file order (a bad template anywhere is a ConfigError)."""
        return tuple(self.compiled(entry) for entry in self.entries)

    def compiled(self, entry: PromptEntry) -> TaskPrompt:
        """``entry`` compiled (once): its templates, the filters they use, its output parser."""
        if entry.where not in self._compiled:
            self._compiled[entry.where] = compile_prompt(entry, self.env, self.make_filter, self.make_parser)
        return self._compiled[entry.where]

    def tasks(self) -> list[str]:
        """The tasks that have at least one prompt, in first-seen order."""
        return list(dict.fromkeys(p.task for p in self.entries))

    def select(self, task: str, model: str | None = None, mode: str | None = None) -> TaskPrompt:
        """The prompt for ``task`` on ``model`` (a spec such as ``openai:gpt-4o``; NeMo's
        ``openai/gpt-4o`` entries match it too) in ``mode`` (default ``standard``); see the
        module docstring for the order. ConfigError naming the task when none fits."""
        mode = mode or STANDARD
        for_task = [p for p in self.entries if p.task == task]
        if not for_task:
            raise ConfigError(
                f"{self.source}: no prompt for task {task!r}"
                + did_you_mean(task, self.tasks())
                + f"; tasks: {', '.join(self.tasks()) or 'none'}"
            )
        ranked = [(p, _model_rank(p, model)) for p in for_task]
        eligible = [(p, r) for p, r in ranked if r is not None]
        for wanted in dict.fromkeys((mode, STANDARD)):
            candidates = [(p, r) for p, r in eligible if p.mode == wanted]
            if candidates:
                best = max(r for _, r in candidates)
                return self.compiled([p for p, r in candidates if r == best][-1])
        modes = sorted({p.mode for p, _ in eligible})
        if not eligible:
            reason = f"every prompt for it lists other models than {model!r}"
        else:
            reason = f"it has no {mode!r} or 'standard' prompt (modes: {', '.join(modes)})"
        raise ConfigError(f"{self.source}: no prompt for task {task!r} on model {model!r}: {reason}")


@dataclass(frozen=True)
class PromptEntry:
    """One prompt of a file as written: its keys checked, its templates not compiled yet."""

    task: str
    models: tuple[str, ...]
    mode: str
    where: str
    raw: Mapping[str, Any] = field(repr=False, compare=False)


def prompt_entries(raw: Sequence[RawPrompt]) -> tuple[PromptEntry, ...]:
    """The prompts of :func:`read_prompts`, each checked (ConfigError naming ``path:line``)."""
    out = []
    for entry, where in raw:
        check_prompt(entry, where)
        models = tuple(entry.get("models") or [])
        out.append(PromptEntry(entry["task"], models, entry.get("mode", STANDARD), where, entry))
    return tuple(out)


def compile_prompt(
    entry: PromptEntry, env: SandboxedEnvironment, make_filter: MakeFilter, make_parser: MakeParser
) -> TaskPrompt:
    """One prompt compiled in ``env`` with the filters it uses (asked of ``make_filter``) and its
    output parser (``make_parser``); a ConfigError names ``path:line``, the task and the construct
    (the unknown filter or parser, the syntax error)."""
    install_filters(env, template_sources([(dict(entry.raw), entry.where)]), make_filter)
    return _build(dict(entry.raw), entry.where, env, make_parser)


def _build(entry: dict[str, Any], where: str, env: SandboxedEnvironment, make_parser: MakeParser) -> TaskPrompt:
    """One prompt of a file (keys checked): its templates compiled, its output parser made."""
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
    parser = None
    if entry.get("output_parser") is not None:
        try:
            parser = make_output_parser(entry["output_parser"], make=make_parser)
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
        output_parser=entry.get("output_parser"),
        stop=tuple(stop) if stop is not None else None,
        max_tokens=entry.get("max_tokens"),
        parser=parser,
        content_source=entry.get("content"),
    )


def _build_messages(
    value: list[Any], where: str, name: str, env: SandboxedEnvironment
) -> tuple[MessageTemplate, ...]:
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
    """``[template] task_prompts = RELATIVE`` of a suite config: a file or folder inside the
    config's folder (resolved with links followed; anything outside is a ConfigError)."""
    path = config.resolve(relative, key="template.task_prompts")
    if not path.exists():
        raise ConfigError(f"{config.path}: template.task_prompts = {relative!r}: no such file or folder")
    return TaskPrompts.load(path, root=config.root, make_filter=make_filter, make_parser=make_parser)
