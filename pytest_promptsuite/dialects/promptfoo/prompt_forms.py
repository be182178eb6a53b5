"""promptfoo's prompt sources, read as promptfoo reads them: strings, text, JSON, YAML, JSONL and CSV files, prompt
functions, maps of prompts to labels, and globs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pytest_promptsuite.dialects.promptfoo.config_file import ConfigFile
from pytest_promptsuite.dialects.promptfoo.config_glob import expand
from pytest_promptsuite.dialects.promptfoo.config_glob import is_glob
from pytest_promptsuite.dialects.promptfoo.nunjucks import file_and_function
from pytest_promptsuite.dialects.promptfoo.nunjucks import js_json
from pytest_promptsuite.dialects.promptfoo.refusals import Refused
from pytest_promptsuite.dialects.promptfoo.refusals import refuse_remote_prompt
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.csvio import read_csv
from pytest_promptsuite.formats.imported_suite import inside
from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.formats.yamlio import load_yaml


_TEXT_PROMPT = (".txt",)  # split on lines of '---'; .md, .j2 and other text files are one prompt each
_CHAT_ROLES = {"system": "system", "user": "user", "assistant": "assistant"}


@dataclass
class ImportedPrompt:
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
    #: The label the config wrote for it (``{raw, label}``, a map's value, a CSV ``label`` cell): its variant's name.
    named: str | None = None

    def allowed(self, refs: Any) -> bool:
        """Tell whether a ``prompts:`` filter (labels, ids, ``prefix*``) lets this prompt run, as
        promptfoo's ``isPromptAllowed`` does (no filter: every prompt)."""
        if not isinstance(refs, list):
            return True
        names = [n for n in (self.label, self.ident) if n]
        return any(isinstance(ref, str) and any(_names(ref, n) for n in names) for ref in refs)


def _names(ref: str, name: str) -> bool:
    """Tell whether a ``prompts:`` filter entry names a prompt's label or id: as it is, ``prefix*``, or
    ``ref:...``."""
    return name == ref or (ref.endswith("*") and name.startswith(ref[:-1])) or name.startswith(f"{ref}:")


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


def _file_prompts(config: ConfigFile, relative: str, where: str) -> list[ImportedPrompt]:
    text = config.read_text(relative, where)
    if relative.endswith(".json"):
        return _json_file_prompts(config, relative, where, text)
    full = str(config.root / relative)
    if relative.endswith((".yaml", ".yml")):  # promptfoo's processYamlFile: the file's value as JSON is the prompt
        return _yaml_file_prompts(config, relative, where, text)
    if not relative.endswith((".txt", ".md", ".j2", ".njk", ".prompt")):
        raise ConfigError(
            f"{where}: prompt file {relative}: only .txt, .md, .j2, .json, .jsonl, .yaml and .csv prompts are imported"
        )
    if not relative.endswith(_TEXT_PROMPT):  # promptfoo's processJinjaFile, processMarkdownFile: the whole file
        return [ImportedPrompt(f"{full}: {text[:50]}...", text=text)]
    return [ImportedPrompt(f"{full}: {p}", text=p) for p in _text_parts(text)]


def _json_file_prompts(config: ConfigFile, relative: str, where: str, text: str) -> list[ImportedPrompt]:
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
    if messages is not None:
        return [ImportedPrompt(relative, messages=messages)]
    try:  # promptfoo's processJsonFile: the file's JSON (or text, if it is none) is the prompt
        return [ImportedPrompt(relative, text=js_json(decode(text)))]
    except JsonError:
        return [ImportedPrompt(relative, text=text)]


def _yaml_file_prompts(config: ConfigFile, relative: str, where: str, text: str) -> list[ImportedPrompt]:
    full = str(config.root / relative)
    try:
        value = load_yaml(text, full, core=True)[0]
        raw = js_json(value)
    except ConfigError:
        raw = text  # not YAML: its text, as promptfoo falls back
    try:
        prompt = _string_prompt(raw, where)
    except ConfigError:  # a list, but not of {role, content}: promptfoo sends the JSON as written
        config.notes.append(
            f"{where}: {relative} is not a list of {{role, content}} messages: imported as a text prompt "
            "(its value as JSON, as promptfoo sends it)"
        )
        prompt = ImportedPrompt(raw, text=raw)
    prompt.label = f"{full}: {raw[:80]}"
    return [prompt]


def _text_parts(text: str) -> list[str]:
    """Split a text prompt file as promptfoo does: on lines of ``---``, each part trimmed, empty ones dropped."""
    parts: list[str] = []
    buffer: list[str] = []
    lines = text.splitlines()
    for line in [*lines, "---"]:
        if line.strip() == "---":
            if "\n".join(buffer).strip():
                parts.append("\n".join(buffer).strip())
            buffer = []
        else:
            buffer.append(line)
    return parts


def json_template(raw: str) -> str | None:
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
    written = js_json(mark(value), indent=2)
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


