"""Stage 4: layered checks on a model's output (structure, content, review, metric).

``compile_case`` turns a case's ``assert`` entries into checks when the case file is collected
(a bad entry stops the run there); an :class:`Evaluator` runs them on each response.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports


if TYPE_CHECKING:
    from .base import RESULT_FORMAT_VERSION
    from .base import CaseResult
    from .base import CheckResult
    from .base import Layer
    from .base import Outcome
    from .compiled import CheckSet
    from .compiled import CompiledCheck
    from .compiled import CompiledChecks
    from .compiled import MakeCheck
    from .compiled import SuiteChecks
    from .compiled import builtin_make
    from .compiled import compile_case
    from .compiled import compile_cases
    from .compiled import compile_suite_checks
    from .content import must_checks
    from .core import Check
    from .core import CheckContext
    from .core import CheckScope
    from .core import Params
    from .core import Verdict
    from .evaluator import Evaluator
    from .evaluator import Transform
    from .evaluator import evaluate
    from .evaluator import outcome_of
    from .jsonpath import JsonPath
    from .metric import ModelJudge
    from .registry import BUILTIN_TYPES
    from .registry import make_builtin_check

__getattr__, __dir__ = lazy_exports(__name__, __file__)


__all__ = [
    "BUILTIN_TYPES",
    "RESULT_FORMAT_VERSION",
    "CaseResult",
    "Check",
    "CheckContext",
    "CheckResult",
    "CheckScope",
    "CheckSet",
    "CompiledCheck",
    "CompiledChecks",
    "Evaluator",
    "JsonPath",
    "Layer",
    "MakeCheck",
    "ModelJudge",
    "Outcome",
    "Params",
    "SuiteChecks",
    "Transform",
    "Verdict",
    "builtin_make",
    "compile_case",
    "compile_cases",
    "compile_suite_checks",
    "evaluate",
    "make_builtin_check",
    "must_checks",
    "outcome_of",
]
