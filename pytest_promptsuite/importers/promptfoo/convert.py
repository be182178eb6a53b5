"""``promptsuite import promptfoo``: a ``promptfooconfig.yaml`` into a suite that runs as it is.
Every prompt x provider pair is a variant; files are read inside the config's folder only."""

from __future__ import annotations

import copy
import glob
import re
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import yaml

from pytest_promptsuite.config.suite import confine
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.csvio import read_csv
from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.formats.yamlio import load_yaml
from pytest_promptsuite.importers.output import ImportedSuite
from pytest_promptsuite.importers.output import ImportResult
from pytest_promptsuite.importers.output import inside
from pytest_promptsuite.importers.output import write_import
from pytest_promptsuite.importers.promptfoo.tests import AssertModule
from pytest_promptsuite.importers.promptfoo.tests import TestSource
from pytest_promptsuite.importers.promptfoo.tests import cases_of
from pytest_promptsuite.importers.promptfoo.tests import csv_test
from pytest_promptsuite.safety.scrub import register


_KEYS = frozenset(
    "description prompts providers targets tests defaultTest outputPath sharing env evaluateOptions commandLineOptions "
    "writeLatestResults nunjucksFilters metadata scenarios derivedMetrics extensions redteam tags assertionTemplates "
    "outputs".split()
)
#: The config's keys that are carried over; every other key present is listed in the import report.
_CARRIED = frozenset(
    "description prompts providers targets tests scenarios defaultTest assertionTemplates nunjucksFilters".split()
)
_TEXT_PROMPT = (".txt",)  # split on lines of '---'; .md, .j2 and other text files are one prompt each
_CHAT_ROLES = {"system": "system", "user": "user", "assistant": "assistant"}


@dataclass
class _Prompt:
    """One prompt: a template string, or chat messages (``[{role, content}]``)."""

    label: str
    text: str | None = None
    messages: list[dict[str, str]] | None = None
    ident: str | None = None
    #: The prompt's own ``config``: merged over its providers' settings, as promptfoo merges it.
    config: dict[str, Any] | None = None
    #: A prompt function: ``FILE.js``, ``FILE.js:NAME``, ``FILE.py[:NAME]`` (inside the config's folder).
    function: str | None = None
    #: The prompt function's file (relative, text), copied into the suite.
    source: tuple[str, str] | None = None

    def allowed(self, refs: Any) -> bool:
        """Tell whether a ``prompts:`` filter (labels, ids, ``prefix*``) lets this prompt run, as
        promptfoo's ``isPromptAllowed`` does (no filter: every prompt)."""
        if not isinstance(refs, list):
            return True
        names = [n for n in (self.label, self.ident) if n]
        return any(
            isinstance(ref, str)
            and any(
                n == ref or (ref.endswith("*") and n.startswith(ref[:-1])) or n.startswith(f"{ref}:") for n in names
            )
            for ref in refs
        )


class _Config:
    """The config file, its YAML node tree (for line numbers) and the folder its files lie in."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.root = path.resolve().parent
        text = self.read_text(path.name, None)
        data, self.node = load_yaml(text, str(path), core=True)
        if not isinstance(data, dict):
            raise ConfigError(f"{path}:1: a promptfoo config is a mapping (prompts, providers, tests)")
        self.data: dict[str, Any] = data
        self.notes: list[str] = []

    def where(self, *keys: Any) -> str:
        """Return ``path:line`` of the value at ``keys`` (the nearest line the node tree has)."""
        node = self.node
        for key in keys:
            if isinstance(node, yaml.MappingNode):
                found = [v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key]
                if not found:
                    break
                node = found[0]
            elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
                node = node.value[key]
            else:
                break
        line = int(node.start_mark.line) + 1 if node is not None else 1
        return f"{self.path}:{line}"

    def file(self, relative: str, where: str | None) -> Path:
        """Resolve a file the config names, inside its folder both as written (``..`` taken as promptfoo
        takes it) and with links followed."""
        normal = inside(relative)
        target = confine(self.root, normal) if normal is not None else None
        if target is None:
            raise ConfigError(f"{where or self.path}: file://{relative} lies outside the config's folder")
        if target.is_dir():
            raise ConfigError(f"{where or self.path}: file://{relative} is a folder: name its files with a glob")
        if not target.is_file():
            raise ConfigError(f"{where or self.path}: file://{relative}: no such file")
        return target

    def read_text(self, relative: str, where: str | None) -> str:
        """Read the UTF-8 text of a file inside the config's folder."""
        path = self.file(relative, where)
        try:
            return path.read_bytes().decode("utf-8-sig")
        except OSError as exc:
            raise ConfigError(f"{where or path}: cannot read {path}: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{where or path}: {path} is not UTF-8 text: {exc.reason}") from None


def _chat(value: Any, where: str) -> list[dict[str, str]] | None:
    if not isinstance(value, list) or not value:
        return None
    if not all(
        isinstance(m, dict)
        and m.get("role") in _CHAT_ROLES
        and isinstance(m.get("content"), str)
        and set(m) == {"role", "content"}
        for m in value
    ):
        raise ConfigError(f"{where}: a chat prompt is a list of {{role, content}} (system, user, assistant)")
    return [{"role": m["role"], "content": m["content"]} for m in value]


