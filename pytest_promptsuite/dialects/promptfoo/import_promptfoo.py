"""``promptsuite import promptfoo``: a ``promptfooconfig.yaml`` into a suite that runs as it is.
Every prompt x provider pair is a variant; files are read inside the config's folder only."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml

from pytest_promptsuite.config.settings import DEFAULT_CONCURRENCY
from pytest_promptsuite.dialects.promptfoo.config_file import ConfigFile
from pytest_promptsuite.dialects.promptfoo.config_glob import expand
from pytest_promptsuite.dialects.promptfoo.config_glob import is_glob
from pytest_promptsuite.dialects.promptfoo.csv_tests import csv_test
from pytest_promptsuite.dialects.promptfoo.prompt_forms import ImportedPrompt
from pytest_promptsuite.dialects.promptfoo.prompt_forms import config_prompts
from pytest_promptsuite.dialects.promptfoo.prompt_forms import json_template
from pytest_promptsuite.dialects.promptfoo.promptfoo_tests import AssertModule
from pytest_promptsuite.dialects.promptfoo.promptfoo_tests import TestSource
from pytest_promptsuite.dialects.promptfoo.promptfoo_tests import cases_of
from pytest_promptsuite.dialects.promptfoo.providers import Provider
from pytest_promptsuite.dialects.promptfoo.providers import config_providers
from pytest_promptsuite.dialects.promptfoo.providers import with_prompt_config
from pytest_promptsuite.dialects.promptfoo.refusals import refuse
from pytest_promptsuite.dialects.promptfoo.refusals import refuse_remote_tests
from pytest_promptsuite.dialects.promptfoo.test_generators import generated_tests
from pytest_promptsuite.dialects.promptfoo.test_generators import is_generator
from pytest_promptsuite.dialects.promptfoo.var_files import VarFiles
from pytest_promptsuite.dialects.promptfoo.var_files import assert_value
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.csvio import read_csv
from pytest_promptsuite.formats.imported_suite import ImportedSuite
from pytest_promptsuite.formats.imported_suite import ImportResult
from pytest_promptsuite.formats.imported_suite import inside
from pytest_promptsuite.formats.imported_suite import write_import
from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.formats.yamlio import load_yaml


_KEYS = frozenset(
    "description prompts providers targets tests defaultTest outputPath sharing env evaluateOptions commandLineOptions "
    "writeLatestResults nunjucksFilters metadata scenarios derivedMetrics extensions redteam tags assertionTemplates "
    "outputs".split()
)
#: A template that reads promptfoo's ``_conversation`` var (its multi-turn threads).
_CONVERSATION = re.compile(r"\b_conversation\b")
#: The config's keys that are carried over; every other key present is listed in the import report.
_CARRIED = frozenset(
    "description prompts providers targets tests scenarios defaultTest assertionTemplates nunjucksFilters "
    "evaluateOptions".split()
)
#: promptfoo's calls in flight when ``evaluateOptions.maxConcurrency`` is not set.
PROMPTFOO_CONCURRENCY = 4


def _tests(config: ConfigFile) -> list[TestSource]:
    raw = config.data.get("tests")
    items = raw if isinstance(raw, list) else [raw] if raw is not None else []
    tests: list[TestSource] = []
    for i, item in enumerate(items):
        where = config.where("tests", i) if isinstance(raw, list) else config.where("tests")
        tests.extend(_tests_of(config, item, where))
    tests.extend(_scenario_tests(config))
    if not tests and not raw and config.data.get("scenarios") is None:  # promptfoo runs each prompt once, no vars
        return [TestSource({}, config.where("prompts"))]
    if not tests:
        raise ConfigError(f"{config.where('tests')}: the config has no tests")
    return tests


def _tests_of(config: ConfigFile, item: Any, where: str) -> list[TestSource]:
    """Return the tests of one ``tests`` entry: a test, a test file's name or glob, or a test generator (each
    also as ``{path, config}``)."""
    if isinstance(item, dict) and isinstance(item.get("path"), str) and "vars" not in item:
        return _test_files(config, item["path"], where, item.get("config"))
    if isinstance(item, str):
        return _test_files(config, item, where, None)
    if isinstance(item, dict):
        return [TestSource(item, where)]
    raise ConfigError(f"{where}: a test is a mapping (vars, assert) or file://tests.csv|yaml|json|jsonl|py|js")


def _test_files(config: ConfigFile, written: str, where: str, settings: Any) -> list[TestSource]:
    """Return the tests a generator makes (given ``settings``), or those of the test files a name or glob matches."""
    refuse_remote_tests(written, where)
    if is_generator(written):
        return [TestSource(test, at) for test, at in generated_tests(config, written, settings, where)]
    return [t for path in _glob(config, written, where) for t in _test_file(config, path, where)]


def _scenario_tests(config: ConfigFile) -> list[TestSource]:
    """Make the tests of ``scenarios`` as promptfoo's ``buildTestsFromSuite`` does: each scenario's ``config``
    entry with each of its ``tests``, the entry's vars, options and metadata under the test's, its asserts
    before the test's (``defaultTest`` is merged in later, as for every test)."""
    raw = config.data.get("scenarios")
    if raw is None:
        return []
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        raise ConfigError(f"{config.where('scenarios')}: scenarios is a list of {{config, tests}} or file:// files")
    found = [(i, one, isinstance(item, str)) for i, item in enumerate(raw) for one in _scenario_files(config, i, item)]
    return [made for i, scenario, filed in found for made in _scenario(config, i, scenario, filed)]


