"""The old import path of :mod:`.case_prompts` (and of :mod:`.row`'s ``case_row`` and
``load_train_rows``), kept for callers not yet moved (``cli.py`` imports ``suite_prompts`` here).
New code imports from :mod:`.case_prompts` and :mod:`.row`.
"""

from __future__ import annotations

from .case_prompts import CasePrompts
from .case_prompts import suite_prompts
from .row import case_row
from .row import load_train_rows


__all__ = ["CasePrompts", "case_row", "load_train_rows", "suite_prompts"]
