"""Stage 4: layered checks on a model's output (structure, content, review, metric)."""

from pytest_promptsuite.checks.check import Check
from pytest_promptsuite.checks.check import CheckContext
from pytest_promptsuite.checks.check import CheckScope
from pytest_promptsuite.checks.check import Params
from pytest_promptsuite.checks.check import Verdict
from pytest_promptsuite.checks.result import CheckResult
from pytest_promptsuite.checks.result import Layer
from pytest_promptsuite.checks.result import Outcome


__all__ = ["Check", "CheckContext", "CheckResult", "CheckScope", "Layer", "Outcome", "Params", "Verdict"]
