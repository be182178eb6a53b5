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
- A chat message whose rendered content is blank is left out (NeMo does the same), so a message
  can be made conditional with ``{% if %}``.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import Union

import jinja2
import yaml
from jinja2 import nodes
from jinja2.exceptions import SecurityError
from jinja2.runtime import LoopContext
from jinja2.sandbox import SandboxedEnvironment

from ..cases import did_you_mean
from ..errors import ConfigError
from ..errors import PromptSuiteError
from ..errors import TemplateError


if TYPE_CHECKING:
    from ..cases import PromptCase
    from ..suite import SuiteConfig


__all__ = [
    "BUILTIN_FILTERS",
    "BUILTIN_PARSERS",
    "MakeFilter",
    "MakeParser",
    "MessageTemplate",
    "OutputParserError",
    "TaskPrompt",
    "TaskPrompts",
    "history_of",
    "load_task_prompts",
    "make_output_parser",
    "parse_output",
    "sandbox_environment",
    "split_turns",
    "task_row",
]

Message = dict[str, Any]
Rendered = Union[str, list[Message]]
#: ``make_filter(name) -> callable | None`` (the ``pytest_promptsuite_make_jinja_filter`` hook).
MakeFilter = Callable[[str], Union[Callable[..., Any], None]]
#: ``make_parser(name, params) -> callable | None`` (``pytest_promptsuite_make_output_parser``).
MakeParser = Callable[[str, dict[str, Any]], Union[Callable[[str], str], None]]

PROMPT_KEYS = (
    "task",
    "models",
    "mode",
    "content",
    "messages",
    "max_length",
    "output_parser",
    "stop",
    "max_tokens",
)
MESSAGE_KEYS = ("type", "content")
#: NeMo's message types and the OpenAI role each becomes.
ROLES = {"system": "system", "user": "user", "assistant": "assistant", "bot": "assistant"}
STANDARD = "standard"


class OutputParserError(PromptSuiteError):
    """An output parser could not parse a model's output (e.g. ``json`` found no JSON value).

    Not a render error: the model answered, and the answer failed a structural expectation.
    """


# --- the sandbox -----------------------------------------------------------------------------

_SAFE_RUNTIME = (LoopContext, jinja2.utils.Cycler, jinja2.utils.Joiner, jinja2.utils.Namespace)


class _DataSandbox(SandboxedEnvironment):
    """Jinja's sandbox, stricter: no attribute of the data is reachable, only its items.

    The stock sandbox allows ``input.upper()`` or ``history.pop()``; a prompt needs neither
    (filters do the work), and refusing them all keeps a prompt file from being a program.
    """

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if isinstance(obj, _SAFE_RUNTIME):
            return super().is_safe_attribute(obj, attr, value)
        return False


def sandbox_environment(filters: Mapping[str, Callable[..., Any]] | None = None) -> SandboxedEnvironment:
    """The environment every task prompt and ``jinja`` renderer uses: sandboxed, strict about
    undefined variables, no autoescape, text kept as written (no newline trimming)."""
    env = _DataSandbox(
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )
    env.filters.update(BUILTIN_FILTERS)
    if filters:
        env.filters.update(filters)
    return env


def _used_filters(env: SandboxedEnvironment, source: str) -> set[str]:
    return {node.name for node in env.parse(source).find_all(nodes.Filter)}


def install_filters(
    env: SandboxedEnvironment, sources: Iterable[str], make_filter: MakeFilter | None
) -> None:
    """Ask ``make_filter`` for every filter the templates use (so a plugin's wins over ours)."""
    if make_filter is None:
        return
    names: set[str] = set()
    for source in sources:
        try:
            names |= _used_filters(env, source)
        except jinja2.TemplateSyntaxError:
            pass  # reported with its location when the template is compiled
    for name in sorted(names):
        made = make_filter(name)
        if made is not None:
            env.filters[name] = made


def _undefined_name(message: str) -> str | None:
    match = re.fullmatch(r"'([^']+)' is undefined", message)
    return match.group(1) if match else None


