"""promptfoo's code that makes a prompt, as promptfoo runs it: transforms and ``transformVars`` (JavaScript in one
Node.js process for the run, Python in-process) and prompt functions; the imported asserts run through it too."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import inspect
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.dialects.promptfoo.node import NodeProcess
from pytest_promptsuite.dialects.promptfoo.nunjucks import TRANSFORM_VARS
from pytest_promptsuite.dialects.promptfoo.nunjucks import file_and_function
from pytest_promptsuite.dialects.promptfoo.nunjucks import js_json
from pytest_promptsuite.dialects.promptfoo.nunjucks import resolve_vars
from pytest_promptsuite.errors import CheckError
from pytest_promptsuite.errors import TemplateError


#: The Node.js side, one process for the run: each request is {output, context, code | file + fn, param,
#: transform} (or {prompt, file, fn, context | args}: a prompt function, a var script, a test generator); each
#: answer {value} (a transform's value is {value, text}: text is promptfoo's coerceString, JSON.stringify of a
#: non-string) or {error}. They travel as node.FRAMING says, so nothing the code writes or logs can garble or
#: forge an answer.
_NODE_HARNESS = r"""
let queue = Promise.resolve();
requests((id, data) => { queue = queue.then(() => run(id, data)); });
async function run(id, data) {
  try {
    let result;
    if (data.prompt) {  // a prompt function, loaded as promptfoo's importModule loads it (ESM import first)
      const imported = await import(require('url').pathToFileURL(data.file).href);
      const mod = (imported.default && imported.default.default) || imported.default || imported;
      const fn = data.fn ? mod[data.fn] : mod;
      if (typeof fn !== 'function') throw new Error(`exports no function ${data.fn || '(module.exports or default)'}`);
      result = data.args ? await fn(...data.args) : await fn(data.context);
    } else if (data.file) {
      const mod = require(data.file);
      const own = data.fn && typeof mod[data.fn] === 'function' ? mod[data.fn] : undefined;
      const fn = data.fn && !data.transform ? mod[data.fn] : own || (typeof mod === 'function' ? mod : mod.default);
      if (typeof fn !== 'function') throw new Error(`${data.file} exports no function ${data.fn || ''}`);
      result = await fn(data.output, data.context);
    } else {
      const body = data.code.includes('\n') ? data.code : `return ${data.code}`;
      const shim = { ...process, mainModule: { require } };
      result = await new Function(data.param || 'output', 'context', 'process', body)(data.output, data.context, shim);
    }
    const value = result === undefined ? null : result;
    if (data.transform) {
      const text = result == null ? null : typeof result === 'string' ? result : JSON.stringify(result);
      answer(id, { value: { value, text } });
    } else {
      answer(id, { value });
    }
  } catch (e) {
    answer(id, { error: String((e && e.stack) || e) });
  }
}
"""
TIMEOUT_S = 30


_NODE = NodeProcess(_NODE_HARNESS)


def _need_node(name: str, error: type[Exception] = CheckError) -> None:
    if shutil.which("node") is None:
        raise error(f"{name}: needs Node.js, and 'node' is not on PATH (install Node.js to run it)")


def node_call(payload: dict[str, Any], name: str, error: type[Exception] = CheckError) -> Any:
    """Run ``payload`` in the run's Node.js process (started at the first call, a round trip after that);
    return its value. ``error`` (a check's failure, or a prompt's) names ``name`` when it cannot."""
    _need_node(name, error)
    answer = _NODE.request(payload, timeout_s=TIMEOUT_S)
    if answer is None:
        raise error(f"{name}: Node.js gave no answer within {TIMEOUT_S} s or ended: {_NODE.why()}")
    if "error" in answer:
        lines = str(answer["error"]).strip().splitlines()
        raise error(f"{name}: the JavaScript raised: {lines[0] if lines else 'an error'}")
    return answer["value"]


#: The vars the import adds to a case for promptfoo's test options; never the test's own.
_OPTION_VARS = frozenset({TRANSFORM_VARS, "promptfoo_prefix", "promptfoo_suffix"})


def own_vars(case: PromptCase, base: Path | None) -> dict[str, Any]:
    """Return a case's vars as promptfoo's test has them: made by its ``transformVars`` when it has one,
    without the vars the import adds for the test's options."""
    if TRANSFORM_VARS in case.vars:
        return transform_vars(case.vars, base)
    return {k: v for k, v in case.vars.items() if k not in _OPTION_VARS}


