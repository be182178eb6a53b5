"""Importers: an OpenCompass dataset config or a promptfoo config into a suite that runs as it is
(``promptsuite import opencompass|promptfoo``)."""

from .opencompass import import_opencompass
from .opencompass import opencompass_suites
from .output import ImportedSuite
from .output import ImportResult
from .promptfoo import import_promptfoo
from .promptfoo import promptfoo_suite


__all__ = [
    "ImportResult",
    "ImportedSuite",
    "import_opencompass",
    "import_promptfoo",
    "opencompass_suites",
    "promptfoo_suite",
]