def template_error(where: str | None, exc: Exception) -> TemplateError:
    """One clear message for whatever Jinja raised while rendering ``where`` (None: no prefix)."""
    if isinstance(exc, SecurityError):
        text = (
            f"refused by the sandbox: {exc} (templates may read items of the row, "
            "e.g. turn['content'], but no attributes or methods)"
        )
    elif isinstance(exc, jinja2.UndefinedError):
        name = _undefined_name(str(exc))
        text = f"undefined variable {name!r}" if name is not None else str(exc)
    elif isinstance(exc, PromptSuiteError):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}"
    return TemplateError(f"{where}: {text}" if where else text)


def compile_template(env: SandboxedEnvironment, source: str, where: str | None) -> jinja2.Template:
    """Compile ``source``; a syntax error or an unknown filter is a TemplateError naming ``where``."""
    try:
        return env.from_string(source)
    except jinja2.TemplateSyntaxError as exc:  # unknown filters too (TemplateAssertionError)
        text = f"line {exc.lineno} of the template: {exc.message}"
        raise TemplateError(f"{where}: {text}" if where else text) from exc


def render_template(template: jinja2.Template, row: Mapping[str, Any], where: str | None) -> str:
    """Render a compiled template with ``row`` as its context; every failure is a TemplateError."""
    try:
        return template.render(dict(row))
    except Exception as exc:  # jinja2 errors, ours from a filter, anything a filter raised
        raise template_error(where, exc) from exc


# --- history and filters ---------------------------------------------------------------------


def _role(message: Mapping[str, Any]) -> str:
    role = message.get("role", message.get("type"))
    return ROLES.get(str(role), str(role))


def _check_history(value: Any, name: str) -> list[Mapping[str, Any]]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(m, Mapping) for m in value):
        raise TemplateError(
            f"filter {name!r} expects a history: a list of {{'role', 'content'}} turns, "
            f"got {type(value).__name__}"
        )
    return list(value)