def test_vars(case: PromptCase, base: Path | None) -> dict[str, Any]:
    """Return a case's vars as promptfoo's asserts see them: :func:`own_vars`, composed (``'hi {{ name }}'``
    filled), as promptfoo's render leaves them."""
    return resolve_vars(own_vars(case, base))


def transform_vars(row: Mapping[str, Any], base: Path | None) -> dict[str, Any]:
    """Run the test's ``transformVars`` (``row[TRANSFORM_VARS]``) on its vars, as promptfoo runs it before
    the prompt renders: the vars merged with the object it returns. The prompt and the asserts of a case
    get the same answer (run once). TemplateError naming the transform and where it is written."""
    spec = row[TRANSFORM_VARS]
    if not isinstance(spec, Mapping) or not isinstance(spec.get("code"), str):
        raise TemplateError(f"the case var {TRANSFORM_VARS} is {{code, vars, uuid, where}} (written by the import)")
    variables = _test_vars(row, spec)
    step = Transform(spec["code"], str(spec.get("where") or "transformVars"), base)
    try:
        value, _ = step.apply(variables, {"prompt": {}, "uuid": spec.get("uuid")}, param="vars")
    except CheckError as exc:
        raise TemplateError(f"transformVars: {exc}") from None
    if not isinstance(value, dict):
        raise TemplateError(
            f"transformVars: transform {step.label()} ({step.where}) returned {type(value).__name__}, "
            "not an object of vars"
        )
    return {**variables, **value}


def _test_vars(row: Mapping[str, Any], spec: Mapping[str, Any]) -> dict[str, Any]:
    """Return the test's own vars (those ``transformVars`` is given), without the vars of test options."""
    names = spec["vars"] if isinstance(spec.get("vars"), list) else list(row)
    return {k: row[k] for k in names if k in row and k not in _OPTION_VARS}


@dataclass(frozen=True)
class Transform:
    """One promptfoo transform: inline JavaScript (an expression, or a body when it spans lines), or a
    ``file://`` function (``.js``: ``module.exports`` or the named export; ``.py``: ``get_transform`` or
    the named function), with where it is written for messages."""

    code: str
    where: str
    #: The folder a ``file://`` transform's file lies in (the generated module's).
    base: Path | None = None

    def label(self) -> str:
        """Name the transform in a message: its file, or its code cut to one line."""
        if self.code.startswith("file://"):
            return self.code
        line = " ".join(self.code.split())
        return line if len(line) <= 60 else f"{line[:59]}…"

    def apply(self, value: Any, context: dict[str, Any], *, param: str = "output") -> tuple[Any, str]:
        """Return what the transform makes of ``value``, and its text as promptfoo's checks read it (a
        non-string as ``JSON.stringify`` writes it); CheckError naming it when it fails or returns nothing."""
        name = f"transform {self.label()} ({self.where})"
        file = self.code.startswith("file://")
        if not file or _JS_FILES.search(file_and_function(self.code[len("file://") :])[0]):
            _need_node(name)  # before the memo: a JavaScript transform without Node fails, whatever ran before
        key = (self._identity(), param, json.dumps([value, context], sort_keys=True, default=str))
        if key in _DONE:
            return _DONE[key]
        payload = {"output": value, "context": context, "transform": True}
        if self.code.startswith("file://"):
            result, text = self._run_file(payload, name)
        else:
            found = node_call({**payload, "code": self.code, "param": param}, name)
            result, text = found["value"], found["text"]
        if result is None or text is None:
            raise CheckError(f"{name}: the transform returned no value")
        if len(_DONE) >= _DONE_SIZE:
            _DONE.pop(next(iter(_DONE)))
        _DONE[key] = (result, text)
        return result, text

    def _identity(self) -> str:
        """Name what decides the transform's result besides its input: its code, or its file (resolved, with
        its content's digest) and function; the file as written may name another file in another suite."""
        if not self.code.startswith("file://"):
            return self.code
        written, fn = file_and_function(self.code[len("file://") :])
        return f"{file_identity((self.base or Path.cwd()) / written)}:{fn or ''}"

    def _run_file(self, payload: dict[str, Any], name: str) -> tuple[Any, str | None]:
        """Run a ``file://`` transform (``.py`` here, JavaScript in Node.js): its value and text."""
        written, fn = file_and_function(self.code[len("file://") :])
        path = (self.base or Path.cwd()) / written
        if written.endswith(".py"):
            result = python_function(path, fn or "get_transform", name)(payload["output"], payload["context"])
            return result, None if result is None else _text(result)
        if _JS_FILES.search(written):
            found = node_call({**payload, "file": str(path), "fn": fn}, name)
            return found["value"], found["text"]
        raise CheckError(f"{name}: promptfoo runs .js and .py transforms, not {written}")