def _scenario_files(config: ConfigFile, i: int, item: Any) -> list[Any]:
    """Return the scenarios of one ``scenarios`` entry: itself, or those its ``file://`` file or glob holds
    (a scenario or a list of them in each file, as promptfoo's ``maybeLoadFromExternalFile`` reads them)."""
    if not isinstance(item, str) or not item.startswith("file://"):
        return [item]
    where = config.where("scenarios", i)
    found: list[Any] = []
    for relative in _glob(config, item, where):
        value = load_yaml(config.read_text(relative, where), str(config.root / relative), core=True)[0]
        found.extend(value if isinstance(value, list) else [value])
    return [dereference(scenario, scenario, where) for scenario in found]


def _scenario(config: ConfigFile, i: int, scenario: Any, filed: bool) -> list[TestSource]:
    """Return the tests of scenario entry ``i`` (or of one scenario its file holds, ``filed``): each of its
    ``config`` entries with each of its ``tests``."""
    where = config.where("scenarios", i)
    if not isinstance(scenario, dict):
        raise ConfigError(f"{where}: a scenario is {{config: [...], tests: [...]}}")
    entries, tests = scenario.get("config"), _scenario_tests_of(config, scenario.get("tests"), where)
    if tests is None:  # promptfoo's schema refuses it (with a warning) and runs nothing of it
        config.notes.append(f"{where}: a scenario without tests makes no test (promptfoo's schema refuses it)")
        return []
    if not isinstance(entries, list) or not isinstance(tests, list):
        raise ConfigError(f"{where}: a scenario is {{config: [...], tests: [...]}}")
    if not all(isinstance(item, dict) for item in (*entries, *tests)):
        raise ConfigError(f"{where}: a scenario's config entries and tests are mappings")
    made: list[TestSource] = []
    for j, data in enumerate(entries):
        for k, test in enumerate(tests):
            at = ("tests", k) if test else ("config", j)  # the test's line, or its config entry's
            made.append(TestSource(_under(data, test), where if filed else config.where("scenarios", i, *at)))
    return made


def _scenario_tests_of(config: ConfigFile, tests: Any, where: str) -> Any:
    """Return a scenario's tests: as written, or read from the ``file://`` test files its ``tests`` names."""
    if isinstance(tests, str):
        return [t.test for t in _test_files(config, tests, where, None)]
    return tests


def _under(data: dict[str, Any], test: dict[str, Any]) -> dict[str, Any]:
    """Merge a scenario's config entry under one of its tests: vars, options and metadata under the test's,
    its asserts before the test's."""
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
    return merged


def _glob(config: ConfigFile, written: str, where: str) -> list[str]:
    """Expand a test file's name or glob (``file://`` optional) inside the config's folder, in order."""
    relative = written.removeprefix("file://")
    normal = inside(relative)
    if normal is None:
        raise ConfigError(f"{where}: file://{relative} lies outside the config's folder")
    if not is_glob(normal):
        return [normal]
    found = expand(config.root, normal, where)
    if not found:
        raise ConfigError(f"{where}: {written}: no test file matches")
    return found