def split_turns(history: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """Group a history into turns: a user message and the messages after it, up to the next user
    message (messages before the first user message form a turn of their own)."""
    turns: list[list[Mapping[str, Any]]] = []
    for message in history:
        if _role(message) == "user" or not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


def _colang_first_turns(text: str, n: int) -> str:
    # NeMo's own semantics on a Colang history string: a turn starts at a 'user "' line.
    lines = text.split("\n")
    count = 0
    for i, line in enumerate(lines):
        if line.startswith('user "'):
            count += 1
        if count == n + 1:
            return "\n".join(lines[:i])
    return text


def _colang_last_turns(text: str, n: int) -> str:
    lines = text.split("\n")
    count = 0
    i = len(lines) - 1
    while i > 0:
        if lines[i].startswith('user "'):
            count += 1
        if count == n:
            break
        i -= 1
    return "\n".join(lines[i:])


def first_turns(history: Any, n: int) -> Any:
    """The first ``n`` turns of a history (a list of turns, or NeMo's Colang text)."""
    if isinstance(history, str):
        return _colang_first_turns(history, n)
    turns = split_turns(_check_history(history, "first_turns"))
    return [m for turn in turns[: max(n, 0)] for m in turn]


def last_turns(history: Any, n: int) -> Any:
    """The last ``n`` turns of a history (a list of turns, or NeMo's Colang text)."""
    if isinstance(history, str):
        return _colang_last_turns(history, n)
    turns = split_turns(_check_history(history, "last_turns"))
    return [m for turn in (turns[-n:] if n > 0 else []) for m in turn]


_SPEAKERS = {"user": "User", "assistant": "Assistant", "system": "System"}


def user_assistant_sequence(history: Any) -> str:
    """A history as ``User: ...`` / ``Assistant: ...`` lines (NeMo's format)."""
    lines = []
    for message in _check_history(history, "user_assistant_sequence"):
        role = _role(message)
        lines.append(f"{_SPEAKERS.get(role, role.capitalize())}: {message.get('content', '')}")
    return "\n".join(lines)


def to_messages(history: Any) -> list[Message]:
    """A history as chat messages with OpenAI roles (``bot`` becomes ``assistant``), for a
    ``messages`` entry written as a plain string: ``- "{{ history | to_messages }}"``."""
    return [
        {"role": _role(m), "content": m.get("content", "")} for m in _check_history(history, "to_messages")
    ]


def indent(text: Any, n: int = 4) -> str:
    """Every non-blank line of ``text`` indented by ``n`` spaces, the first one included (NeMo's
    ``indent``, not Jinja's, which skips the first line)."""
    return textwrap.indent(str(text), " " * n)


BUILTIN_FILTERS: dict[str, Callable[..., Any]] = {
    "first_turns": first_turns,
    "last_turns": last_turns,
    "user_assistant_sequence": user_assistant_sequence,
    "to_messages": to_messages,
    "indent": indent,
}


# --- output parsers --------------------------------------------------------------------------


def strip_prefix(text: str, prefix: str) -> str:
    """``text`` without ``prefix`` (after leading whitespace) and the blanks around the rest;
    unchanged when it does not start with ``prefix``."""
    stripped = text.lstrip()
    if stripped.startswith(prefix):
        return stripped[len(prefix) :].strip()
    return text


_FENCE = re.compile(r"```(?:json)?[ \t]*\n(.*?)```", re.DOTALL)


def extract_json(text: str) -> str:
    """The first JSON value in ``text``, exactly as written: the whole text, a fenced
    ```` ```json ```` block, or the first ``{...}`` / ``[...]`` after some prose."""
    decoder = json.JSONDecoder()
    candidates: list[str] = [text.strip()] + [str(m.group(1)).strip() for m in _FENCE.finditer(text)]
    for candidate in candidates:
        try:
            json.loads(candidate)
        except ValueError:
            continue
        return candidate
    for match in re.finditer(r"[\[{]", text):
        try:
            _, end = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        return text[match.start() : end]
    snippet = text[:60] + ("..." if len(text) > 60 else "")
    raise OutputParserError(f"output parser 'json': no JSON value in the output {snippet!r}")


def _prefix_parser(prefix: str) -> Callable[[str], str]:
    return lambda text: strip_prefix(text, prefix)


def _make_strip_prefix(params: dict[str, Any]) -> Callable[[str], str]:
    prefix = params.get("prefix")
    if not isinstance(prefix, str) or not prefix:
        raise ConfigError("output parser 'strip_prefix' needs a non-empty string 'prefix'")
    return _prefix_parser(prefix)


#: name -> (factory from params, allowed params)
BUILTIN_PARSERS: dict[str, tuple[Callable[[dict[str, Any]], Callable[[str], str]], tuple[str, ...]]] = {
    "strip_prefix": (_make_strip_prefix, ("prefix",)),
    "json": (lambda params: extract_json, ()),
    # NeMo's names, without their Colang rewriting: the prefix goes, the text stays.
    "user_intent": (lambda params: _prefix_parser("User intent:"), ()),
    "bot_intent": (lambda params: _prefix_parser("Bot intent:"), ()),
    "bot_message": (lambda params: _prefix_parser("Bot message:"), ()),
}


def split_spec(spec: Any, *, key: str) -> tuple[str, dict[str, Any]]:
    """A pluggable part named as ``NAME`` or ``{type: NAME, ...params}``: (name, params)."""
    if isinstance(spec, str):
        return spec, {}
    if isinstance(spec, Mapping) and isinstance(spec.get("type"), str):
        return spec["type"], {k: v for k, v in spec.items() if k != "type"}
    raise ConfigError(f"{key} must be a name or {{type: NAME, ...}}, got {spec!r}")


def builtin_factory(
    kind: str, name: str, params: Mapping[str, Any], builtins: Mapping[str, tuple[Any, tuple[str, ...]]], hook: str
) -> Any:
    """The factory of built-in ``kind`` ``name`` (a renderer, an output parser), once the name and
    the keys of ``params`` are known good; else a ConfigError with the fix."""
    if name not in builtins:
        raise ConfigError(
            f"unknown {kind} {name!r}"
            + did_you_mean(name, list(builtins))
            + f"; built-in: {', '.join(builtins)}, or add one with the {hook} hook"
        )
    factory, allowed = builtins[name]
    unknown = [k for k in params if k not in allowed]
    if unknown:
        raise ConfigError(
            f"{kind} {name!r}: unknown key {unknown[0]!r}"
            + (f" (keys: {', '.join(allowed)})" if allowed else " (it takes none)")
        )
    return factory


def make_output_parser(spec: Any, *, make: MakeParser | None = None) -> Callable[[str], str]:
    """The parser for ``output_parser: NAME`` or ``{type: NAME, ...params}``; ``make`` (the hook)
    is asked first, so a plugin can replace a built-in."""
    name, params = split_spec(spec, key="output_parser")
    if make is not None:
        made = make(name, dict(params))
        if made is not None:
            return made
    factory = builtin_factory(
        "output parser", name, params, BUILTIN_PARSERS, "pytest_promptsuite_make_output_parser"
    )
    return factory(dict(params))  # type: ignore[no-any-return]


def parse_output(spec: Any, text: str, *, make: MakeParser | None = None) -> str:
    """Run the output parser ``spec`` on a model's output (see :func:`make_output_parser`)."""
    return make_output_parser(spec, make=make)(text)


# --- the prompts -----------------------------------------------------------------------------


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
    parser: Callable[[str], str] | None = field(default=None, repr=False, compare=False)

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

    def _render_once(self, row: Mapping[str, Any]) -> Rendered:
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
        prompt = self._render_once(row)
        if budget is None or prompt_length(prompt) <= budget:
            return prompt
        history = row.get("history")
        turns = split_turns(history) if isinstance(history, (list, tuple)) else []
        droppable = len(turns) - 1 if turns and _role(turns[-1][0]) == "user" else len(turns)
        for k in range(1, droppable + 1):
            kept_system = [m for turn in turns[:k] for m in turn if _role(m) == "system"]
            shorter = kept_system + [m for turn in turns[k:] for m in turn]
            prompt = self._render_once({**row, "history": shorter})
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
        role = _role(m)
        if role not in ROLES.values():
            raise TemplateError(f"{where}: unknown message role {role!r} (roles: {', '.join(ROLES)})")
        out.append({"role": role, "content": m["content"]})
    return out


def _model_rank(prompt: TaskPrompt, model: str | None) -> int | None:
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

    prompts: tuple[TaskPrompt, ...]
    source: str

    @classmethod
    def load(
        cls,
        path: Path | str,
        *,
        root: Path | None = None,
        make_filter: MakeFilter | None = None,
        make_parser: MakeParser | None = None,
    ) -> TaskPrompts:
        """Load a ``prompts.yml`` or every ``*.yml``/``*.yaml`` under a folder (sorted by path;
        files without a ``prompts`` key are skipped there). Templates are compiled and output
        parsers made now, so a bad prompt is a ConfigError before any case runs. With ``root``,
        a file that resolves outside it (a symlink) is refused."""
        path = Path(path)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.suffix in (".yml", ".yaml") and p.is_file())
            if not files:
                raise ConfigError(f"{path}: no *.yml or *.yaml prompt files in this folder")
        else:
            files = [path]
        raw: list[tuple[dict[str, Any], str]] = []
        for file in files:
            if root is not None:
                _inside(file, root)
            raw.extend(_read_prompts(file, required=not path.is_dir()))
        env = sandbox_environment()
        install_filters(env, _sources(raw), make_filter)
        prompts = tuple(_build(entry, where, env, make_parser) for entry, where in raw)
        return cls(prompts, str(path))

    def tasks(self) -> list[str]:
        """The tasks that have at least one prompt, in first-seen order."""
        return list(dict.fromkeys(p.task for p in self.prompts))

    def select(self, task: str, model: str | None = None, mode: str | None = None) -> TaskPrompt:
        """The prompt for ``task`` on ``model`` (a spec such as ``openai:gpt-4o``; NeMo's
        ``openai/gpt-4o`` entries match it too) in ``mode`` (default ``standard``); see the
        module docstring for the order. ConfigError naming the task when none fits."""
        mode = mode or STANDARD
        for_task = [p for p in self.prompts if p.task == task]
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
                return [p for p, r in candidates if r == best][-1]
        modes = sorted({p.mode for p, _ in eligible})
        if not eligible:
            reason = f"every prompt for it lists other models than {model!r}"
        else:
            reason = f"it has no {mode!r} or 'standard' prompt (modes: {', '.join(modes)})"
        raise ConfigError(f"{self.source}: no prompt for task {task!r} on model {model!r}: {reason}")