def _file_prompts(config: _Config, relative: str, where: str) -> list[_Prompt]:
    text = config.read_text(relative, where)
    if relative.endswith(".json"):
        try:
            messages = _json_chat(config, decode(text), relative, where)
        except JsonError as exc:
            if "{%" not in text and "{{" not in text:
                problem = exc.describe()
                raise ConfigError(f"{config.path.parent / relative}:{exc.line or 1}: invalid JSON: {problem}") from None
            messages = None  # a template that is JSON once rendered: promptfoo renders first, then parses
            config.notes.append(
                f"{where}: {relative} is JSON only once rendered: imported as a text prompt (promptfoo sends "
                "the rendered text to a chat model as the messages it parses to)"
            )
        if messages is None:  # promptfoo's processJsonFile: the file's JSON (or text, if it is none) is the prompt
            try:
                return [_Prompt(relative, text=_stringify(decode(text)))]
            except JsonError:
                return [_Prompt(relative, text=text)]
        return [_Prompt(relative, messages=messages)]
    full = str(config.root / relative)
    if relative.endswith((".yaml", ".yml")):  # promptfoo's processYamlFile: the file's value as JSON is the prompt
        try:
            value = load_yaml(text, full, core=True)[0]
            raw = _stringify(value)
        except ConfigError:
            raw = text  # not YAML: its text, as promptfoo falls back
        try:
            prompt = _string_prompt(raw, where)
        except ConfigError:  # a list, but not of {role, content}: promptfoo sends the JSON as written
            config.notes.append(
                f"{where}: {relative} is not a list of {{role, content}} messages: imported as a text prompt "
                "(its value as JSON, as promptfoo sends it)"
            )
            prompt = _Prompt(raw, text=raw)
        prompt.label = f"{full}: {raw[:80]}"
        return [prompt]
    if not relative.endswith((".txt", ".md", ".j2", ".njk", ".prompt")):
        raise ConfigError(
            f"{where}: prompt file {relative}: only .txt, .md, .j2, .json, .jsonl, .yaml and .csv prompts are imported"
        )
    if not relative.endswith(_TEXT_PROMPT):  # promptfoo's processJinjaFile, processMarkdownFile: the whole file
        return [_Prompt(f"{full}: {text[:50]}...", text=text)]
    parts: list[str] = []
    buffer: list[str] = []  # promptfoo splits on lines of '---', then trims each part
    lines = text.splitlines()
    for line in [*lines, "---"]:
        if line.strip() == "---":
            if "\n".join(buffer).strip():
                parts.append("\n".join(buffer).strip())
            buffer = []
        else:
            buffer.append(line)
    return [_Prompt(f"{full}: {p}", text=p) for p in parts]


def _json_template(raw: str) -> str | None:
    """Return the template of a text prompt that parses as JSON (None when it does not): promptfoo's
    ``renderPrompt`` renders each string in it and writes the value back as ``JSON.stringify(value, null, 2)``,
    so a var's quotes and line ends arrive escaped."""
    try:
        value = decode(raw)
    except JsonError:
        return None
    leaves: list[str] = []

    def mark(item: Any) -> Any:
        if isinstance(item, str) and any(m in item for m in ("{{", "{%", "{#")):
            leaves.append(item)
            return f"{_LEAF}{len(leaves) - 1}{_LEAF}"
        if isinstance(item, list):
            return [mark(x) for x in item]
        if isinstance(item, dict):
            return {key: mark(x) for key, x in item.items()}
        return item

    if _LEAF in raw:
        return None  # never seen; the text is then rendered as it is
    written = _stringify(mark(value), indent=2)
    parts = re.split(f'"{_LEAF}(\\d+){_LEAF}"', written)  # the structure, then a leaf's number, in turn
    template = []
    for i, part in enumerate(parts):
        if i % 2:  # a string promptfoo renders: rendered, then written as a JSON string
            template.append("{% filter dump %}" + leaves[int(part)] + "{% endfilter %}")
        elif any(m in part for m in ("{{", "{%", "{#")):  # a key: promptfoo renders the values only
            template.append("{% raw %}" + part + "{% endraw %}")
        else:
            template.append(part)
    return "".join(template)


def _stringify(value: Any, indent: int | None = None) -> str:
    """Write ``value`` as JavaScript's ``JSON.stringify(value, null, indent)`` does: ``1`` for 1.0."""

    def numbers(item: Any) -> Any:
        if isinstance(item, float) and item.is_integer() and abs(item) < 1e21:
            return int(item)
        if isinstance(item, list):
            return [numbers(x) for x in item]
        if isinstance(item, dict):
            return {key: numbers(x) for key, x in item.items()}
        return item

    return encode(numbers(value), indent=indent, compact=indent is None, scrub=False)


#: Marks a string of a JSON prompt that holds template syntax, while the value is written back.
_LEAF = "@@promptfoo-leaf@@"