#: Marks a string of a JSON prompt that holds template syntax, while the value is written back.
_LEAF = "@@promptfoo-leaf@@"


def _json_chat(config: ConfigFile, value: Any, relative: str, where: str) -> list[dict[str, str]] | None:
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


def _csv_prompts(config: ConfigFile, relative: str, where: str, label: Any, ident: Any) -> list[ImportedPrompt]:
    """Read a CSV prompt file as promptfoo's ``processCsvPrompts`` does: a ``prompt`` column (and an
    optional ``label``), or, when the file has no comma, one prompt a line (a ``prompt`` header skipped)."""
    found = _csv_rows(config.read_text(relative, where), str(config.root / relative))
    if not found:
        raise ConfigError(f"{where}: {relative} holds no prompts (a 'prompt' column, or one prompt a line)")
    out: list[ImportedPrompt] = []
    several = len(found) > 1
    for index, (raw, own) in enumerate(found):  # promptfoo's buildCsvRowLabel and buildCsvPrompts
        prompt = _string_prompt(raw, where)
        base = f"{label}: {raw}" if label and several else str(label) if label else f"Prompt {index + 1} - {raw}"
        prompt.label = own or base
        prompt.named = own or (str(label) if label else None)
        if isinstance(ident, str):
            prompt.ident = f"{ident}:{index + 1}" if several else ident
        out.append(prompt)
    return out


def _csv_rows(text: str, path: str) -> list[tuple[str, str]]:
    """Return a CSV prompt file's (prompt, label) rows: its ``prompt`` and ``label`` columns, or one prompt a
    line when it has no comma (a ``prompt`` header skipped)."""
    if "," in text:
        rows = read_csv(text.encode("utf-8"), path)
        found = [(r.get("prompt", "").strip(), r.get("label", "").strip()) for _, r in rows]
        return [(raw, label) for raw, label in found if raw]
    lines = [line for line in text.splitlines() if line.strip()]
    return [(line, "") for line in lines[1 if lines and lines[0].strip().lower() == "prompt" else 0 :]]


def _jsonl_prompts(config: ConfigFile, relative: str, where: str, label: Any) -> list[ImportedPrompt]:
    """Read a JSONL prompt file as promptfoo's ``processJsonlFile`` does: a prompt a line, labelled
    ``LABEL: LINE`` (or ``PATH: LINE``) when there are several, else ``LABEL`` (or ``PATH``)."""
    lines = [line for line in config.read_text(relative, where).splitlines() if line]
    named = str(label) if label else str(config.root / relative)
    made = [_string_prompt(line, where) for line in lines]
    for prompt, line in zip(made, lines, strict=True):
        prompt.label = f"{named}: {line}" if len(lines) > 1 else named
        prompt.named = str(label) if label else None
    return made


def _string_prompt(item: str, where: str) -> ImportedPrompt:
    """Make a prompt of a string: chat messages when it is a JSON list of them, a template otherwise."""
    try:
        messages = _chat(decode(item), where)
    except JsonError:
        messages = None
    return ImportedPrompt(item, messages=messages, text=None if messages else item)


#: The files promptfoo runs as prompt functions; TypeScript (.ts, .cts, .mts) needs a loader Node.js 20 lacks.
_FUNCTION_FILES = (".js", ".cjs", ".mjs", ".py")
_TYPESCRIPT = (".ts", ".cts", ".mts")


def _function_prompt(config: ConfigFile, written: str, where: str) -> ImportedPrompt:
    """Make a prompt function of ``file://FILE[:NAME]``, labelled as promptfoo's ``processJsFile`` and
    ``processPythonFile`` label it; it runs when each case renders (``[template] prompt_function``)."""
    relative, name = file_and_function(written)  # promptfoo's parsePathOrGlob
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
    return ImportedPrompt(label, function=f"{normal}:{name}" if name else normal, source=(normal, text))


#: The files an imported suite is made of: a file the config names may not take their place.
_RESERVED = frozenset({"promptsuite.toml", "cases.jsonl", "prompts.yml", "promptfoo_asserts.py"})


def _prompt_items(config: ConfigFile) -> list[Any]:
    """Return the config's prompts as a list, as promptfoo's ``normalizeInput`` reads them: a string, a
    list, or a mapping of each prompt to its label (``{file://a.txt: Label A}``)."""
    raw = config.data.get("prompts")
    if isinstance(raw, dict) and raw:
        return [{"raw": str(prompt), "label": label} for prompt, label in raw.items()]
    return raw if isinstance(raw, list) else [raw] if raw is not None else ["{{prompt}}"]  # promptfoo's default


def config_prompts(config: ConfigFile) -> list[ImportedPrompt]:
    """Read the config's ``prompts`` (each source as promptfoo reads it), in order."""
    items = _prompt_items(config)
    if not items:
        raise ConfigError(f"{config.where('prompts')}: the config has no prompts")
    out: list[ImportedPrompt] = []
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
        refuse_remote_prompt(item, where)
        for one in _prompt_glob(config, _as_file(config, item, where), where):
            out.extend(_one_prompt(config, one, where, label, ident, settings))
    return out