def _inside(file: Path, root: Path) -> None:
    target, base = file.resolve(), root.resolve()
    if target != base and base not in target.parents:
        raise ConfigError(f"{file}: points outside the suite's folder {base}")


def _sources(raw: Sequence[tuple[dict[str, Any], str]]) -> list[str]:
    out: list[str] = []
    for entry, _ in raw:
        if isinstance(entry.get("content"), str):
            out.append(entry["content"])
        for m in entry.get("messages") or ():
            if isinstance(m, str):
                out.append(m)
            elif isinstance(m, Mapping) and isinstance(m.get("content"), str):
                out.append(m["content"])
    return out


def _read_prompts(file: Path, *, required: bool) -> list[tuple[dict[str, Any], str]]:
    try:
        text = file.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read the prompts file: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{file}: not UTF-8 text: {exc}") from exc
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{file}: invalid YAML: {exc}") from exc
    if not isinstance(data, dict) or "prompts" not in data:
        if required:
            raise ConfigError(f"{file}: has no 'prompts:' list (NeMo Guardrails' prompts.yml layout)")
        return []
    prompts = data["prompts"]
    if not isinstance(prompts, list):
        raise ConfigError(f"{file}: 'prompts' must be a list of prompts")
    lines = _item_lines(node, len(prompts))
    out = []
    for i, entry in enumerate(prompts):
        where = f"{file}:{lines[i]}"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: a prompt must be a mapping with 'task' and 'content' or 'messages'")
        out.append((entry, where))
    return out