def _test_file(config: ConfigFile, relative: str, where: str) -> list[TestSource]:
    """Read one test file as promptfoo's ``loadTestsFromGlob`` does, by its extension."""
    path = config.file(relative, where)
    if relative.endswith(".csv"):
        rows = read_csv(path.read_bytes(), str(path))
        return [TestSource(csv_test(row, f"{path}:{line}", i), f"{path}:{line}") for i, (line, row) in enumerate(rows)]
    text = config.read_text(relative, where)
    if relative.endswith(".jsonl"):
        items, lines = _jsonl_tests(text, path)
    elif relative.endswith((".yaml", ".yml", ".json")):
        items, lines = _yaml_tests(text, path)
    else:
        raise refuse(
            where,
            f"the test file {relative}",
            "promptfoo's tests are read from .csv, .yaml, .json, .jsonl, .py and .js files",
        )
    items = dereference(items, items, f"{path}")
    if not all(isinstance(t, dict) for t in items):
        raise ConfigError(f"{path}:1: a test file holds a list of tests (mappings)")
    return [TestSource(t, f"{path}:{lines[i] if i < len(lines) else 1}") for i, t in enumerate(items)]


def _jsonl_tests(text: str, path: Path) -> tuple[list[Any], list[int]]:
    """Read a JSONL test file: its tests and their lines (blank lines skipped)."""
    items, lines = [], []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            try:
                items.append(decode(line))
            except JsonError as exc:
                raise ConfigError(f"{path}:{number}: invalid JSON: {exc.describe()}") from None
            lines.append(number)
    return items, lines


def _yaml_tests(text: str, path: Path) -> tuple[list[Any], list[int]]:
    """Read a YAML or JSON test file: its tests (one, or a list) and their lines."""
    value, node = load_yaml(text, str(path), core=True)
    items = value if isinstance(value, list) else [value]
    lines = [int(n.start_mark.line) + 1 for n in node.value] if isinstance(node, yaml.SequenceNode) else [1]
    return items, lines


def dereference(value: Any, root: Any, where: str, depth: int = 0) -> Any:
    """Replace every ``{$ref: '#/a/b'}`` in ``value`` by what it points to in ``root`` (as promptfoo's
    ``$RefParser.dereference`` does for the config and its test files); only references inside the file."""
    if depth > 32:
        raise ConfigError(f"{where}: $ref references nest deeper than 32 (a reference that contains itself?)")
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str):
            return dereference(copy.deepcopy(_pointed(ref, root, where)), root, where, depth + 1)
        return {k: dereference(v, root, where, depth) for k, v in value.items()}
    if isinstance(value, list):
        return [dereference(v, root, where, depth) for v in value]
    return value


