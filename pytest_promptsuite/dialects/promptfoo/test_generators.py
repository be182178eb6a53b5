"""promptfoo's test generators (``tests: file://tests.py:fn``, ``file://tests.js``, with or without ``config``), run
at import as promptfoo runs them: the tests they return become the suite's cases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_promptsuite.dialects.promptfoo.config_file import ConfigFile
from pytest_promptsuite.dialects.promptfoo.nunjucks import file_and_function
from pytest_promptsuite.dialects.promptfoo.refusals import refuse
from pytest_promptsuite.errors import CheckError
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.imported_suite import inside


_JS = (".js", ".cjs", ".mjs")
_TYPESCRIPT = (".ts", ".cts", ".mts")


def is_generator(written: str) -> bool:
    """Tell whether a ``tests`` entry names code that makes tests (``.py``, ``.js``, ``.ts``, ``FILE:NAME``)."""
    path, function = file_and_function(written.removeprefix("file://"))
    return function is not None or path.endswith((*_JS, *_TYPESCRIPT, ".py"))


def generated_tests(config: ConfigFile, written: str, settings: Any, where: str) -> list[tuple[dict[str, Any], str]]:
    """Run the generator ``written`` (with ``settings``, its ``config``, when given) as promptfoo's
    ``readStandaloneTestsFile`` runs it; return each test it makes with where it comes from."""
    relative, function = file_and_function(written.removeprefix("file://"))
    normal = inside(relative)
    if normal is None:
        raise ConfigError(f"{where}: {written} lies outside the config's folder")
    if normal.endswith(_TYPESCRIPT):
        raise refuse(where, f"a TypeScript test generator ({written})", "write it as .js or .py")
    if not normal.endswith((*_JS, ".py")):
        raise ConfigError(f"{where}: {written}: a test generator is a .py or .js file (FILE:NAME)")
    path = config.file(normal, where)
    name = f"{where}: test generator {written}"
    tests = _run(path, function, settings, name)
    if not isinstance(tests, list) or not all(isinstance(t, dict) for t in tests):
        raise ConfigError(f"{name}: returned {type(tests).__name__}; a test generator returns a list of tests")
    return [(test, f"{where} ({normal} test {i + 1})") for i, test in enumerate(tests)]


def _run(path: Path, function: str | None, settings: Any, name: str) -> Any:
    """Call the generator: Python in this process, JavaScript in the run's Node.js process."""
    from pytest_promptsuite.dialects.promptfoo.prompt_code import node_call
    from pytest_promptsuite.dialects.promptfoo.prompt_code import python_function

    args = [] if settings is None else [settings]
    try:
        if path.suffix == ".py":
            return _python(python_function(path, function or "generate_tests", name), args, name)
        return node_call({"prompt": True, "file": str(path), "fn": function, "args": args}, name)
    except CheckError as exc:
        raise ConfigError(str(exc)) from None


def _python(function: Any, args: list[Any], name: str) -> Any:
    try:
        return function(*args)
    except Exception as exc:  # noqa: BLE001 (the config's own code: its error, named)
        raise ConfigError(f"{name}: raised {type(exc).__name__}: {exc}") from None
