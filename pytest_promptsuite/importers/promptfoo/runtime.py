"""What an imported promptfoo suite runs for its ``javascript`` and ``python`` asserts, as promptfoo runs them."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from typing import Any

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.errors import CheckError


#: The Node.js side: read {output, context, code | file + fn} on stdin, print the result as JSON.
_NODE_HARNESS = r"""
const data = JSON.parse(require('fs').readFileSync(0, 'utf8'));
(async () => {
  let result;
  if (data.file) {
    const mod = require(data.file);
    const fn = data.fn ? mod[data.fn] : (typeof mod === 'function' ? mod : mod.default);
    if (typeof fn !== 'function') throw new Error(`${data.file} exports no function ${data.fn || ''}`);
    result = await fn(data.output, data.context);
  } else {
    const body = data.code.includes('\n') ? data.code : `return ${data.code}`;
    result = await new Function('output', 'context', body)(data.output, data.context);
  }
  process.stdout.write(JSON.stringify(result === undefined ? null : result));
})().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(3); });
"""
_TIMEOUT_S = 30


def _context(case: PromptCase) -> dict[str, Any]:
    variables = dict(case.vars)
    return {"vars": variables, "test": {"description": case.metadata.get("description"), "vars": variables}}


def _verdict(name: str, result: Any, threshold: float | None) -> CheckResult | bool | float:
    """Read an assert's result as promptfoo does: a bool, a score, or ``{pass, score, reason}``."""
    if isinstance(result, dict):
        score = result.get("score")
        passed = result.get("pass")
        if passed is None and isinstance(score, (int, float)):
            passed = score >= threshold if threshold is not None else score > 0
        reason = str(result.get("reason") or ("passed" if passed else "failed"))
        return CheckResult(
            "metric", name, bool(passed), reason, score=float(score) if isinstance(score, (int, float)) else None
        )
    if isinstance(result, bool):
        return result
    if isinstance(result, (int, float)):
        return float(result)
    raise CheckError(f"{name}: returned {result!r}; return a bool, a number or {{pass, score, reason}}")


def javascript(
    code: str | None,
    output: str,
    case: PromptCase,
    *,
    file: str | None = None,
    fn: str | None = None,
    threshold: float | None = None,
    name: str = "javascript",
) -> CheckResult | bool | float:
    """Run a promptfoo ``javascript`` assert in Node.js (``file`` is relative to the suite)."""
    node = shutil.which("node")
    if node is None:
        raise CheckError(f"{name}: needs Node.js, and 'node' is not on PATH (install Node.js to run it)")
    payload: dict[str, Any] = {"output": output, "context": _context(case), "code": code or ""}
    if file is not None:  # an absolute path (the generated module passes one)
        payload["file"], payload["fn"] = file, fn
    try:
        done = subprocess.run(
            [node, "-e", _NODE_HARNESS],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CheckError(f"{name}: Node.js took more than {_TIMEOUT_S} s") from None
    if done.returncode != 0:
        first = done.stderr.strip().splitlines()[0] if done.stderr.strip() else f"exit status {done.returncode}"
        raise CheckError(f"{name}: the JavaScript raised: {first}")
    return _verdict(name, json.loads(done.stdout or "null"), threshold)


def python_assert(
    code: str | None,
    output: str,
    case: PromptCase,
    *,
    file: str | None = None,
    fn: str | None = None,
    threshold: float | None = None,
    name: str = "python",
) -> CheckResult | bool | float:
    """Run a promptfoo ``python`` assert: an inline expression (a function body when it spans
    lines) or ``get_assert(output, context)`` of a file (``fn`` names another function)."""
    context = _context(case)
    if file is not None:
        spec = importlib.util.spec_from_file_location(f"promptfoo_assert_{abs(hash(file))}", file)
        if spec is None or spec.loader is None:
            raise CheckError(f"{name}: cannot load {file}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        function = getattr(module, fn or "get_assert", None)
        if not callable(function):
            raise CheckError(f"{name}: {file} has no function {fn or 'get_assert'}")
        return _verdict(name, function(output, context), threshold)
    assert code is not None
    if "\n" in code.strip():
        body = "\n".join("    " + line for line in code.strip("\n").splitlines())
        namespace: dict[str, Any] = {}
        exec(f"def _assert(output, context):\n{body}\n", namespace)  # noqa: S102 (the suite's own code)
        result = namespace["_assert"](output, context)
    else:
        result = eval(code, {"output": output, "context": context})  # noqa: S307 (the suite's own code)
    return _verdict(name, result, threshold)


def not_carried(what: str, where: str) -> CheckResult:
    """Fail a case for an assert or option of its promptfoo test that the import did not carry over."""
    message = f"{where}: promptfoo's {what} was not carried over by the import, so this case cannot pass"
    return CheckResult("metric", "not carried over", False, message)
