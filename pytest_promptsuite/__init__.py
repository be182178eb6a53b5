"""pytest-promptsuite: prompt regression testing as a pytest plugin.

``pytest --prompt-suite cases.jsonl`` collects every case of a JSONL file as a pytest item, sends
it to a model, checks the output in layers and gates the run on per-slice pass rates.

PYTEST_DONT_REWRITE (the plugin asserts nothing; this keeps pytester runs free of rewrite warnings)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_exports


if TYPE_CHECKING:
    from .cases import CaseLocation
    from .cases import PromptCase
    from .cases import load_cases
    from .checks import CaseResult
    from .checks import CheckResult
    from .errors import CaseFileError
    from .errors import CheckError
    from .errors import ConfigError
    from .errors import EndpointError
    from .errors import ModelError
    from .errors import PromptSuiteError
    from .errors import TemplateError
    from .models import FakeModel
    from .models import Model
    from .models import ModelRequest
    from .models import Response
    from .models import Usage
    from .results import Summary
    from .results import summarize
    from .suite import SuiteConfig
    from .suite import load_config

__getattr__, __dir__ = lazy_exports(__name__, __file__)


__version__ = "0.1.0"

__all__ = [
    "CaseFileError",
    "CaseLocation",
    "CaseResult",
    "CheckError",
    "CheckResult",
    "ConfigError",
    "EndpointError",
    "FakeModel",
    "Model",
    "ModelError",
    "ModelRequest",
    "PromptCase",
    "PromptSuiteError",
    "Response",
    "SuiteConfig",
    "Summary",
    "TemplateError",
    "Usage",
    "load_cases",
    "load_config",
    "summarize",
]