#: The transforms this run has run, by (code or file, param, input): every assert of a case reads the test's
#: transform once.
_DONE: dict[tuple[str, str, str], tuple[Any, str]] = {}
_DONE_SIZE = 256
_JS_FILES = re.compile(r"\.(?:js|cjs|mjs)$", re.IGNORECASE)
#: The Python files this run has loaded, by :func:`file_identity`.
_MODULES: dict[str, Any] = {}


def file_identity(path: Path) -> str:
    """Name a code file by what decides what it does: its resolved path and its content's digest."""
    resolved = path.resolve()
    try:
        digest = hashlib.sha256(resolved.read_bytes()).hexdigest()
    except OSError:  # then loading it fails, and says why
        digest = "unreadable"
    return f"{resolved}#{digest}"


def end_run() -> None:
    """Forget what this run's code gave and loaded, and end its Node.js process (its modules with it), so
    that the next run in this process reads every file afresh."""
    _DONE.clear()
    _MODULES.clear()
    _NODE.close()


def _answer_text(answer: Any, where: str) -> str:
    """Return the text of a prompt function's answer: a string, chat messages or ``{prompt, config}``."""
    if isinstance(answer, str):
        return answer
    if isinstance(answer, dict) and "prompt" in answer:  # {prompt, config}
        inner = answer["prompt"]
        return inner if isinstance(inner, str) else _text(inner)
    if isinstance(answer, (dict, list)):
        return _text(answer)
    raise TemplateError(
        f"{where}: returned {_js_type(answer)}; a prompt function returns a string, chat messages or {{prompt, config}}"
    )


def python_function(path: Path, fn: str, name: str) -> Any:
    """Load ``fn`` of the Python file at ``path`` (each file once)."""
    identity = file_identity(path)
    module = _MODULES.get(identity)
    if module is None:
        spec = importlib.util.spec_from_file_location(f"promptfoo_transform_{len(_MODULES)}", path)
        if spec is None or spec.loader is None or not path.is_file():
            raise CheckError(f"{name}: no Python file {path}")
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except (Exception, SystemExit) as exc:
            raise CheckError(f"{name}: importing {path} failed: {exc!r}") from None
        _MODULES[identity] = module
    function = getattr(module, fn, None)
    if not callable(function):
        raise CheckError(f"{name}: {path.name} has no function {fn}")
    return function