def _json_chat(config: _Config, value: Any, relative: str, where: str) -> list[dict[str, str]] | None:
    """Return the chat messages a JSON prompt file holds; None (noted) when they are not plain
    ``{role, content}`` strings, which promptfoo hands to the provider as they are written."""
    try:
        return _chat(value, str(config.root / relative))
    except ConfigError:
        config.notes.append(
            f"{where}: {relative} is not a list of {{role, content}} strings: imported as a text prompt "
            "(promptfoo hands the file's JSON to the provider as written)"
        )
        return None


def _csv_prompts(config: _Config, relative: str, where: str, label: Any, ident: Any) -> list[_Prompt]:
    """Read a CSV prompt file as promptfoo's ``processCsvPrompts`` does: a ``prompt`` column (and an
    optional ``label``), or, when the file has no comma, one prompt a line (a ``prompt`` header skipped)."""
    text = config.read_text(relative, where)
    if "," in text:
        rows = read_csv(text.encode("utf-8"), str(config.root / relative))
        found = [(r.get("prompt", "").strip(), r.get("label", "").strip()) for _, r in rows]
        found = [(raw, label) for raw, label in found if raw]
    else:
        lines = [line for line in text.splitlines() if line.strip()]
        found = [(line, "") for line in lines[1 if lines and lines[0].strip().lower() == "prompt" else 0 :]]
    if not found:
        raise ConfigError(f"{where}: {relative} holds no prompts (a 'prompt' column, or one prompt a line)")
    out: list[_Prompt] = []
    several = len(found) > 1
    for index, (raw, own) in enumerate(found):  # promptfoo's buildCsvRowLabel and buildCsvPrompts
        prompt = _string_prompt(raw, where)
        base = f"{label}: {raw}" if label and several else str(label) if label else f"Prompt {index + 1} - {raw}"
        prompt.label = own or base
        if isinstance(ident, str):
            prompt.ident = f"{ident}:{index + 1}" if several else ident
        out.append(prompt)
    return out


def _jsonl_prompts(config: _Config, relative: str, where: str, label: Any) -> list[_Prompt]:
    """Read a JSONL prompt file as promptfoo's ``processJsonlFile`` does: a prompt a line, labelled
    ``LABEL: LINE`` (or ``PATH: LINE``) when there are several, else ``LABEL`` (or ``PATH``)."""
    lines = [line for line in config.read_text(relative, where).splitlines() if line]
    named = str(label) if label else str(config.root / relative)
    made = [_string_prompt(line, where) for line in lines]
    for prompt, line in zip(made, lines, strict=True):
        prompt.label = f"{named}: {line}" if len(lines) > 1 else named
    return made


def _string_prompt(item: str, where: str) -> _Prompt:
    """Make a prompt of a string: chat messages when it is a JSON list of them, a template otherwise."""
    try:
        messages = _chat(decode(item), where)
    except JsonError:
        messages = None
    return _Prompt(item, messages=messages, text=None if messages else item)


#: The files promptfoo runs as prompt functions; TypeScript (.ts, .cts, .mts) needs a loader Node.js 20 lacks.
_FUNCTION_FILES = (".js", ".cjs", ".mjs", ".py")
_TYPESCRIPT = (".ts", ".cts", ".mts")


def _function_prompt(config: _Config, written: str, where: str) -> _Prompt:
    """Make a prompt function of ``file://FILE[:NAME]``, labelled as promptfoo's ``processJsFile`` and
    ``processPythonFile`` label it; it runs when each case renders (``[template] prompt_function``)."""
    cut = written.rfind(":")  # promptfoo's parsePathOrGlob: FILE:NAME at the last colon
    relative, name = (written[:cut], written[cut + 1 :] or None) if cut > 1 else (written, None)
    normal = inside(relative)
    if normal is None:
        raise ConfigError(f"{where}: file://{relative} lies outside the config's folder")
    if normal in _RESERVED:
        raise ConfigError(f"{where}: file://{relative}: a prompt function's file may not be named {normal}")
    text = config.read_text(normal, where)  # read now: a missing file is an import error
    full = str(config.root / normal)
    if name is not None:
        label = f"{full}:{name}"
    else:
        label = f"{full}: {text}" if normal.endswith(".py") else full
    return _Prompt(label, function=f"{normal}:{name}" if name else normal, source=(normal, text))


#: The files an imported suite is made of: a file the config names may not take their place.
_RESERVED = frozenset({"promptsuite.toml", "cases.jsonl", "prompts.yml", "promptfoo_asserts.py"})


def _prompt_items(config: _Config) -> list[Any]:
    """Return the config's prompts as a list, as promptfoo's ``normalizeInput`` reads them: a string, a
    list, or a mapping of each prompt to its label (``{file://a.txt: Label A}``)."""
    raw = config.data.get("prompts")
    if isinstance(raw, dict) and raw:
        return [{"raw": str(prompt), "label": label} for prompt, label in raw.items()]
    return raw if isinstance(raw, list) else [raw] if raw is not None else ["{{prompt}}"]  # promptfoo's default


