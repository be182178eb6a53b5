"""A custom check type for this suite, added through the pytest_promptsuite_make_check hook.

``{"type": "order-id"}`` passes when the value (the output, or the field at ``path``) is an order
id such as ``ORD-123456``; ``not-order-id`` when there is none.
"""

from __future__ import annotations

import re
from typing import Any

from pytest_promptsuite.checks import Check
from pytest_promptsuite.checks import CheckContext
from pytest_promptsuite.checks import Layer
from pytest_promptsuite.checks import Verdict
from pytest_promptsuite.errors import CheckError


ORDER_ID = re.compile(r"ORD-\d{6}")


class OrderId(Check):
    layer = Layer.CONTENT

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        if not isinstance(value, str):
            return Verdict(False, "an order id like ORD-123456", repr(value))
        match = ORDER_ID.fullmatch(value) if ctx.path else ORDER_ID.search(value)
        return Verdict(match is not None, "an order id like ORD-123456", repr(value[:40]))


def pytest_promptsuite_make_check(name: str, params: dict[str, Any]) -> Check | None:
    if name != "order-id":
        return None
    if params:
        raise CheckError(f"'order-id' takes no fields, got {sorted(params)}")
    return OrderId()