def _item_lines(node: Any, count: int) -> list[int]:
    lines = [0] * count
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if getattr(key, "value", None) == "prompts" and isinstance(value, yaml.SequenceNode):
                for i, item in enumerate(value.value[:count]):
                    lines[i] = item.start_mark.line + 1
    return lines


def _build(
    entry: dict[str, Any], where: str, env: SandboxedEnvironment, make_parser: MakeParser | None
) -> TaskPrompt:
    unknown = [k for k in entry if k not in PROMPT_KEYS]
    if unknown:
        raise ConfigError(
            f"{where}: unknown key {unknown[0]!r}" + did_you_mean(str(unknown[0]), list(PROMPT_KEYS))
        )
    task = entry.get("task")
    if not isinstance(task, str) or not task:
        raise ConfigError(f"{where}: a prompt needs a 'task' (a non-empty string)")
    models = entry.get("models") or []
    if isinstance(models, str) or not all(isinstance(m, str) for m in models):
        raise ConfigError(f"{where}: 'models' must be a list of model names")
    mode = entry.get("mode", STANDARD)
    if not isinstance(mode, str) or not mode:
        raise ConfigError(f"{where}: 'mode' must be a non-empty string")
    has_content, has_messages = "content" in entry, "messages" in entry
    if has_content == has_messages:
        raise ConfigError(
            f"{where}: a prompt needs exactly one of 'content' (completion) or 'messages' (chat)"
        )
    max_length = entry.get("max_length")
    if max_length is not None and (
        isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1
    ):
        raise ConfigError(f"{where}: 'max_length' must be a positive number of characters")
    max_tokens = entry.get("max_tokens")
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)):
        raise ConfigError(f"{where}: 'max_tokens' must be an integer")
    stop = entry.get("stop")
    if stop is not None and (not isinstance(stop, list) or not all(isinstance(s, str) for s in stop)):
        raise ConfigError(f"{where}: 'stop' must be a list of strings")
    name = f"{where} (task {task!r}, mode {mode!r})"
    content = None
    messages = None
    try:
        if has_content:
            if not isinstance(entry["content"], str):
                raise ConfigError(f"{where}: 'content' must be a string")
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
        models=tuple(models),
        mode=mode,
        where=where,
        content=content,
        messages=messages,
        max_length=max_length,
        output_parser=entry.get("output_parser"),
        stop=tuple(stop) if stop is not None else None,
        max_tokens=max_tokens,
        parser=parser,
    )