def _prompts(config: _Config) -> list[_Prompt]:
    items = _prompt_items(config)
    if not items:
        raise ConfigError(f"{config.where('prompts')}: the config has no prompts")
    out: list[_Prompt] = []
    for i, item in enumerate(items):
        where = config.where("prompts", i)
        label = ident = settings = None
        if isinstance(item, dict):
            extra = sorted(set(map(str, item)) - {"label", "raw", "id", "config"})
            if extra:
                config.notes.append(f"{where}: prompt keys not carried over: {', '.join(extra)}")
            settings = item.get("config")
            if settings is not None and not isinstance(settings, dict):
                raise ConfigError(f"{where}: a prompt's config is a mapping of provider settings")
            label, ident, item = item.get("label"), item.get("id"), item.get("raw", item.get("id"))
        if not isinstance(item, str):
            raise ConfigError(f"{where}: a prompt is a string, file://PATH or {{raw|id, label}}")
        for one in _prompt_glob(config, item, where):
            out.extend(_one_prompt(config, one, where, label, ident, settings))
    return out


def _prompt_glob(config: _Config, item: str, where: str) -> list[str]:
    """Expand a ``file://`` prompt whose path is a glob (``file://prompts/*.txt``) into one item per file
    inside the config's folder, in sorted order (promptfoo's follows the file system's); others as written."""
    if not item.startswith("file://"):
        return [item]
    written = item[len("file://") :]
    cut = written.rfind(":")
    path, function = (written[:cut], written[cut:]) if cut > 1 else (written, "")
    if not any(ch in path for ch in "*?[{"):
        return [item]
    normal = inside(path)
    if normal is None:
        raise ConfigError(f"{where}: {item} lies outside the config's folder")
    found = sorted(glob.glob(normal, root_dir=config.root, recursive=True))
    if not found:
        raise ConfigError(f"{where}: {item}: no prompt file matches")
    return [f"file://{match}{function}" for match in found]


def _one_prompt(
    config: _Config, item: str, where: str, label: Any, ident: Any, settings: dict[str, Any] | None
) -> list[_Prompt]:
    """Read one prompt item (a string, or one ``file://`` file), labelled as promptfoo labels it."""
    if item.startswith("file://") and item.endswith(".csv"):  # labelled and named row by row
        made = _csv_prompts(config, item[len("file://") :], where, label, ident)
        for prompt in made:
            prompt.config = settings or None  # promptfoo spreads the prompt's keys over each row's
        return made
    if item.startswith("file://") and item.endswith(".jsonl"):
        found = _jsonl_prompts(config, item[len("file://") :], where, label)
        label = None  # labelled line by line as promptfoo labels them
    elif item.startswith("file://") and _is_code(item, _TYPESCRIPT):
        raise ConfigError(
            f"{where}: {item}: TypeScript prompt functions are not imported (promptfoo loads them with a "
            "TypeScript loader); write it as .js, .mjs or .py"
        )
    elif item.startswith("file://") and _is_code(item, _FUNCTION_FILES):
        found = [_function_prompt(config, item[len("file://") :], where)]
    elif item.startswith("file://"):
        found = _file_prompts(config, item[len("file://") :], where)
    else:
        found = [_string_prompt(item, where)]
    for prompt in found:
        prompt.ident = ident if isinstance(ident, str) else None
        prompt.config = settings or None
        if label and item.startswith("file://") and item.endswith(_TEXT_PROMPT):
            prompt.label = f"{label}: {prompt.label}"
        elif label:
            prompt.label = str(label)
    return found


def _is_code(written: str, kinds: tuple[str, ...]) -> bool:
    """Tell whether ``FILE[:NAME]`` names a file of code of one of ``kinds`` (its extensions)."""
    cut = written.rfind(":")
    return any(part.lower().endswith(kinds) for part in (written, written[:cut] if cut > 1 else written))


@dataclass
class _Provider:
    """A provider as the suite runs it: its label, ``[model]`` keys, ``prompts:`` filter, the
    ``[template]`` keys of its variants (the tools it offers), and the ``{id, label}`` a prompt
    function is given."""

    label: str
    model: dict[str, Any]
    allowed: Any = None
    template: dict[str, Any] = field(default_factory=dict)
    who: dict[str, str] = field(default_factory=lambda: {"id": "echo", "label": ""})


