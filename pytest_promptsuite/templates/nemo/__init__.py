"""NeMo Guardrails' semantics for task prompts: its filters and output parsers (with NeMo's names
and input shapes), its config folder and built-in prompt library, its prompt selection, its
rendering context and newline handling, byte for byte with ``LLMTaskManager.render_task_prompt``.

Asked for by ``[template] nemo_config = "DIR"`` or ``semantics = "nemo"``; see the README's
"Coming from NeMo Guardrails".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...lazy import lazy_exports


if TYPE_CHECKING:
    from .colang import colang_history
    from .colang import events_of
    from .config import NemoConfig
    from .config import read_nemo_config
    from .filters import NEMO_FILTERS
    from .filters import nemo_filter
    from .parsers import NEMO_OUTPUT_PARSERS
    from .parsers import nemo_output_parser
    from .prompt import NEMO_CONTEXT
    from .prompt import NemoPrompt
    from .prompt import nemo_prompt
    from .prompt import nemo_semantics
    from .prompt import provided_variables
    from .selection import select_nemo_prompt

__getattr__, __dir__ = lazy_exports(__name__, __file__)


__all__ = [
    "NEMO_CONTEXT",
    "NEMO_FILTERS",
    "NEMO_OUTPUT_PARSERS",
    "NemoConfig",
    "NemoPrompt",
    "colang_history",
    "events_of",
    "nemo_filter",
    "nemo_output_parser",
    "nemo_prompt",
    "nemo_semantics",
    "provided_variables",
    "read_nemo_config",
    "select_nemo_prompt",
]
