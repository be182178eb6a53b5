"""A third-party pytest-promptsuite plugin: the ``has-order-id`` check and the ``reverse`` model.

Registered through the ``promptsuite.plugins`` entry point group, so pytest and the
``promptsuite`` command both see it once the package is installed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pytest_promptsuite.checks import Check
from pytest_promptsuite.checks import CheckContext
from pytest_promptsuite.checks import Layer
from pytest_promptsuite.checks import Verdict
from pytest_promptsuite.errors import CheckError
from pytest_promptsuite.models import ModelRequest
from pytest_promptsuite.models import Response
from pytest_promptsuite.prompts.core import prompt_text


class HasOrderId(Check):
    """``has-order-id``: an order id such as ``ORD-123456`` (``value``: another prefix)."""

    layer = Layer.CONTENT

    def __init__(self, prefix: str) -> None:
        self.pattern = re.compile(re.escape(prefix) + r"-\d{6}\b")
        self.prefix = prefix

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        text = value if isinstance(value, str) else str(value)
        match = self.pattern.search(text)
        found = f"{match.group(0)!r} at offset {match.start()}" if match else "no order id"
        return Verdict(match is not None, f"an order id {self.prefix}-NNNNNN", found)


def pytest_promptsuite_make_check(name: str, params: dict[str, Any]) -> Check | None:
    if name != "has-order-id":
        return None
    unknown = set(params) - {"value"}
    if unknown:
        raise CheckError(f"unknown field {sorted(unknown)[0]!r} for 'has-order-id' (it takes 'value')")
    prefix = params.get("value", "ORD")
    if not isinstance(prefix, str) or not prefix:
        raise CheckError(f"'value' of 'has-order-id' must be a prefix such as 'ORD', got {prefix!r}")
    return HasOrderId(prefix)


class ReverseModel:
    """Replies with the prompt's text reversed (deterministic, offline)."""

    spec = "reverse"

    def generate_sync(self, request: ModelRequest) -> Response:
        return Response(text=prompt_text(request.prompt)[::-1], finish_reason="stop")

    async def generate(self, request: ModelRequest) -> Response:
        return self.generate_sync(request)


def pytest_promptsuite_make_model(spec: str, settings: Any, root: Path) -> Any:
    if spec == "reverse":
        return ReverseModel()
    return None