def _provider(config: _Config, raw: Any, where: str) -> _Provider | None:
    """Convert a provider; None (listed) when we have no such model."""
    options: dict[str, Any] = {}
    if isinstance(raw, dict) and "id" not in raw and len(raw) == 1:  # {"openai:gpt-4o": {config: ...}}
        ((ident, inner),) = raw.items()
        options = inner if isinstance(inner, dict) else {}
    elif isinstance(raw, dict):
        ident, options = raw.get("id"), raw
    else:
        ident = raw
    if not isinstance(ident, str):
        raise ConfigError(f"{where}: a provider is an id string or {{id, label, config}}")
    label = str(options.get("label") or ident)
    settings: dict[str, Any] = options["config"] if isinstance(options.get("config"), dict) else {}
    if isinstance(settings.get("apiKey"), str):  # never carried over, and scrubbed wherever it shows
        register(settings["apiKey"])
    extra = sorted(set(map(str, options)) - {"id", "label", "config", "prompts"})
    if extra:
        config.notes.append(f"{where}: provider {ident} keys not carried over: {', '.join(extra)}")
    allowed = options.get("prompts")
    who = {"id": ident, "label": str(options.get("label") or "")}  # loadApiProvider's label: "" when none
    if ident == "echo":
        return _Provider(label, {"spec": "echo"}, allowed, who=who)
    if ident.startswith("openai:"):
        parts = ident.split(":")
        typed = parts[1] in ("chat", "completion") and len(parts) > 2
        kind, name = (parts[1], ":".join(parts[2:])) if typed else ("chat", ":".join(parts[1:]))
        endpoint = "completions" if kind == "completion" else "chat"
        table: dict[str, Any] = {"spec": f"openai:{name}", "endpoint": endpoint}
        params = {k: v for k, v in settings.items() if k in _PARAMS}
        if params:
            table["params"] = params
        if isinstance(settings.get("apiBaseUrl"), str):
            table["base_url"] = settings["apiBaseUrl"]
        template = _tools(config, settings, where)
        dropped = sorted(set(settings) - set(params) - {"apiBaseUrl", "tools", "functions", "tool_choice"})
        if dropped:
            config.notes.append(f"{where}: provider {ident} settings not carried over: {', '.join(dropped)}")
        return _Provider(label, table, allowed, template, who)
    config.notes.append(f"{where}: provider {ident} is not supported (supported: echo, openai:...)")
    return None


#: The provider (or prompt) settings carried over as request params of an ``openai:`` model;
#: ``response_format`` sent as written, as promptfoo sends it (not checked).
_PARAMS = ("temperature", "max_tokens", "top_p", "seed", "stop", "response_format")


def _tools(config: _Config, settings: dict[str, Any], where: str) -> dict[str, Any]:
    """Return the ``[template]`` keys of an OpenAI provider's ``tools`` (a list, or a ``file://`` JSON or
    YAML file, as promptfoo loads it), its legacy ``functions`` (offered as function tools) and
    ``tool_choice``: the checks of tool calls read them, as promptfoo's read the provider's."""
    keys: dict[str, Any] = {}
    tools: list[Any] = []
    for key in ("tools", "functions"):
        value = settings.get(key)
        if isinstance(value, str) and value.startswith("file://"):
            relative = value[len("file://") :]
            value = load_yaml(config.read_text(relative, where), str(config.root / relative), core=True)[0]
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
            raise ConfigError(f"{where}: the provider's {key} is a list of {key} (objects)")
        tools.extend(value if key == "tools" else [{"type": "function", "function": f} for f in value])
    if tools:
        keys["tools"] = tools
    if settings.get("functions") is not None:
        config.notes.append(f"{where}: the provider's functions are offered as tools (OpenAI's tools API)")
    if settings.get("tool_choice") is not None:
        keys["tool_choice"] = settings["tool_choice"]
    return keys


def _with_prompt_config(config: _Config, model: dict[str, Any], prompt: _Prompt) -> dict[str, Any]:
    """Return a provider's ``[model]`` table with ``prompt``'s own ``config`` over its params (promptfoo merges
    the prompt's config over the provider's); what cannot be carried is listed. ``echo`` reads none of it."""
    if not prompt.config or not str(model.get("spec", "")).startswith("openai:"):
        return model
    carried = {k: v for k, v in prompt.config.items() if k in _PARAMS}
    dropped = sorted(set(map(str, prompt.config)) - set(carried))
    if dropped:
        config.notes.append(f"prompt {prompt.label}: config not carried over: {', '.join(dropped)}")
    return {**model, "params": {**model.get("params", {}), **carried}} if carried else model


def _providers(config: _Config) -> list[_Provider]:
    key = "targets" if "targets" in config.data else "providers"  # promptfoo's alias
    if "targets" in config.data and "providers" in config.data:
        raise ConfigError(f"{config.where('targets')}: a config has targets or providers, not both")
    raw = config.data.get(key)
    items = raw if isinstance(raw, list) else [raw] if raw is not None else []
    seen: set[str] = set()
    found = []
    for i, item in enumerate(items):
        written = encode(item, compact=True, scrub=False)
        if written in seen:  # promptfoo runs a provider written twice alike once (its providerDedupeKey)
            continue
        seen.add(written)
        where = config.where(key, i) if isinstance(raw, list) else config.where(key)
        for one in _provider_file(config, item, where):
            if made := _provider(config, one, where):
                found.append(made)
    if not found:
        config.notes.append("no supported provider: the suite uses the echo model")
        found = [_Provider("echo", {"spec": "echo"})]  # promptfoo's echo: id "echo", label ""
    return found


def _provider_file(config: _Config, item: Any, where: str) -> list[Any]:
    """Read the providers of a ``file://x.yaml`` (``.yml``, ``.json``) reference as promptfoo's
    ``loadProvidersFromFile`` does: one provider, or a list of them, each with an ``id``; any other item as it is."""
    if not (isinstance(item, str) and item.startswith("file://") and item.endswith((".yaml", ".yml", ".json"))):
        return [item]
    relative = item[len("file://") :]
    value = load_yaml(config.read_text(relative, where), str(config.root / relative), core=True)[0]
    providers = value if isinstance(value, list) else [value]
    for provider in providers:
        if not isinstance(provider, dict) or not isinstance(provider.get("id"), str):
            raise ConfigError(f"{config.root / relative}: each provider in {relative} is a mapping with an 'id'")
    return providers


