"""The checks stage: layered checks on a model's output (structure, content, review, metric)."""

from pytest_promptsuite.checks.check_api import Check
from pytest_promptsuite.checks.check_api import CheckContext
from pytest_promptsuite.checks.check_api import CheckScope
from pytest_promptsuite.checks.check_api import Params
from pytest_promptsuite.checks.check_api import Verdict
from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.checks.outcome import Layer
from pytest_promptsuite.checks.outcome import Outcome


__all__ = ["Check", "CheckContext", "CheckResult", "CheckScope", "Layer", "Outcome", "Params", "Verdict"]