@dataclass(frozen=True)
class PromptFunction:
    """A promptfoo prompt function (``[template] prompt_function``), called when each case renders as promptfoo's
    ``renderPrompt`` calls it: JavaScript in the run's Node.js process, a ``.py`` function in this process, a
    ``.py`` file alone run as a script; what it returns is then rendered by ``renderer`` (Nunjucks' rules)."""

    path: Path
    function: str | None
    #: The setting as written (``prompts/prompt.js:fn``), for messages.
    written: str
    renderer: Any
    #: ``{provider: {id, label}, config}``, given to the function with the case's vars.
    context: dict[str, Any]
    #: The suite's folder (a ``file://`` transformVars is found in it).
    base: Path | None = None

    def prompt(self, case: PromptCase) -> str | list[dict[str, Any]]:
        """Return what the case sends: chat messages when the function's answer is JSON of them (promptfoo
        sends those as messages), else its text; TemplateError naming the file and the case when it fails."""
        where = f"prompt_function {self.written} (case {case.case_id})"
        variables = own_vars(case, self.base)  # promptfoo calls the function with the vars transformVars made
        text = _answer_text(self._call({**self.context, "vars": variables}, where), where)
        try:
            value = json.loads(text, parse_constant=_not_json)  # then the vars in each of its strings, as promptfoo
        except ValueError:
            return self._render(text, variables, where)
        rendered = self._render_strings(value, variables, where)
        if isinstance(rendered, list) and rendered and all(isinstance(m, dict) and "role" in m for m in rendered):
            return rendered
        return js_json(rendered, indent=2)

    def _render(self, text: str, variables: dict[str, Any], where: str) -> str:
        if "{" not in text:  # no tag: Nunjucks gives it back as it is (and nothing is compiled per case)
            return text
        try:
            return str(self.renderer.render(text, variables))
        except TemplateError as exc:
            raise TemplateError(f"{where}: rendering its answer: {exc}") from None

    def _render_strings(self, value: Any, variables: dict[str, Any], where: str) -> Any:
        if isinstance(value, str):
            return self._render(value, variables, where)
        if isinstance(value, list):
            return [self._render_strings(v, variables, where) for v in value]
        if isinstance(value, dict):
            return {k: self._render_strings(v, variables, where) for k, v in value.items()}
        return value

    def _call(self, context: dict[str, Any], where: str) -> Any:
        if self.path.suffix.lower() != ".py":
            payload = {"prompt": True, "file": str(self.path), "fn": self.function, "context": context}
            return node_call(payload, where, TemplateError)
        if self.function is None:
            return _python_script(self.path, context, where)
        head, _, method = self.function.partition(".")  # Class.method, as promptfoo's wrapper reads it
        try:
            function = python_function(self.path, head, where)
        except CheckError as exc:
            raise TemplateError(str(exc)) from None
        if method:
            function = getattr(function, method, None)
            if not callable(function):
                raise TemplateError(f"{where}: {self.path.name} has no function {self.function}")
        try:
            result = function(context)
            return asyncio.run(result) if inspect.iscoroutine(result) else result
        except (Exception, SystemExit) as exc:
            raise TemplateError(f"{where}: the function raised {type(exc).__name__}: {exc}") from None


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")  # JSON.parse refuses NaN and Infinity


def _js_type(value: Any) -> str:
    """Name a JSON value's type as JavaScript's ``typeof`` does (null: "nothing")."""
    if value is None:
        return "nothing"
    return "a boolean" if isinstance(value, bool) else "a number"


def _python_script(path: Path, context: dict[str, Any], where: str) -> str:
    """Run a ``.py`` prompt file as a script with the context's JSON as its argument, as promptfoo runs one named
    without a function; what it prints (its last newline cut) is the prompt."""
    try:
        done = subprocess.run(
            [sys.executable, str(path), json.dumps(context, ensure_ascii=False)],
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=TIMEOUT_S,
            cwd=path.parent,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise TemplateError(f"{where}: the script gave no prompt within {TIMEOUT_S} s") from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        raise TemplateError(f"{where}: the script exited with {done.returncode}: {lines[-1] if lines else 'no output'}")
    return "\n".join(done.stdout.splitlines())


def _text(value: Any) -> str:
    """Return a value as promptfoo's ``coerceString`` does: a string as it is, anything else ``JSON.stringify``."""
    return value if isinstance(value, str) else js_json(value)