def _tests(config: _Config) -> list[TestSource]:
    raw = config.data.get("tests")
    items = raw if isinstance(raw, list) else [raw] if raw is not None else []
    tests: list[TestSource] = []
    for i, item in enumerate(items):
        where = config.where("tests", i) if isinstance(raw, list) else config.where("tests")
        if isinstance(item, str):
            tests.extend(t for path in _glob(config, item, where) for t in _test_file(config, path, where))
        elif isinstance(item, dict) and isinstance(item.get("path"), str) and "vars" not in item:
            tests.extend(t for path in _glob(config, item["path"], where) for t in _test_file(config, path, where))
        elif isinstance(item, dict):
            tests.append(TestSource(item, where))
        else:
            raise ConfigError(f"{where}: a test is a mapping (vars, assert) or file://tests.csv|yaml|json|jsonl")
    tests.extend(_scenario_tests(config))
    if not tests:
        raise ConfigError(f"{config.where('tests')}: the config has no tests")
    return tests


def _scenario_tests(config: _Config) -> list[TestSource]:
    """Make the tests of ``scenarios`` as promptfoo's ``buildTestsFromSuite`` does: each scenario's ``config``
    entry with each of its ``tests``, the entry's vars, options and metadata under the test's, its asserts
    before the test's (``defaultTest`` is merged in later, as for every test)."""
    raw = config.data.get("scenarios")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ConfigError(f"{config.where('scenarios')}: scenarios is a list of {{config, tests}}")
    made: list[TestSource] = []
    for i, scenario in enumerate(raw):
        where = config.where("scenarios", i)
        if not isinstance(scenario, dict):
            raise ConfigError(f"{where}: a scenario is {{config: [...], tests: [...]}}")
        entries, tests = scenario.get("config"), scenario.get("tests")
        if tests is None:  # promptfoo's schema refuses it (with a warning) and runs nothing of it
            config.notes.append(f"{where}: a scenario without tests makes no test (promptfoo's schema refuses it)")
            continue
        if not isinstance(entries, list) or not isinstance(tests, list):
            raise ConfigError(f"{where}: a scenario is {{config: [...], tests: [...]}}")
        if not all(isinstance(item, dict) for item in (*entries, *tests)):
            raise ConfigError(f"{where}: a scenario's config entries and tests are mappings")
        for j, data in enumerate(entries):
            for k, test in enumerate(tests):
                merged = {
                    **data,
                    **test,
                    "vars": {**(data.get("vars") or {}), **(test.get("vars") or {})},
                    "options": {**(data.get("options") or {}), **(test.get("options") or {})},
                    "assert": [*(data.get("assert") or []), *(test.get("assert") or [])],
                }
                metadata = {**(data.get("metadata") or {}), **(test.get("metadata") or {})}
                if metadata:
                    merged["metadata"] = metadata
                at = ("tests", k) if test else ("config", j)  # the test's line, or its config entry's
                made.append(TestSource(merged, config.where("scenarios", i, *at)))
    return made


def _glob(config: _Config, written: str, where: str) -> list[str]:
    """Expand a test file's name or glob (``file://`` optional) inside the config's folder, in order."""
    relative = written.removeprefix("file://")
    if ":" in relative or relative.endswith((".js", ".ts", ".mjs", ".cjs", ".py")):
        raise ConfigError(f"{where}: {written}: tests made by code (.js, .py) are not imported")
    normal = inside(relative)
    if normal is None:
        raise ConfigError(f"{where}: file://{relative} lies outside the config's folder")
    if not any(ch in normal for ch in "*?[{"):
        return [normal]
    found = sorted(glob.glob(normal, root_dir=config.root, recursive=True))
    if not found:
        raise ConfigError(f"{where}: {written}: no test file matches")
    return found


def _test_file(config: _Config, relative: str, where: str) -> list[TestSource]:
    """Read one test file as promptfoo's ``loadTestsFromGlob`` does, by its extension."""
    path = config.file(relative, where)
    if relative.endswith(".csv"):
        rows = read_csv(path.read_bytes(), str(path))
        return [TestSource(csv_test(row, f"{path}:{line}", i), f"{path}:{line}") for i, (line, row) in enumerate(rows)]
    text = config.read_text(relative, where)
    if relative.endswith(".jsonl"):
        items, lines = [], []
        for number, line in enumerate(text.split("\n"), start=1):
            if line.strip():
                try:
                    items.append(decode(line))
                except JsonError as exc:
                    raise ConfigError(f"{path}:{number}: invalid JSON: {exc.describe()}") from None
                lines.append(number)
    elif relative.endswith((".yaml", ".yml", ".json")):
        value, node = load_yaml(text, str(path), core=True)
        items = value if isinstance(value, list) else [value]
        lines = [int(n.start_mark.line) + 1 for n in node.value] if isinstance(node, yaml.SequenceNode) else [1]
    else:
        raise ConfigError(f"{where}: test file {relative}: only .csv, .yaml, .json and .jsonl test files are imported")
    items = dereference(items, items, f"{path}")
    if not all(isinstance(t, dict) for t in items):
        raise ConfigError(f"{path}:1: a test file holds a list of tests (mappings)")
    return [TestSource(t, f"{path}:{lines[i] if i < len(lines) else 1}") for i, t in enumerate(items)]


