"""A test's ``file://`` vars and asserts' ``file://`` values as promptfoo loads them, at import: globs one test per
file, text trimmed, YAML as its JSON, a var script's ``get_var`` output; an assert's JSON, YAML or text file."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from pytest_promptsuite.dialects.promptfoo.config_file import ConfigFile
from pytest_promptsuite.dialects.promptfoo.config_glob import expand
from pytest_promptsuite.dialects.promptfoo.config_glob import is_glob
from pytest_promptsuite.dialects.promptfoo.nunjucks import js_json
from pytest_promptsuite.dialects.promptfoo.refusals import refuse
from pytest_promptsuite.dialects.promptfoo.refusals import refuse_media_var
from pytest_promptsuite.errors import CheckError
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.imported_suite import inside
from pytest_promptsuite.formats.yamlio import load_yaml


_JS = (".js", ".cjs", ".mjs")
_SCRIPTS = (*_JS, ".py")


@dataclass
class VarFiles:
    """The config's ``file://`` vars: each text read once; a script run once per test (it reads the test's
    vars and ``prompt``, the first prompt as written, as promptfoo's ``renderPrompt`` gives it)."""

    config: ConfigFile
    prompt: str = ""
    texts: dict[str, str] = field(default_factory=dict)
    #: The scripts run, for the import report.
    scripts: list[str] = field(default_factory=list)

    def expand(self, variables: dict[str, Any], where: str) -> dict[str, Any]:
        """Return ``variables`` with each ``file://`` glob made the list of its files (promptfoo's
        ``generateVarCombinations`` runs the test once per file)."""
        return {key: self._matches(value, where) for key, value in variables.items()}

    def _matches(self, value: Any, where: str) -> Any:
        if not isinstance(value, str) or not value.startswith("file://") or not is_glob(value[len("file://") :]):
            return value
        normal = inside(value[len("file://") :])
        if normal is None:
            raise ConfigError(f"{where}: {value} lies outside the config's folder")
        found = expand(self.config.root, normal, where)
        if not found:
            raise ConfigError(f"{where}: {value}: no file matches (promptfoo runs a test per matching file)")
        return [f"file://{path}" for path in found]

    def load(self, relative: str, key: str, variables: dict[str, Any], where: str) -> Any:
        """Return the var ``key`` read from ``file://relative`` as promptfoo's ``renderPrompt`` loads it."""
        refuse_media_var(relative, key, where)
        if relative.endswith(_SCRIPTS):
            return self._run(relative, key, variables, where)
        if relative not in self.texts:
            self.texts[relative] = self._read(relative, where)
        return self.texts[relative]

    def _read(self, relative: str, where: str) -> str:
        text = self.config.read_text(relative, where)
        if relative.endswith((".yaml", ".yml")):  # promptfoo: JSON.stringify(yaml.load(text))
            return js_json(load_yaml(text, str(self.config.root / relative), core=True)[0])
        return text.strip()

    def _run(self, relative: str, key: str, variables: dict[str, Any], where: str) -> Any:
        """Run a var script's ``get_var(var_name, prompt, other_vars)`` (a ``.js`` file's export); its ``output``."""
        path = self.config.file(relative, where)
        if relative not in self.scripts:
            self.scripts.append(relative)
        name = f"{where}: var {key} (file://{relative})"
        try:
            answer = _script_answer(path, key, self.prompt, variables, name)
        except CheckError as exc:
            raise ConfigError(str(exc)) from None
        return _output(answer, name, python=relative.endswith(".py"))


def _script_answer(path: Path, key: str, prompt: str, variables: dict[str, Any], name: str) -> Any:
    from pytest_promptsuite.dialects.promptfoo.prompt_code import node_call
    from pytest_promptsuite.dialects.promptfoo.prompt_code import python_function

    if path.suffix == ".py":
        try:
            return python_function(path, "get_var", name)(key, prompt, dict(variables))
        except CheckError:
            raise
        except Exception as exc:  # noqa: BLE001 (the config's own code: its error, named)
            raise CheckError(f"{name}: get_var raised {type(exc).__name__}: {exc}") from None
    payload = {"prompt": True, "file": str(path), "fn": None, "args": [key, prompt, variables]}
    return node_call(payload, name)


def _output(answer: Any, name: str, *, python: bool) -> Any:
    """Read a var script's ``{output}`` or ``{error}`` as promptfoo does: an error or no output fails the import."""
    if not isinstance(answer, dict):
        raise ConfigError(f"{name}: returned {type(answer).__name__}; a var script returns {{output}} or {{error}}")
    if answer.get("error"):
        raise ConfigError(f"{name}: returned the error {answer['error']}")
    output = answer.get("output")
    if not output:
        raise ConfigError(f"{name}: returned no output")
    if python and not isinstance(output, str):
        raise ConfigError(f"{name}: output is {type(output).__name__}, not a string")
    return output.strip() if python else output


def assert_value(config: ConfigFile, value: Any, where: str) -> Any:
    """Return an assert's value with each ``file://`` file read as promptfoo's ``processFileReference`` reads it:
    ``.json``, ``.yaml`` and ``.yml`` parsed, ``.txt`` trimmed; any other file is refused, as promptfoo refuses it."""
    if isinstance(value, list):
        return [assert_value(config, item, where) for item in value]
    if not isinstance(value, str) or not value.startswith("file://"):
        return value
    relative = value[len("file://") :]
    if relative.endswith((".json", ".yaml", ".yml")):
        return load_yaml(config.read_text(relative, where), str(config.root / relative), core=True)[0]
    if relative.endswith(".txt"):
        return config.read_text(relative, where).strip()
    if relative.split(":")[0].endswith((*_SCRIPTS, ".ts")):
        raise refuse(
            where, f"an assert value made by a script ({value})", "write the expected value into a .json or .txt file"
        )
    raise ConfigError(f"{where}: {value}: promptfoo reads an assert's .json, .yaml, .yml or .txt file, not this one")
