"""The ``echo`` model: answers exactly what promptfoo's ``echo`` provider answers for the same prompt."""

from __future__ import annotations

import json
import time

from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.model_api import Response


class EchoModel:
    """The prompt itself, deterministic and offline (messages as promptfoo's ``JSON.stringify(messages, null, 2)``)."""

    #: Its answers never vary.
    deterministic = True

    def __init__(self, *, spec: str = "echo") -> None:
        self.spec = spec

    def generate_sync(self, request: ModelRequest) -> Response:
        """Answer the prompt itself, at once: cost 0 and the time it took, as promptfoo's echo reports them."""
        start = time.perf_counter()
        prompt = request.prompt
        text = prompt if isinstance(prompt, str) else json.dumps(list(prompt), ensure_ascii=False, indent=2)
        latency_ms = round((time.perf_counter() - start) * 1000, 3)
        return Response(text=text, finish_reason="stop", latency_ms=latency_ms, cost_usd=0.0)

    async def generate(self, request: ModelRequest) -> Response:
        """Answer as :meth:`generate_sync` does, for callers that await."""
        return self.generate_sync(request)