def dereference(value: Any, root: Any, where: str, depth: int = 0) -> Any:
    """Replace every ``{$ref: '#/a/b'}`` in ``value`` by what it points to in ``root`` (as promptfoo's
    ``$RefParser.dereference`` does for the config and its test files); only references inside the file."""
    if depth > 32:
        raise ConfigError(f"{where}: $ref references nest deeper than 32 (a reference that contains itself?)")
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str):
            if not ref.startswith("#/") and ref != "#":
                raise ConfigError(f"{where}: $ref {ref!r}: only references inside the file (#/...) are imported")
            target = root
            for part in [p.replace("~1", "/").replace("~0", "~") for p in ref[2:].split("/") if p]:
                if isinstance(target, dict) and part in target:
                    target = target[part]
                elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                    target = target[int(part)]
                else:
                    raise ConfigError(f"{where}: $ref {ref!r} points to nothing")
            return dereference(copy.deepcopy(target), root, where, depth + 1)
        return {k: dereference(v, root, where, depth) for k, v in value.items()}
    if isinstance(value, list):
        return [dereference(v, root, where, depth) for v in value]
    return value


def _prompt_table(prompt: _Prompt, index: int, files: dict[str, str], tasks: list[dict[str, Any]]) -> dict[str, Any]:
    if prompt.function is not None:  # the file copied as it is named; it runs as each case renders
        assert prompt.source is not None
        files[prompt.source[0]] = prompt.source[1]
        return {"prompt_function": prompt.function, "semantics": "promptfoo"}
    if prompt.messages is not None:
        task = f"prompt-{index}"
        messages = [{"type": m["role"], "content": m["content"]} for m in prompt.messages]
        tasks.append({"task": task, "messages": messages})
        return {"task_prompts": "prompts.yml", "task": task, "semantics": "promptfoo"}  # promptfoo renders each message
    name = f"prompts/prompt-{index}.txt"
    files[name] = prompt.text or ""
    return {"template_file": name, "semantics": "promptfoo"}  # Nunjucks' rules, as promptfoo renders it


def _with_provider(config: _Config, table: dict[str, Any], prompt: _Prompt, who: dict[str, str]) -> dict[str, Any]:
    """Give a prompt function's table what promptfoo gives the function besides the vars: its provider's
    ``{id, label}`` and the prompt's ``config`` (a key that may hold a secret left out, and listed: the
    suite is a file)."""
    if "prompt_function" not in table:
        return table
    settings = {k: v for k, v in (prompt.config or {}).items() if not _SECRET_KEY.search(str(k))}
    dropped = sorted(set(map(str, prompt.config or {})) - set(map(str, settings)))
    if dropped:
        config.notes.append(f"prompt {prompt.label}: config not given to the function: {', '.join(dropped)}")
    return {**table, "prompt_context": {"provider": who, "config": settings}}


#: The settings never written into a suite: an API key, a token, a secret, a password.
_SECRET_KEY = re.compile(r"api[-_]?key|(?:access|auth|bearer|api)[-_]?token|secret|passw", re.IGNORECASE)


def _nunjucks_filters(config: _Config, tables: list[dict[str, Any]], files: dict[str, str]) -> None:
    """Carry ``nunjucksFilters`` (name -> JavaScript file) onto every promptfoo template, the files
    copied beside the prompts; they run in Node.js as promptfoo runs them."""
    raw = config.data.get("nunjucksFilters")
    if not raw:
        return
    where = config.where("nunjucksFilters")
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise ConfigError(f"{where}: nunjucksFilters maps a filter name to a JavaScript file")
    filters: dict[str, str] = {}
    for name, written in raw.items():
        relative = inside(written.removeprefix("file://"))
        if relative is None:
            raise ConfigError(f"{where}: nunjucksFilters {name}: {written} lies outside the config's folder")
        if relative in files or relative == "promptsuite.toml":
            raise ConfigError(f"{where}: nunjucksFilters {name}: a filter's file may not be named {relative}")
        files[relative] = config.read_text(relative, where)
        filters[str(name)] = relative
    for table in tables:
        if table.get("semantics") == "promptfoo":
            table["nunjucks_filters"] = filters


