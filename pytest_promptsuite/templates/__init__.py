"""Stage 2: a case into the prompt that is sent (a string, or chat messages).

The engine implements OpenCompass/AISBench prompt templates and meta templates as
``docs/templates.md`` describes them, with its deliberate differences.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports
from .substitute import substitute  # eager: the module has the name too


if TYPE_CHECKING:
    from ..cases import PromptCase
    from .builtin import BUILTIN_META_TEMPLATES
    from .builtin import builtin_meta
    from .case_prompts import CasePrompts
    from .meta import APITemplateParser
    from .meta import LMTemplateParser
    from .meta import MetaTemplate
    from .meta import to_openai_messages
    from .multimodal import MMPromptTemplate
    from .multiturn import MultiTurnPromptTemplate
    from .prompt import Prompt
    from .prompt_list import PromptList
    from .prompt_template import PromptTemplate
    from .request import render_request
    from .retrievers import BM25Retriever
    from .retrievers import FixKRetriever
    from .retrievers import RandomRetriever
    from .retrievers import TopkRetriever
    from .retrievers import ZeroRetriever
    from .row import case_row

__getattr__, __dir__ = lazy_exports(__name__, __file__)

__all__ = [
    "APITemplateParser",
    "BM25Retriever",
    "BUILTIN_META_TEMPLATES",
    "CasePrompts",
    "FixKRetriever",
    "LMTemplateParser",
    "MMPromptTemplate",
    "MetaTemplate",
    "MultiTurnPromptTemplate",
    "PromptList",
    "PromptTemplate",
    "RandomRetriever",
    "TopkRetriever",
    "ZeroRetriever",
    "builtin_meta",
    "case_prompt",
    "case_row",
    "render_request",
    "substitute",
    "to_openai_messages",
]


def case_prompt(
    case: PromptCase, prompts: CasePrompts | None = None, *, variant: str | None = None
) -> Prompt:
    """The (first) prompt a case sends: with ``prompts`` (a suite's builder) or with no template
    (the input string; a multi-turn case's first user turn)."""
    from .case_prompts import CasePrompts

    return (prompts or CasePrompts()).prompt(case, variant=variant)
