"""Stage 3: models. A prompt in, a response out: the fake model and OpenAI-compatible endpoints."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports


if TYPE_CHECKING:
    from .base import Message
    from .base import Model
    from .base import ModelRequest
    from .base import Prompt
    from .base import Response
    from .base import SyncModel
    from .base import Usage
    from .base import is_sync
    from .base import prompt_hash
    from .base import prompt_text
    from .fake import FakeModel
    from .fake import FakeRule
    from .registry import make_model

__getattr__, __dir__ = lazy_exports(__name__, __file__)


__all__ = [
    "FakeModel",
    "FakeRule",
    "Message",
    "Model",
    "ModelRequest",
    "Prompt",
    "Response",
    "SyncModel",
    "Usage",
    "is_sync",
    "make_model",
    "prompt_hash",
    "prompt_text",
]