def promptfoo_suite(path: Path, *, slice_key: str | None = None) -> ImportedSuite:
    """Build the suite of a promptfoo config in memory (nothing written)."""
    config = _Config(path)
    unknown = sorted(set(config.data) - _KEYS)
    if unknown:
        raise ConfigError(f"{config.where(unknown[0])}: unknown key {unknown[0]!r} in a promptfoo config")
    for key in sorted(_KEYS - _CARRIED):
        if config.data.get(key):
            config.notes.append(f"{config.where(key)}: {key} not carried over")
    config.data = dereference(config.data, config.data, str(path))
    prompts, providers = _prompts(config), _providers(config)
    default = config.data.get("defaultTest") or {}
    if isinstance(default, str) and default.startswith("file://"):  # promptfoo reads it from a YAML file
        relative = default[len("file://") :]
        default = load_yaml(
            config.read_text(relative, config.where("defaultTest")), str(config.root / relative), core=True
        )[0]
    if not isinstance(default, dict):
        raise ConfigError(f"{config.where('defaultTest')}: defaultTest is a mapping")
    code = AssertModule()
    unsupported: list[str] = []
    cases = cases_of(
        _tests(config),
        default,
        read_var=lambda rel, where: config.read_text(rel, where).strip(),
        slice_key=slice_key,
        code=code,
        unsupported=unsupported,
        default_where=config.where("defaultTest"),
    )
    files: dict[str, str] = {"cases.jsonl": cases.text}
    tasks: list[dict[str, Any]] = []
    for prompt in prompts:
        made = None if prompt.text is None else _json_template(prompt.text)
        if made is not None and cases.affixed:  # JSON only when the test adds no prefix or suffix
            around = "{{ promptfoo_prefix }}" + prompt.text + "{{ promptfoo_suffix }}"  # type: ignore[operator]
            prompt.text = f"{{% if promptfoo_prefix or promptfoo_suffix %}}{around}{{% else %}}{made}{{% endif %}}"
        elif made is not None:
            prompt.text = made
        elif cases.affixed:  # promptfoo puts a test's prefix and suffix around the prompt's text
            if prompt.text is not None:
                prompt.text = "{{ promptfoo_prefix }}" + prompt.text + "{{ promptfoo_suffix }}"
            elif prompt.function is None:  # promptfoo puts a function's answer in place of the prefixed text
                config.notes.append(f"not carried over: the tests' prefix and suffix on the chat prompt {prompt.label}")
    tables = [_prompt_table(p, i + 1, files, tasks) for i, p in enumerate(prompts)]
    _nunjucks_filters(config, tables, files)
    pairs = [
        (
            i,
            _with_provider(config, {**table, **provider.template}, prompts[i], provider.who),
            provider.label,
            provider.model,
        )
        for provider in providers  # promptfoo's order: each provider, then its prompts
        for i, table in enumerate(tables)
        if prompts[i].allowed(provider.allowed)
    ]
    if not pairs:
        raise ConfigError(f"{config.where('providers')}: the providers' prompts: filters leave no prompt to run")
    pairs.sort(key=lambda pair: pair[0])
    suite_config: dict[str, dict[str, Any]] = {"suite": {"cases": ["cases.jsonl"]}, "model": pairs[0][3]}
    if len(tables) * len(providers) == 1:
        suite_config["template"] = pairs[0][1]
        suite_config["model"] = _with_prompt_config(config, pairs[0][3], prompts[0])
    else:
        suite_config["template"] = dict(pairs[0][1])
        taken: set[str] = set()
        for i, table, label, model in pairs:
            name = f"p{i + 1}" if len(providers) == 1 else f"p{i + 1}-{_slug(label)}"
            first, n = name, 1
            while name in taken:  # two labels alike once made bare keys ('a:b', 'a/b') stay two variants
                n += 1
                name = f"{first}-{n}"
            taken.add(name)
            own = _with_prompt_config(config, model, prompts[i])  # the provider's table, the prompt's config over it
            mine = len(providers) > 1 or own is not model
            suite_config[f"variants.{name}"] = {**table, **({"model": own} if mine else {})}
    if cases.embedding is not None:  # the tests' options.provider: the similar checks' embeddings
        suite_config["models.embedding"] = cases.embedding
    if tasks:
        files["prompts.yml"] = encode({"prompts": tasks}, indent=2) + "\n"  # JSON is YAML
    if code.functions:
        files["promptfoo_asserts.py"] = code.text()
        for relative in code.files:  # copied beside the module; never in place of a file we write
            if relative in files or relative == "promptsuite.toml":
                raise ConfigError(f"{path}: file://{relative}: a code assert's file may not be named {relative}")
            files[relative] = config.read_text(relative, str(path))
    notes = list(dict.fromkeys([*config.notes, *(f"not carried over: {u}" for u in unsupported)]))
    header = f"Imported by `promptsuite import promptfoo` from {path.name}."
    return ImportedSuite(name=path.stem, config=suite_config, files=files, notes=notes, header=header)


def _slug(label: str) -> str:
    """Make a provider's label a variant name: a bare TOML key (a dot would nest the table)."""
    bare = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_") else "-" for ch in label)
    return bare.strip("-") or "provider"


def import_promptfoo(path: Path, *, out: Path, slice_key: str | None = None) -> ImportResult:
    """Import the promptfoo config at ``path`` into ``out``, all or nothing."""
    suite = promptfoo_suite(path, slice_key=slice_key)
    write_import(out, [suite], flat=True)
    return ImportResult(out, [suite])
