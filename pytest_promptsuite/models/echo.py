"""The ``echo`` model: answers exactly what promptfoo's ``echo`` provider answers for the same prompt.

promptfoo's echo provider returns the prompt it was given. A string prompt is that string; a chat
prompt (a promptfoo JSON prompt, imported as messages) reaches promptfoo's providers as the JSON
text ``JSON.stringify(messages, null, 2)``, which is what this model answers for messages.
"""

from __future__ import annotations

import json

from pytest_promptsuite.models.base import ModelRequest
from pytest_promptsuite.models.base import Response


__all__ = ["EchoModel"]


class EchoModel:
    """Deterministic and offline: the prompt itself (messages as promptfoo's JSON text)."""

    #: Its answers never vary.
    deterministic = True

    def __init__(self, *, spec: str = "echo") -> None:
        self.spec = spec

    def generate_sync(self, request: ModelRequest) -> Response:
        """The prompt, at once."""
        prompt = request.prompt
        text = prompt if isinstance(prompt, str) else json.dumps(list(prompt), ensure_ascii=False, indent=2)
        return Response(text=text, finish_reason="stop")

    async def generate(self, request: ModelRequest) -> Response:
        """The same as :meth:`generate_sync`, for callers that await."""
        return self.generate_sync(request)
