"""Task prompt files in NeMo Guardrails' ``prompts.yml`` layout, read and checked (``path:line`` of each
prompt, the shape of each prompt and message) before any template compiles."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import yaml

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import did_you_mean
from pytest_promptsuite.formats.yamlio import load_yaml
from pytest_promptsuite.prompts.files.history_filters import ROLES


PROMPT_KEYS = ("task", "models", "mode", "content", "messages", "max_length", "output_parser", "stop", "max_tokens")
MESSAGE_KEYS = ("type", "content")
#: The mode of a prompt that names none, and the fallback of every mode.
STANDARD = "standard"

#: A raw prompt (the YAML mapping) and ``path:line`` where it was written.
RawPrompt = tuple[dict[str, Any], str]


@dataclass(frozen=True)
class PromptEntry:
    """One prompt of a file as written: its keys checked, its templates not compiled yet."""

    task: str
    models: tuple[str, ...]
    mode: str
    where: str
    raw: Mapping[str, Any] = field(repr=False, compare=False)


def prompt_entries(raw: Sequence[RawPrompt]) -> tuple[PromptEntry, ...]:
    """Check each prompt of :func:`read_prompts` (ConfigError naming ``path:line``) and return them."""
    out = []
    for entry, where in raw:
        check_prompt(entry, where)
        models = tuple(entry.get("models") or [])
        out.append(PromptEntry(entry["task"], models, entry.get("mode", STANDARD), where, entry))
    return tuple(out)


def read_prompts(path: Path, *, root: Path | None = None) -> list[RawPrompt]:
    """Read every prompt of a ``prompts.yml``, or of the ``*.yml`` / ``*.yaml`` files under a folder
    in path order; with ``root``, refuse a file that resolves outside it (a symlink)."""
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix in (".yml", ".yaml") and p.is_file())
        if not files:
            raise ConfigError(f"{path}: no *.yml or *.yaml prompt files in this folder")
    else:
        files = [path]
    raw: list[RawPrompt] = []
    for file in files:
        if root is not None:
            _inside(file, root)
        data, node = read_yaml_file(file)
        raw.extend(prompts_in(data, node, file, required=not path.is_dir()))
    return raw


def _inside(file: Path, root: Path) -> None:
    target, base = file.resolve(), root.resolve()
    if target != base and base not in target.parents:
        raise ConfigError(f"{file}: points outside the suite's folder {base}")


def read_yaml_file(file: Path) -> tuple[Any, Any]:
    """Parse a UTF-8 YAML file into its value and node tree; ConfigError naming the file when it
    cannot be read or parsed."""
    try:
        text = file.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read the file: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{file}: not UTF-8 text: {exc}") from exc
    return load_yaml(text, str(file))


def prompts_in(data: Any, node: Any, file: Path, *, required: bool) -> list[RawPrompt]:
    """Take the prompts of a parsed file's ``prompts:`` list, each with its ``path:line``; a file
    without one is an error when ``required``, else holds none."""
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


def template_sources(raw: Sequence[RawPrompt]) -> list[str]:
    """Collect the text of every template of the prompts, to find the filters they use before they
    compile."""
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


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_prompt(entry: Mapping[str, Any], where: str) -> None:
    """Refuse a prompt whose keys or values are wrong (ConfigError naming ``where`` and the key)."""
    _check_names(entry, where)
    if ("content" in entry) == ("messages" in entry):
        raise ConfigError(f"{where}: a prompt needs exactly one of 'content' (completion) or 'messages' (chat)")
    _check_limits(entry, where)
    if "content" in entry and not isinstance(entry["content"], str):
        raise ConfigError(f"{where}: 'content' must be a string")
    if "messages" in entry and (not isinstance(entry["messages"], list) or not entry["messages"]):
        raise ConfigError(f"{where}: 'messages' must be a non-empty list")


def _check_names(entry: Mapping[str, Any], where: str) -> None:
    """Refuse a prompt with an unknown key, or without its task, models or mode as names."""
    unknown = [k for k in entry if k not in PROMPT_KEYS]
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}" + did_you_mean(str(unknown[0]), list(PROMPT_KEYS)))
    task = entry.get("task")
    if not isinstance(task, str) or not task:
        raise ConfigError(f"{where}: a prompt needs a 'task' (a non-empty string)")
    models = entry.get("models") or []
    if isinstance(models, str) or not all(isinstance(m, str) for m in models):
        raise ConfigError(f"{where}: 'models' must be a list of model names")
    mode = entry.get("mode", STANDARD)
    if not isinstance(mode, str) or not mode:
        raise ConfigError(f"{where}: 'mode' must be a non-empty string")


def _check_limits(entry: Mapping[str, Any], where: str) -> None:
    """Refuse a prompt whose ``max_length``, ``max_tokens`` or ``stop`` is wrong."""
    max_length = entry.get("max_length")
    if max_length is not None and (not _is_count(max_length) or max_length < 1):
        raise ConfigError(f"{where}: 'max_length' must be a positive number of characters")
    if entry.get("max_tokens") is not None and not _is_count(entry["max_tokens"]):
        raise ConfigError(f"{where}: 'max_tokens' must be an integer")
    stop = entry.get("stop")
    if stop is not None and (not isinstance(stop, list) or not all(isinstance(s, str) for s in stop)):
        raise ConfigError(f"{where}: 'stop' must be a list of strings")


def check_message(message: Any, at: str) -> str | None:
    """Check one ``messages`` entry and return its OpenAI role, or None for a plain string template
    (it renders to a list of messages); ConfigError naming ``at`` when it is wrong."""
    if isinstance(message, str):
        return None
    if not isinstance(message, dict):
        raise ConfigError(f"{at}: a message is {{type, content}} or a string template")
    unknown = [k for k in message if k not in MESSAGE_KEYS]
    if unknown:
        raise ConfigError(f"{at}: unknown key {unknown[0]!r} (keys: type, content)")
    kind = message.get("type")
    if kind not in ROLES:
        raise ConfigError(
            f"{at}: unknown type {kind!r}" + did_you_mean(str(kind), list(ROLES)) + f"; types: {', '.join(ROLES)}"
        )
    if not isinstance(message.get("content"), str):
        raise ConfigError(f"{at}: 'content' must be a string")
    return ROLES[kind]