def _build_messages(
    value: Any, where: str, name: str, env: SandboxedEnvironment
) -> tuple[MessageTemplate, ...]:
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{where}: 'messages' must be a non-empty list")
    out = []
    for i, m in enumerate(value):
        at = f"{where}: messages[{i}]"
        if isinstance(m, str):
            out.append(MessageTemplate(None, m, compile_template(env, m, f"{name} messages[{i}]")))
            continue
        if not isinstance(m, dict):
            raise ConfigError(f"{at}: a message is {{type, content}} or a string template")
        unknown = [k for k in m if k not in MESSAGE_KEYS]
        if unknown:
            raise ConfigError(f"{at}: unknown key {unknown[0]!r} (keys: type, content)")
        kind = m.get("type")
        if kind not in ROLES:
            raise ConfigError(
                f"{at}: unknown type {kind!r}"
                + did_you_mean(str(kind), list(ROLES))
                + f"; types: {', '.join(ROLES)}"
            )
        if not isinstance(m.get("content"), str):
            raise ConfigError(f"{at}: 'content' must be a string")
        out.append(
            MessageTemplate(
                ROLES[kind], m["content"], compile_template(env, m["content"], f"{name} messages[{i}]")
            )
        )
    return tuple(out)


def load_task_prompts(
    config: SuiteConfig,
    relative: str,
    *,
    make_filter: MakeFilter | None = None,
    make_parser: MakeParser | None = None,
) -> TaskPrompts:
    """``[template] task_prompts = RELATIVE`` of a suite config: a file or folder inside the
    config's folder (resolved with links followed; anything outside is a ConfigError)."""
    path = config.resolve(relative, key="template.task_prompts")
    if not path.exists():
        raise ConfigError(f"{config.path}: template.task_prompts = {relative!r}: no such file or folder")
    return TaskPrompts.load(path, root=config.root, make_filter=make_filter, make_parser=make_parser)


def history_of(case: PromptCase) -> list[Message]:
    """A case's turns as ``{"role", "content"}``: each user turn, followed by the answer of the
    same index when ``answer`` is a list (the ground truth of the earlier turns); the last user
    turn is the last message. A single-turn case's history is its one user message."""
    turns = case.input if isinstance(case.input, list) else [case.input]
    answers = case.answer if isinstance(case.answer, list) and isinstance(case.input, list) else []
    history: list[Message] = []
    for i, turn in enumerate(turns):
        history.append({"role": "user", "content": turn})
        if i < len(turns) - 1 and i < len(answers):
            history.append({"role": "assistant", "content": answers[i]})
    return history


def task_row(case: PromptCase) -> dict[str, Any]:
    """The row task prompts and string templates fill from: the template engine's row
    (:func:`~pytest_promptsuite.templates.case.case_row`: ``input``, ``question``, every key of
    ``vars``, ``answer``) plus ``history`` (:func:`history_of`)."""
    from .case import case_row  # the engine's row, so every template sees the same fields

    row = case_row(case)
    row["history"] = history_of(case)
    return row
