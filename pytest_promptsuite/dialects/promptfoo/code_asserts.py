"""What an imported promptfoo suite runs for its ``javascript`` and ``python`` asserts, and its asserts after
a transform, as promptfoo runs them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.builtin_checks import make_builtin_check
from pytest_promptsuite.checks.check_api import Check
from pytest_promptsuite.checks.check_api import CheckContext
from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.dialects.promptfoo.grading_rules import Rule
from pytest_promptsuite.dialects.promptfoo.grading_rules import javascript_rule
from pytest_promptsuite.dialects.promptfoo.grading_rules import json_value
from pytest_promptsuite.dialects.promptfoo.grading_rules import python_rule
from pytest_promptsuite.dialects.promptfoo.prompt_code import Transform
from pytest_promptsuite.dialects.promptfoo.prompt_code import node_call
from pytest_promptsuite.dialects.promptfoo.prompt_code import python_function
from pytest_promptsuite.dialects.promptfoo.prompt_code import test_vars
from pytest_promptsuite.dialects.promptfoo.promptfoo_tests import fill
from pytest_promptsuite.errors import CheckError
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import TemplateError


def _context(
    case: PromptCase, base: Path | None, sent: CheckContext | None = None, config: Any = None
) -> dict[str, Any]:
    """Give a code assert what promptfoo's context holds: the prompt sent (its text; chat messages as the
    JSON echo answers), the test's vars (made by its ``transformVars`` when it has one), and the assert's
    own ``config``."""
    variables = test_vars(case, base)
    context: dict[str, Any] = {
        "vars": variables,
        "test": {"description": case.metadata.get("description"), "vars": variables},
    }
    if sent is not None and sent.prompt is not None:
        prompt = sent.prompt
        context["prompt"] = prompt if isinstance(prompt, str) else json.dumps(prompt, ensure_ascii=False, indent=2)
    if config is not None:
        context["config"] = config
    return context


def _failed(name: str, reason: str) -> CheckResult:
    """Fail an assert whose code raised or returned what promptfoo refuses (never inverted by ``not-``)."""
    return CheckResult("metric", name, False, reason, score=0.0)


def _rule_result(name: str, rule: Rule, inverse: bool) -> CheckResult:
    """Make a :class:`~.grading_rules.Rule` a check's result, ``not-`` applied as promptfoo applies it."""
    if rule.refused is not None:
        return _failed(name, rule.refused)
    passed = rule.passed != inverse
    reason = rule.reason if passed == rule.passed and rule.reason else "passed" if passed else "failed"
    return CheckResult("metric", name, passed, reason, score=rule.score)


def javascript(
    code: str | None,
    output: Any,
    case: PromptCase,
    *,
    file: str | None = None,
    fn: str | None = None,
    threshold: float | None = None,
    name: str = "javascript",
    base: Path | None = None,
    fill_vars: bool = False,
    sent: CheckContext | None = None,
    config: Any = None,
    inverse: bool = False,
) -> CheckResult:
    """Run a promptfoo ``javascript`` assert in Node.js (``file`` is relative to the suite); ``output``
    is the text, or what a transform made of it (an object reaches the code as an object). ``fill_vars``:
    the code's ``{{ var }}`` are filled from the vars the test's ``transformVars`` made."""
    context = _context(case, base, sent, config)
    if fill_vars:
        code = fill(code, context["vars"], name)
    payload: dict[str, Any] = {"output": output, "context": context, "code": code or ""}
    if file is not None:  # an absolute path (the generated module passes one)
        payload["file"], payload["fn"] = file, fn
    value = node_call(payload, name)  # CheckError when the code raises: the check fails, not- or not
    return _rule_result(name, javascript_rule(value, threshold, from_file=file is not None), inverse)


def python_assert(
    code: str | None,
    output: Any,
    case: PromptCase,
    *,
    file: str | None = None,
    fn: str | None = None,
    threshold: float | None = None,
    name: str = "python",
    base: Path | None = None,
    fill_vars: bool = False,
    sent: CheckContext | None = None,
    config: Any = None,
    inverse: bool = False,
) -> CheckResult:
    """Run a promptfoo ``python`` assert: an inline expression (a function body when it spans
    lines) or ``get_assert(output, context)`` of a file (``fn`` names another function)."""
    context = _context(case, base, sent, config)
    if fill_vars:
        code = fill(code, context["vars"], name)
    result = _python_result(code, output, context, file, fn, name)  # CheckError when it raises: failed, not- or not
    return _rule_result(name, python_rule(result, threshold), inverse)