#: The extensions that make promptfoo's ``maybeFilePath`` take a prompt string for a file's name.
_FILE_EXTENSIONS = (
    ".cjs",
    ".cts",
    ".j2",
    ".js",
    ".json",
    ".jsonl",
    ".md",
    ".mjs",
    ".mts",
    ".py",
    ".ts",
    ".txt",
    ".yml",
    ".yaml",
)


def _maybe_file(item: str) -> bool:
    """Tell whether promptfoo's ``maybeFilePath`` reads a prompt string (no ``file://``) as a file's name: one line
    with a ``/``, a ``*``, a known extension (before a ``:function`` too) or a dot three or four from its end."""
    if "\n" in item or any(scheme in item for scheme in ("portkey://", "langfuse://", "helicone://")):
        return False
    tokens = item.split(":")
    named = any(t.endswith(_FILE_EXTENSIONS) for t in tokens[-2:])
    return named or "." in (item[-3:-2], item[-4:-3]) or any(ch in item for ch in "*/\\")


def _as_file(config: ConfigFile, item: str, where: str) -> str:
    """Return a prompt string promptfoo reads as a file (a file inside the config's folder, or a glob that matches
    one) as ``file://`` names it; any other string as it is (promptfoo uses the text)."""
    if item.startswith("file://") or not _maybe_file(item):
        return item
    path = file_and_function(item)[0]
    normal = inside(path)
    if normal is None:
        return item
    if is_glob(normal):
        return f"file://{item}" if expand(config.root, normal, where) else item
    if (config.root / normal).is_file():
        return f"file://{item}"
    config.notes.append(f"{where}: the prompt {item!r} is imported as text (promptfoo reads it as a file's name)")
    return item


def _prompt_glob(config: ConfigFile, item: str, where: str) -> list[str]:
    """Expand a ``file://`` prompt whose path is a glob (``file://prompts/*.txt``) into one item per file
    inside the config's folder, in sorted order (promptfoo's follows the file system's); others as written."""
    if not item.startswith("file://"):
        return [item]
    path, function = file_and_function(item[len("file://") :])
    if not is_glob(path):
        return [item]
    normal = inside(path)
    if normal is None:
        raise ConfigError(f"{where}: {item} lies outside the config's folder")
    found = expand(config.root, normal, where)
    if not found:
        raise ConfigError(f"{where}: {item}: no prompt file matches")
    return [f"file://{match}{f':{function}' if function else ''}" for match in found]


def _one_prompt(
    config: ConfigFile, item: str, where: str, label: Any, ident: Any, settings: dict[str, Any] | None
) -> list[ImportedPrompt]:
    """Read one prompt item (a string, or one ``file://`` file), labelled as promptfoo labels it."""
    if item.startswith("file://") and item.endswith(".csv"):  # labelled and named row by row
        made = _csv_prompts(config, item[len("file://") :], where, label, ident)
        for prompt in made:
            prompt.config = settings or None  # promptfoo spreads the prompt's keys over each row's
        return made
    if item.startswith("file://") and item.endswith(".jsonl"):
        found, label = _jsonl_prompts(config, item[len("file://") :], where, label), None  # labelled line by line
    else:
        found = _prompts_of(config, item, where)
    for prompt in found:
        _name(prompt, item, label, ident, settings)
    return found


def _name(prompt: ImportedPrompt, item: str, label: Any, ident: Any, settings: dict[str, Any] | None) -> None:
    """Give a prompt read from ``item`` the id, config and label written for it, as promptfoo labels it."""
    prompt.ident = ident if isinstance(ident, str) else None
    prompt.config = settings or None
    prompt.named = str(label) if label else prompt.named
    if label and item.startswith("file://") and item.endswith(_TEXT_PROMPT):
        prompt.label = f"{label}: {prompt.label}"
    elif label:
        prompt.label = str(label)


def _prompts_of(config: ConfigFile, item: str, where: str) -> list[ImportedPrompt]:
    """Read a prompt item other than a CSV or JSONL file: a prompt function, a prompt file or a string."""
    if item.startswith("file://") and _is_code(item, _TYPESCRIPT):
        raise Refused(
            f"{where}: {item}: TypeScript prompt functions are not imported (promptfoo loads them with a "
            "TypeScript loader); write it as .js, .mjs or .py"
        )
    if item.startswith("file://") and _is_code(item, _FUNCTION_FILES):
        return [_function_prompt(config, item[len("file://") :], where)]
    if item.startswith("file://"):
        return _file_prompts(config, item[len("file://") :], where)
    return [_string_prompt(item, where)]


def _is_code(written: str, kinds: tuple[str, ...]) -> bool:
    """Tell whether ``FILE[:NAME]`` names a file of code of one of ``kinds`` (its extensions)."""
    return any(part.lower().endswith(kinds) for part in (written, file_and_function(written)[0]))
