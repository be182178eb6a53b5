"""The built-in check types by promptfoo's names, and the factory the built-in
``pytest_promptsuite_make_check`` returns."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.check_api import Check
from pytest_promptsuite.checks.check_api import CheckScope
from pytest_promptsuite.checks.check_api import Params


#: Every built-in type (without ``not-``) and its factory in its layer's module, in the README's order.
BUILTIN_TYPES = {
    "is-json": "structure.make_is_json",
    "contains-json": "structure.make_contains_json",
    "pydantic": "structure.make_pydantic",
    "is-xml": "structure.make_is_xml",
    "word-count": "structure.WordCount.make",
    "char-count": "structure.CharCount.make",
    "finish-reason": "structure.make_finish_reason",
    "is-valid-openai-tools-call": "tool_checks.make_valid_tools_call",
    "is-valid-openai-function-call": "tool_checks.make_valid_function_call",
    "tool-call-f1": "tool_checks.make_tool_call_f1",
    "trajectory:tool-used": "tool_checks.make_tool_used",
    "trajectory:tool-sequence": "tool_checks.make_tool_sequence",
    "trajectory:tool-args-match": "tool_checks.make_tool_args_match",
    "trajectory:step-count": "tool_checks.make_step_count",
    "conversation:turn-count": "conversation_checks.make_turn_count",
    "conversation:keeps": "conversation_checks.make_keeps",
    "conversation:goal-met": "conversation_checks.make_goal_met",
    "conversation:role-adherence": "conversation_checks.make_role_adherence",
    "equals": "content.make_equals",
    "contains": "content.make_contains",
    "icontains": "content.make_contains",
    "contains-any": "content.make_contains",
    "contains-all": "content.make_contains",
    "icontains-any": "content.make_contains",
    "icontains-all": "content.make_contains",
    "starts-with": "content.make_starts_with",
    "regex": "content.make_regex",
    "levenshtein": "content.make_levenshtein",
    "similar": "content.make_similar",
    "similar:cosine": "embedding.make_similar",
    "similar:dot": "embedding.make_similar",
    "similar:euclidean": "embedding.make_similar",
    "rouge-n": "rouge.make_rouge_n",
    "is-refusal": "content.make_is_refusal",
    "human-review": "review.make_human_review",
    "latency": "metric.make_latency",
    "tokens": "metric.make_tokens",
    "cost": "metric.make_cost",
    "llm-rubric": "metric.make_llm_rubric",
    "python": "metric.make_python",
}


def make_builtin_check(
    name: str,
    params: dict[str, Any],
    *,
    base_dir: Path,
    scope: CheckScope | None = None,
    case: PromptCase | None = None,
) -> Check | None:
    """Make the built-in check ``name`` from an entry's ``params``, or return None if it is not built in."""
    where = BUILTIN_TYPES.get(name)
    if where is None:
        return None
    module, _, path = where.partition(".")
    # the layer's module loads when a suite first uses it: a run on contains never loads jsonschema
    factory: Any = importlib.import_module(f"pytest_promptsuite.checks.{module}")
    for attr in path.split("."):
        factory = getattr(factory, attr)
    p = Params(name, params, base_dir=base_dir, scope=scope)
    check: Check = factory(p)
    p.done()
    return check