def _python_result(
    code: str | None, output: Any, context: dict[str, Any], file: str | None, fn: str | None, name: str
) -> Any:
    """Run a ``python`` assert's code; what it returns (as JSON carries it); CheckError when it raises."""
    try:
        if file is not None:  # loaded once for the run, as the transforms' files are
            return json_value(python_function(Path(file), fn or "get_assert", name)(output, context))
        assert code is not None
        if "\n" in code:  # promptfoo's buildPythonScript: a function body, indented as its first indented line
            indent = re.search(r"^(?!\s*$)\s+", code, re.MULTILINE)
            step = indent.group(0) if indent else "    "
            body = "\n".join(step + line for line in code.split("\n"))
            namespace: dict[str, Any] = {}
            exec(f"def _assert(output, context):\n{body}\n", namespace)  # noqa: S102 (the suite's own code)
            return json_value(namespace["_assert"](output, context))
        return json_value(eval(code, {"output": output, "context": context}))  # noqa: S307 (the suite's own code)
    except CheckError:
        raise
    except Exception as exc:  # noqa: BLE001 (the suite's own code: promptfoo fails the row with its error)
        raise CheckError(f"{name}: Python code execution failed: {type(exc).__name__}: {exc}") from None


#: promptfoo's own code for is-html, contains-html, is-sql and contains-sql (run in Node.js with its libraries).
_MARKUP = Path(__file__).with_name("markup_asserts.js")


def markup(
    kind: str, output: Any, case: PromptCase, *, value: Any = None, inverse: bool = False, base: Path | None = None
) -> CheckResult:
    """Run promptfoo's ``is-html``, ``contains-html``, ``is-sql`` or ``contains-sql`` (``kind``, without ``not-``)
    as promptfoo runs it: its code, with parse5 and node-sql-parser found from the suite's folder (``base``), the
    working folder or ``NODE_PATH``."""
    name = f"{'not-' if inverse else ''}{kind}"
    context = {"type": kind, "value": value, "inverse": inverse, "paths": [str(base)] if base else []}
    answer = node_call({"output": output, "context": context, "file": str(_MARKUP), "fn": "run"}, name)
    return CheckResult("metric", name, bool(answer["pass"]), str(answer["reason"]), score=float(answer["score"]))


def not_carried(what: str, where: str) -> CheckResult:
    """Fail a case for an assert or option of its promptfoo test that the import did not carry over."""
    message = f"{where}: promptfoo's {what} was not carried over by the import, so this case cannot pass"
    return CheckResult("metric", "not carried over", False, message)


def transformed(
    output: str,
    case: PromptCase,
    entry: dict[str, Any],
    *,
    transforms: tuple[Transform, ...],
    base: Path,
    fill_vars: bool = False,
    sent: CheckContext | None = None,
) -> CheckResult:
    """Run one imported assert on the output as promptfoo gives it to the assert: the test's transform
    first, then the assert's own; a code assert gets the value (an object stays an object), every other
    type its text (promptfoo's ``coerceString``). ``fill_vars``: the value's ``{{ var }}`` are filled from
    the vars the test's ``transformVars`` made."""
    value: Any = output
    text = output
    try:
        context = {"vars": test_vars(case, base), "prompt": {}}
        if fill_vars:
            entry = {**entry, "value": fill(entry.get("value"), context["vars"], str(case.metadata.get("promptfoo")))}
        for step in transforms:
            value, text = step.apply(value, context)
    except (CheckError, TemplateError, ConfigError) as exc:
        return CheckResult("metric", str(entry.get("type")), False, str(exc))
    check, negated, name = _compiled(entry, base)
    read = value if name == "python" else text
    verdict = check.evaluate(read, CheckContext(case=case, output=text, prompt=None if sent is None else sent.prompt))
    passed = verdict.passed != negated
    message = f"{'not ' if negated else ''}{verdict.expected}: {verdict.found}".strip(": ")
    if transforms:
        message = f"after the transform, {message}"
    return CheckResult("metric", str(entry.get("type")), passed, message, score=verdict.score)


#: The checks this run has made, by (suite folder, entry): a ``file://`` value is read from its suite's folder.
_CHECKS: dict[tuple[str, str], tuple[Check, bool, str]] = {}


def end_run() -> None:
    """Forget the checks this run made, so that the next run in this process reads their files afresh."""
    _CHECKS.clear()


def _compiled(entry: dict[str, Any], base: Path) -> tuple[Check, bool, str]:
    """Make our check of an imported assert entry once a run: (check, negated, its type without ``not-``)."""
    key = (str(base.resolve()), json.dumps(entry, sort_keys=True))
    if key not in _CHECKS:
        kind = str(entry["type"])
        negated = kind.startswith("not-")
        name = kind[4:] if negated else kind
        params = {k: v for k, v in entry.items() if k != "type"}
        check = make_builtin_check(name, params, base_dir=base)
        if check is None:
            raise CheckError(f"no check type {name!r}")
        _CHECKS[key] = (check.negated() if negated else check, negated, name)
    return _CHECKS[key]
