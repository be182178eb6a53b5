"""pytest-promptsuite: prompt regression testing as a pytest plugin.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING
from typing import Any


if TYPE_CHECKING:
    from pytest_promptsuite.cases.load import load_cases as load_cases
    from pytest_promptsuite.cases.prompt_case import CaseLocation as CaseLocation
    from pytest_promptsuite.cases.prompt_case import PromptCase as PromptCase
    from pytest_promptsuite.checks.outcome import CheckResult as CheckResult
    from pytest_promptsuite.config.suite import SuiteConfig as SuiteConfig
    from pytest_promptsuite.config.suite import load_config as load_config
    from pytest_promptsuite.errors import CaseFileError as CaseFileError
    from pytest_promptsuite.errors import CheckError as CheckError
    from pytest_promptsuite.errors import ConfigError as ConfigError
    from pytest_promptsuite.errors import EndpointError as EndpointError
    from pytest_promptsuite.errors import ModelError as ModelError
    from pytest_promptsuite.errors import PromptSuiteError as PromptSuiteError
    from pytest_promptsuite.errors import TemplateError as TemplateError
    from pytest_promptsuite.models.fake import FakeModel as FakeModel
    from pytest_promptsuite.models.model_api import Model as Model
    from pytest_promptsuite.models.model_api import ModelRequest as ModelRequest
    from pytest_promptsuite.models.model_api import Response as Response
    from pytest_promptsuite.models.model_api import Usage as Usage
    from pytest_promptsuite.results.case_result import CaseResult as CaseResult
    from pytest_promptsuite.results.frames import read_history as read_history
    from pytest_promptsuite.results.frames import read_results as read_results
    from pytest_promptsuite.results.frames import read_turns as read_turns
    from pytest_promptsuite.results.summary import Summary as Summary
    from pytest_promptsuite.results.summary import summarize as summarize


__version__ = "0.1.0"

#: Each public name and its module, imported on first use (PEP 562): pytest imports this package for every run.
_EXPORTS = {
    "CaseFileError": "pytest_promptsuite.errors",
    "CaseLocation": "pytest_promptsuite.cases.prompt_case",
    "CaseResult": "pytest_promptsuite.results.case_result",
    "CheckError": "pytest_promptsuite.errors",
    "CheckResult": "pytest_promptsuite.checks.outcome",
    "ConfigError": "pytest_promptsuite.errors",
    "EndpointError": "pytest_promptsuite.errors",
    "FakeModel": "pytest_promptsuite.models.fake",
    "Model": "pytest_promptsuite.models.model_api",
    "ModelError": "pytest_promptsuite.errors",
    "ModelRequest": "pytest_promptsuite.models.model_api",
    "PromptCase": "pytest_promptsuite.cases.prompt_case",
    "PromptSuiteError": "pytest_promptsuite.errors",
    "Response": "pytest_promptsuite.models.model_api",
    "SuiteConfig": "pytest_promptsuite.config.suite",
    "Summary": "pytest_promptsuite.results.summary",
    "TemplateError": "pytest_promptsuite.errors",
    "Usage": "pytest_promptsuite.models.model_api",
    "load_cases": "pytest_promptsuite.cases.load",
    "load_config": "pytest_promptsuite.config.suite",
    "read_history": "pytest_promptsuite.results.frames",
    "read_results": "pytest_promptsuite.results.frames",
    "read_turns": "pytest_promptsuite.results.frames",
    "summarize": "pytest_promptsuite.results.summary",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use."""
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
