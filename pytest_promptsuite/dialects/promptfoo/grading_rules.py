"""What a ``javascript`` or ``python`` assert's return value means, by promptfoo 0.123.1's rules
(``validateResult``, ``isGradingResult``, ``normalizeScriptResult``): a pass, a score, or a refusal."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Rule:
    """What promptfoo makes of a code assert's value before ``not-``: passed and score, or ``refused`` (the row
    fails whatever ``not-`` says)."""

    passed: bool = False
    score: float = 0.0
    reason: str = ""
    refused: str | None = None


def json_value(value: Any) -> Any:
    """Return a Python assert's value as promptfoo receives it: through JSON (a tuple a list, NaN null)."""
    try:
        return json.loads(json.dumps(value, allow_nan=False, default=str))
    except ValueError:
        return None if isinstance(value, float) else value


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _object_or_absent(result: dict[str, Any], key: str) -> bool:
    """``typeof x === 'undefined' || typeof x === 'object'`` (null is an object in JavaScript)."""
    return key not in result or result[key] is None or isinstance(result[key], (dict, list))


def is_grading_result(result: Any) -> bool:
    """Tell whether ``result`` is a GradingResult as promptfoo's ``isGradingResult`` reads one: ``pass`` a
    boolean, ``score`` a number, ``reason`` a string, and its optional keys of their types."""
    if not isinstance(result, dict):
        return False
    return (
        isinstance(result.get("pass"), bool)
        and _number(result.get("score"))
        and isinstance(result.get("reason"), str)
        and all(_object_or_absent(result, k) for k in ("namedScores", "namedScoreWeights", "tokensUsed", "assertion"))
        and ("componentResults" not in result or isinstance(result["componentResults"], list))
        and ("comment" not in result or isinstance(result["comment"], str))
    )


def _scored(score: float, threshold: float | None) -> Rule:
    """Grade a number: it passes above 0, or at ``threshold`` and above when the assert has one."""
    passed = score > 0 if threshold is None else score >= threshold
    return Rule(passed, float(score))


def _graded(result: dict[str, Any]) -> Rule:
    return Rule(bool(result["pass"]), float(result["score"]), str(result["reason"]))


def javascript_rule(value: Any, threshold: float | None, *, from_file: bool) -> Rule:
    """Read a ``javascript`` assert's value as ``handleJavascript`` does: a boolean, a number (against
    ``threshold``), or a whole GradingResult (its ``pass`` as it is, ``threshold`` not applied); anything else
    is refused (a file's function may return an object, which must still be a GradingResult)."""
    if isinstance(value, bool):
        return Rule(value, 1.0 if value else 0.0)
    if _number(value):
        return _scored(value, threshold)
    if is_grading_result(value):
        return _graded(value)
    kind = "object" if value is None or isinstance(value, (dict, list)) else "string"
    what = "a boolean, number, or object" if from_file and kind == "string" else "a boolean, number, or GradingResult"
    shown = json.dumps(value, ensure_ascii=False)
    return Rule(refused=f"Custom function must return {what} object. Got type {kind}: {shown}")


_SNAKE = {"pass_": "pass", "named_scores": "namedScores", "component_results": "componentResults"}
_SNAKE_MORE = {"tokens_used": "tokensUsed"}


def _camel(result: dict[str, Any]) -> dict[str, Any]:
    """Map a Python result's snake_case keys as ``mapSnakeCaseToCamelCase`` does (a camelCase key wins)."""
    mapped = dict(result)
    for snake, camel in {**_SNAKE, **_SNAKE_MORE}.items():
        if snake in mapped and camel not in mapped:
            mapped[camel] = mapped[snake]
    return mapped


def _python_object(result: Any, threshold: float | None) -> Rule:
    """Grade a dict (or a list, an object to JavaScript): a GradingResult, failed under ``threshold``."""
    mapped = _camel(result) if isinstance(result, dict) else result
    if not is_grading_result(mapped):
        shown = json.dumps(mapped, ensure_ascii=False, indent=2)
        return Rule(
            refused=f"Python assertion must return a boolean, number, or {{pass, score, reason}} object. "
            f"Got instead:\n{shown}"
        )
    rule = _graded(mapped)
    if threshold is not None and rule.score < threshold:
        message = f"Python score {_js_number(rule.score)} is less than threshold {_js_number(threshold)}"
        return Rule(False, rule.score, f"{message}: {rule.reason}" if rule.reason else message)
    return rule


#: The number JavaScript's ``parseFloat`` reads at the start of a string.
_FLOAT = re.compile(r"\s*([+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?))")


def _parse_float(text: str) -> float:
    """Read a number as JavaScript's ``parseFloat`` does (leading space skipped, trailing text ignored); NaN if none."""
    match = _FLOAT.match(text)
    return float(match.group(1).replace("Infinity", "inf")) if match else math.nan


def _js_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _js_text(value: Any) -> str:
    """``String(value)`` for what JSON carries."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return _js_number(value) if _number(value) else str(value)


def python_rule(value: Any, threshold: float | None) -> Rule:
    """Read a ``python`` assert's value as ``normalizeScriptResult`` does: ``True``/``"true"`` and
    ``False``/``"false"``, a dict (or JSON text of one) that must be a GradingResult (snake_case keys mapped,
    failed under ``threshold``), else a number read by ``parseFloat`` (against ``threshold``); no number is refused."""
    lowered = value.lower() if isinstance(value, str) else None
    if value is True or lowered == "true":
        return Rule(True, 1.0)
    if value is False or lowered == "false":
        return Rule(False, 0.0)
    if isinstance(value, str) and value.startswith("{"):
        return _python_json(value, threshold)
    if isinstance(value, (dict, list)):
        return _python_object(value, threshold)
    score = _parse_float(_js_text(value))
    if math.isnan(score):
        return Rule(
            refused=f"Python assertion must return a boolean, number, or {{pass, score, reason}} object. "
            f"Instead got:\n{_js_text(value)}"
        )
    return _scored(score, threshold)


def _python_json(text: str, threshold: float | None) -> Rule:
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        return Rule(refused=f"Invalid JSON: {exc} when parsing result: {text}")
    if not isinstance(parsed, (dict, list)):
        return Rule(
            refused=f"Python assertion must return a boolean, number, or {{pass, score, reason}} object. "
            f"Got instead: {text}"
        )
    return _python_object(parsed, threshold)