def _refuse_outer_refs(config: ConfigFile, node: Any) -> None:
    """Refuse a ``$ref`` to another file (promptfoo's ``$RefParser`` reads it), at its line."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if key.value == "$ref" and isinstance(value, yaml.ScalarNode) and not value.value.startswith("#"):
                where = f"{config.path}:{key.start_mark.line + 1}"
                raise refuse(where, f"$ref {value.value!r} (a reference to another file)", "copy what it names here")
            _refuse_outer_refs(config, value)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _refuse_outer_refs(config, item)


def _pointed(ref: str, root: Any, where: str) -> Any:
    """Return what a ``$ref`` (a JSON pointer inside the file, ``#/a/b``) points to in ``root``."""
    if not ref.startswith("#/") and ref != "#":
        raise refuse(
            where, f"$ref {ref!r} (a reference to another file)", "copy what it names into this file and refer to #/..."
        )
    target = root
    for part in [p.replace("~1", "/").replace("~0", "~") for p in ref[2:].split("/") if p]:
        if isinstance(target, dict) and part in target:
            target = target[part]
        elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
            target = target[int(part)]
        else:
            raise ConfigError(f"{where}: $ref {ref!r} points to nothing")
    return target


def _prompt_table(
    prompt: ImportedPrompt, index: int, files: dict[str, str], tasks: list[dict[str, Any]]
) -> dict[str, Any]:
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


def _with_provider(
    config: ConfigFile, table: dict[str, Any], prompt: ImportedPrompt, who: dict[str, str]
) -> dict[str, Any]:
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


def _nunjucks_filters(config: ConfigFile, tables: list[dict[str, Any]], files: dict[str, str]) -> None:
    """Carry ``nunjucksFilters`` (name -> JavaScript file) onto every promptfoo template, the files
    copied beside the prompts; they run in Node.js as promptfoo runs them."""
    raw = config.data.get("nunjucksFilters")
    if not raw:
        return
    where = config.where("nunjucksFilters")
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise ConfigError(f"{where}: nunjucksFilters maps a filter name to a JavaScript file")
    filters = {str(name): _filter_file(config, name, written, where, files) for name, written in raw.items()}
    for table in tables:
        if table.get("semantics") == "promptfoo":
            table["nunjucks_filters"] = filters


def _filter_file(config: ConfigFile, name: Any, written: str, where: str, files: dict[str, str]) -> str:
    """Copy a Nunjucks filter's JavaScript file beside the prompts; return its name there."""
    relative = inside(written.removeprefix("file://"))
    if relative is None:
        raise ConfigError(f"{where}: nunjucksFilters {name}: {written} lies outside the config's folder")
    if relative in files or relative == "promptsuite.toml":
        raise ConfigError(f"{where}: nunjucksFilters {name}: a filter's file may not be named {relative}")
    files[relative] = config.read_text(relative, where)
    return relative


def promptfoo_suite(path: Path, *, slice_key: str | None = None) -> ImportedSuite:
    """Build the suite of a promptfoo config in memory (nothing written)."""
    config = ConfigFile(path)
    _check_keys(config)
    _refuse_outer_refs(config, config.node)
    config.data = dereference(config.data, config.data, str(path))
    prompts, providers = config_prompts(config), config_providers(config)
    default = _default_test(config)
    code = AssertModule(read_value=lambda value, where: assert_value(config, value, where))
    unsupported: list[str] = []
    var_files = VarFiles(config, _first_raw(prompts))
    cases = cases_of(
        _tests(config),
        default,
        read_var=var_files.load,
        expand_vars=var_files.expand,
        slice_key=slice_key,
        code=code,
        unsupported=unsupported,
        default_where=config.where("defaultTest"),
        unset=_unset_fields(prompts),
    )
    _script_notes(config, var_files, prompts)
    files: dict[str, str] = {"cases.jsonl": cases.text}
    tasks: list[dict[str, Any]] = []
    for prompt in prompts:
        _affix(config, prompt, cases.affixed)
    _conversation_notes(config, prompts)
    tables = [_prompt_table(p, i + 1, files, tasks) for i, p in enumerate(prompts)]
    _nunjucks_filters(config, tables, files)
    suite_config = _suite_config(config, prompts, providers, tables)
    _with_concurrency(suite_config, _concurrency(config))
    if cases.embedding is not None:  # the tests' options.provider: the similar checks' embeddings
        suite_config["models.embedding"] = cases.embedding
    if tasks:
        files["prompts.yml"] = encode({"prompts": tasks}, indent=2) + "\n"  # JSON is YAML
    if code.functions:
        _add_code_files(config, code, files)
    _judge_note(config, cases.text)
    notes = list(dict.fromkeys([*config.notes, *(f"not carried over: {u}" for u in unsupported)]))
    header = f"Imported by `promptsuite import promptfoo` from {path.name}."
    return ImportedSuite(name=path.stem, config=suite_config, files=files, notes=notes, header=header)


def _first_raw(prompts: list[ImportedPrompt]) -> str:
    """Return the first prompt as written (what promptfoo gives a var script as ``prompt``)."""
    first = prompts[0]
    return first.text if first.text is not None else encode(first.messages or first.function or "")


def _script_notes(config: ConfigFile, var_files: VarFiles, prompts: list[ImportedPrompt]) -> None:
    """Say that the var scripts ran at import (promptfoo runs them as each prompt renders)."""
    for relative in var_files.scripts:
        several = " with the first prompt (promptfoo gives each prompt's)" if len(prompts) > 1 else ""
        config.notes.append(f"var file://{relative}: get_var ran at import{several}; import again after changing it")


#: A Nunjucks tag reading a field every row of ours has (``input``, ``question``), which promptfoo renders
#: empty when no var sets it.
_ROW_FIELD = re.compile(r"{[{%][^}]*?\b(input|question)\b")


def _unset_fields(prompts: list[ImportedPrompt]) -> frozenset[str]:
    """Return the row fields of ours the text and chat prompts read: each case without such a var gets it
    empty, as promptfoo renders it (not the case's description)."""
    texts = [p.text or "" for p in prompts] + [m["content"] for p in prompts for m in p.messages or ()]
    return frozenset(match.group(1) for text in texts for match in _ROW_FIELD.finditer(text))


#: An ``llm-rubric`` check (or its ``not-`` form) in a case line the import wrote.
_RUBRIC = re.compile(r'"type": "(?:not-)?llm-rubric"')


def _judge_note(config: ConfigFile, cases: str) -> None:
    """Say that the suite's ``llm-rubric`` checks need a judge: promptfoo grades with its own default grader (or
    ``options.provider``), which the import does not choose, and without one collection stops."""
    count = sum(1 for line in cases.splitlines() if _RUBRIC.search(line))
    if count:
        config.notes.append(
            f"llm-rubric in {count} case{'s' if count != 1 else ''} needs a judge: add [models.judge] to "
            "promptsuite.toml or pass --prompt-judge SPEC (promptfoo grades with its default grader or "
            "options.provider, which the import does not choose); until then collection stops with "
            "'no judge model'"
        )


def _concurrency(config: ConfigFile) -> int | None:
    """Return ``evaluateOptions.maxConcurrency`` (promptfoo's calls in flight), None when it is not set; the
    report says which bound the suite runs with, and lists the other ``evaluateOptions`` as not carried over."""
    options = config.data.get("evaluateOptions") or {}
    where = config.where("evaluateOptions")
    if not isinstance(options, dict):
        raise ConfigError(f"{where}: evaluateOptions is a mapping (maxConcurrency, repeat, ...)")
    left = sorted(set(map(str, options)) - {"maxConcurrency"})
    if left:
        config.notes.append(f"{where}: evaluateOptions not carried over: {', '.join(left)}")
    value = options.get("maxConcurrency")
    if value is None:
        config.notes.append(
            f"concurrency: ours, {DEFAULT_CONCURRENCY} calls in flight (auto for an https:// OpenAI endpoint); the "
            f"config sets no evaluateOptions.maxConcurrency, so promptfoo runs {PROMPTFOO_CONCURRENCY}: set [model] "
            f"concurrency = {PROMPTFOO_CONCURRENCY} to match it"
        )
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        where = config.where("evaluateOptions", "maxConcurrency")
        raise ConfigError(f"{where}: maxConcurrency is a whole number of calls, at least 1, not {value!r}")
    config.notes.append(f"concurrency = {value}, from evaluateOptions.maxConcurrency")
    return value


def _with_concurrency(suite_config: dict[str, dict[str, Any]], concurrency: int | None) -> None:
    """Give the suite's model table, and each variant's own, promptfoo's bound on calls in flight (if set)."""
    for key, table in suite_config.items():
        model = table if key == "model" else table.get("model") if key.startswith("variants.") else None
        if isinstance(model, dict) and concurrency is not None:
            model.setdefault("concurrency", concurrency)


def _check_keys(config: ConfigFile) -> None:
    """Refuse a key promptfoo does not have; note each present one that is not carried over."""
    unknown = sorted(set(config.data) - _KEYS)
    if unknown:
        raise ConfigError(f"{config.where(unknown[0])}: unknown key {unknown[0]!r} in a promptfoo config")
    for key in sorted(_KEYS - _CARRIED):
        if config.data.get(key):
            config.notes.append(f"{config.where(key)}: {key} not carried over")


def _default_test(config: ConfigFile) -> dict[str, Any]:
    """Return ``defaultTest``, inline or read from its ``file://`` YAML file as promptfoo reads it."""
    default = config.data.get("defaultTest") or {}
    if isinstance(default, str) and default.startswith("file://"):  # promptfoo reads it from a YAML file
        relative = default[len("file://") :]
        default = load_yaml(
            config.read_text(relative, config.where("defaultTest")), str(config.root / relative), core=True
        )[0]
    if not isinstance(default, dict):
        raise ConfigError(f"{config.where('defaultTest')}: defaultTest is a mapping")
    return default


def _affix(config: ConfigFile, prompt: ImportedPrompt, affixed: bool) -> None:
    """Make a JSON prompt its template, and put the tests' prefix and suffix around a prompt's text (``affixed``)."""
    made = None if prompt.text is None else json_template(prompt.text)
    if made is not None and affixed:  # JSON only when the test adds no prefix or suffix
        around = "{{ promptfoo_prefix }}" + prompt.text + "{{ promptfoo_suffix }}"  # type: ignore[operator]
        prompt.text = f"{{% if promptfoo_prefix or promptfoo_suffix %}}{around}{{% else %}}{made}{{% endif %}}"
    elif made is not None:
        prompt.text = made
    elif affixed:  # promptfoo puts a test's prefix and suffix around the prompt's text
        if prompt.text is not None:
            prompt.text = "{{ promptfoo_prefix }}" + prompt.text + "{{ promptfoo_suffix }}"
        elif prompt.function is None:  # promptfoo puts a function's answer in place of the prefixed text
            config.notes.append(f"not carried over: the tests' prefix and suffix on the chat prompt {prompt.label}")


def _conversation_notes(config: ConfigFile, prompts: list[ImportedPrompt]) -> None:
    """Note each prompt that reads ``_conversation`` (promptfoo's multi-turn threads): it renders empty."""
    for prompt in prompts:  # promptfoo's multi-turn threads: each row sees the earlier rows' turns
        written = prompt.text or " ".join(m["content"] for m in prompt.messages or ())
        if _CONVERSATION.search(written):
            config.notes.append(
                f"not carried over: _conversation in the prompt {prompt.label} (promptfoo's earlier turns of the "
                "thread): it renders empty"
            )


_Pair = tuple[int, dict[str, Any], str, dict[str, Any]]


def _suite_config(
    config: ConfigFile, prompts: list[ImportedPrompt], providers: list[Provider], tables: list[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Return the suite's config: its template and model, or a variant per prompt x provider pair to run."""
    pairs = _pairs(config, prompts, providers, tables)
    suite_config: dict[str, dict[str, Any]] = {"suite": {"cases": ["cases.jsonl"]}, "model": pairs[0][3]}
    if len(tables) * len(providers) == 1:
        suite_config["template"] = pairs[0][1]
        suite_config["model"] = with_prompt_config(config, pairs[0][3], prompts[0])
        return suite_config
    suite_config["template"] = dict(pairs[0][1])
    names = variant_names([(prompts[i], i, label) for i, _, label, _ in pairs], several=len(providers) > 1)
    for (i, table, _, model), name in zip(pairs, names, strict=True):
        own = with_prompt_config(config, model, prompts[i])  # the provider's table, the prompt's config over it
        mine = len(providers) > 1 or own is not model
        suite_config[f"variants.{name}"] = {**table, **({"model": own} if mine else {})}
    return suite_config


def _pairs(
    config: ConfigFile, prompts: list[ImportedPrompt], providers: list[Provider], tables: list[dict[str, Any]]
) -> list[_Pair]:
    """Return each prompt x provider pair the providers' ``prompts:`` filters let run, by prompt:
    (prompt index, template table, provider label, model table)."""
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
    return pairs


def variant_names(pairs: list[tuple[ImportedPrompt, int, str]], *, several: bool) -> list[str]:
    """Name the variant of each (prompt, its index, provider label) pair, in order: :func:`pair_name`, a name
    taken twice made ``NAME-2``, ``NAME-3``..."""
    taken: set[str] = set()
    return [_variant_name(pair_name(prompt, i, label, several=several), taken) for prompt, i, label in pairs]


def pair_name(prompt: ImportedPrompt, index: int, provider: str, *, several: bool) -> str:
    """Name the variant of a prompt x provider pair: the prompt's label as the config wrote it (else ``p`` and
    its number), then the provider's label when the config has several providers; bare TOML keys."""
    own = _slug(prompt.named, f"p{index + 1}") if prompt.named else f"p{index + 1}"
    return f"{own}-{_slug(provider)}" if several else own


def _variant_name(name: str, taken: set[str]) -> str:
    """Return ``name``, or ``name-N`` when it is taken (two labels alike once made bare keys, 'a:b' and 'a/b',
    stay two variants); the name returned is taken."""
    first, n = name, 1
    while name in taken:
        n += 1
        name = f"{first}-{n}"
    taken.add(name)
    return name


def _add_code_files(config: ConfigFile, code: AssertModule, files: dict[str, str]) -> None:
    """Add ``promptfoo_asserts.py`` and the files its asserts name, copied beside it."""
    path = config.path
    files["promptfoo_asserts.py"] = code.text()
    for relative in code.files:  # copied beside the module; never in place of a file we write
        if relative in files or relative == "promptsuite.toml":
            raise ConfigError(f"{path}: file://{relative}: a code assert's file may not be named {relative}")
        files[relative] = config.read_text(relative, str(path))


def _slug(label: str, empty: str = "provider") -> str:
    """Make a label a variant name: a bare TOML key (a dot would nest the table); ``empty`` when nothing is left."""
    bare = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_") else "-" for ch in label)
    return bare.strip("-") or empty


def import_promptfoo(path: Path, *, out: Path, slice_key: str | None = None) -> ImportResult:
    """Import the promptfoo config at ``path`` into ``out``, all or nothing."""
    suite = promptfoo_suite(path, slice_key=slice_key)
    write_import(out, [suite], flat=True)
    return ImportResult(out, [suite])
