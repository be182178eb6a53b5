"""The built-in check types by promptfoo's names, and the factory the built-in hook calls.

``make_builtin_check(name, params, base_dir=...)`` is what ``plugin.py``'s ``trylast``
``pytest_promptsuite_make_check`` returns: a :class:`Check`, None for a name it does not know (a
plugin may know it), or a :class:`CheckError` for a malformed spec.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_promptsuite.checks.base import Check
from pytest_promptsuite.checks.base import CheckScope
from pytest_promptsuite.checks.base import Params
from pytest_promptsuite.checks.content import make_contains  # the layer of must_include: every run uses it
from pytest_promptsuite.errors import CheckError


__all__ = ["BUILTIN_TYPES", "make_builtin_check"]

#: ``factory(params, base_dir, scope)``: the check, reading files and code only as ``scope`` allows.
Factory = Callable[[Params, Path, "CheckScope | None"], Check]


def _made(module: str, path: str, *args: Any) -> Check:
    """``module.path(*args)``, importing the layer's module when a suite first uses one of its
    types (a run on ``contains`` never loads the JSON-schema or judge code)."""
    target: Any = importlib.import_module(f".{module}", __package__)
    for part in path.split("."):
        target = getattr(target, part)
    check: Check = target(*args)
    return check


def _schema_check(cls: str) -> Factory:
    def make(p: Params, base_dir: Path, scope: CheckScope | None) -> Check:
        from pytest_promptsuite.checks import structure

        return _made("structure", cls, structure.load_schema(p, base_dir, scope))

    return make


def _pydantic(p: Params, base_dir: Path, scope: CheckScope | None) -> Check:
    from pytest_promptsuite.checks import structure

    spec = p.string("value", required=True, what="a dotted path to a pydantic model class")
    assert spec is not None
    model = structure.import_object(spec, base_dir, field="value", name=p.name, scope=scope)
    from pydantic import BaseModel

    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise CheckError(f"'value' of {p.name!r}: {spec!r} is not a pydantic model class")
    return structure.PydanticModel(model, spec)


def _is_xml(p: Params, base_dir: Path, scope: CheckScope | None) -> Check:
    from pytest_promptsuite.checks import structure

    value = p.raw("value", what="{requiredElements = [...]} or a list of element paths")
    if value is None:
        return structure.IsXml([])
    if isinstance(value, dict):
        if set(value) != {"requiredElements"}:
            raise CheckError(f"'value' of {p.name!r} takes only 'requiredElements', got keys {sorted(value)}")
        value = value["requiredElements"]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise CheckError(
            f"'value' of {p.name!r}: requiredElements must be a non-empty list of paths like 'root.child'"
        )
    return structure.IsXml(value)


def _finish_reason(p: Params, base_dir: Path, scope: CheckScope | None) -> Check:
    from pytest_promptsuite.checks import structure

    reason = p.string("value", required=True, what="a finish reason such as 'stop' or 'length'")
    assert reason is not None
    return structure.FinishReason(reason)


def _plain(module: str, make: str) -> Factory:
    return lambda p, base_dir, scope: _made(module, make, p)


def _scoped(module: str, make: str) -> Factory:
    return lambda p, base_dir, scope: _made(module, make, p, base_dir, scope)


def _contains(mode: str, ignore_case: bool) -> Factory:
    return lambda p, base_dir, scope: make_contains(p, mode=mode, ignore_case=ignore_case)


#: Every built-in type (without ``not-``), in the README's order: structure, content, review, metric.
BUILTIN_TYPES: dict[str, Factory] = {
    "is-json": _schema_check("IsJson"),
    "contains-json": _schema_check("ContainsJson"),
    "pydantic": _pydantic,
    "is-xml": _is_xml,
    "word-count": _plain("structure", "WordCount.make"),
    "char-count": _plain("structure", "CharCount.make"),
    "finish-reason": _finish_reason,
    "equals": _plain("content", "make_equals"),
    "contains": _contains("one", False),
    "icontains": _contains("one", True),
    "contains-any": _contains("any", False),
    "contains-all": _contains("all", False),
    "icontains-any": _contains("any", True),
    "icontains-all": _contains("all", True),
    "starts-with": _plain("content", "make_starts_with"),
    "regex": _plain("content", "make_regex"),
    "levenshtein": _plain("content", "make_levenshtein"),
    "similar": _plain("content", "make_similar"),
    "is-refusal": _plain("content", "make_is_refusal"),
    "human-review": _plain("review", "make_human_review"),
    "latency": _plain("metric", "make_latency"),
    "tokens": _plain("metric", "make_tokens"),
    "cost": _plain("metric", "make_cost"),
    "llm-rubric": _plain("metric", "make_llm_rubric"),
    "python": _scoped("metric", "make_python"),
}


def make_builtin_check(
    name: str, params: dict[str, Any], *, base_dir: Path, scope: CheckScope | None = None
) -> Check | None:
    """The built-in check ``name`` made from ``params``; None if ``name`` is not built in.
    ``scope`` says where its files and code may come from (None: anywhere)."""
    factory = BUILTIN_TYPES.get(name)
    if factory is None:
        return None
    p = Params(name, params)
    check = factory(p, base_dir, scope)
    p.done()
    return check
