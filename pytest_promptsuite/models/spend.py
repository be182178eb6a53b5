"""What a run may still spend on model calls: ``--prompt-max-calls N`` and ``[model] budget_usd``."""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from typing import Any

from pytest_promptsuite.config.tables import Prices
from pytest_promptsuite.errors import ModelError
from pytest_promptsuite.models.model_api import Model
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.model_api import Response
from pytest_promptsuite.prompts.core import prompt_text


#: Characters per token in the estimate (OpenAI's rule of thumb for English text).
CHARS_PER_TOKEN = 4


class NotIssued(ModelError):
    """The call was deliberately not issued: its case ends as ``skipped`` with this reason."""


class BudgetExhausted(NotIssued):
    """The call was not issued: it would pass the run's call or USD budget."""


def estimate_tokens(request: ModelRequest) -> tuple[int, int]:
    """Estimate the (prompt, completion) tokens a request will use: four characters a token, ``max_tokens``."""
    prompt = max(1, math.ceil(len(prompt_text(request.prompt)) / CHARS_PER_TOKEN))
    params: Mapping[str, Any] = request.params
    limit = params.get("max_tokens", params.get("max_completion_tokens"))
    completion = limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else prompt
    return prompt, completion


class Allowance:
    """The run's budget: calls (run-wide) and USD (per model that has ``budget_usd``).

    Thread-safe: calls are issued on the runner's loop, a batch is planned on the main thread.
    """

    def __init__(self, max_calls: int | None = None) -> None:
        self.max_calls = max_calls
        self.issued = 0
        #: Why the first call was refused (None while every call fitted).
        self.exhausted: str | None = None
        self._lock = threading.Lock()
        self._spent: dict[int, float] = {}

    def take(self, account: BudgetedModel, request: ModelRequest) -> float:
        """Reserve one call of ``account``'s model and return its estimated USD (0 without prices).

        Raises :class:`BudgetExhausted` when it would pass a budget.
        """
        estimate = 0.0
        if account.prices is not None:
            estimate = account.prices.cost(*estimate_tokens(request)) or 0.0
        with self._lock:
            if self.max_calls is not None and self.issued >= self.max_calls:
                reason = f"--prompt-max-calls {self.max_calls} reached: the call was not issued"
            elif account.budget_usd is not None and (self._spent.get(id(account), 0.0) + estimate > account.budget_usd):
                spent = self._spent.get(id(account), 0.0)
                reason = (
                    f"[model] budget_usd = {account.budget_usd:g} of {account.spec} would be passed "
                    f"(spent or committed ${spent:.6f}, this call's estimate ${estimate:.6f}): "
                    "the call was not issued"
                )
            else:
                self.issued += 1
                self._spent[id(account)] = self._spent.get(id(account), 0.0) + estimate
                return estimate
            if self.exhausted is None:
                self.exhausted = reason
        raise BudgetExhausted(reason)

    def settle(self, account: BudgetedModel, estimate: float, response: Response | None) -> None:
        """Replace a call's estimate by its real cost (the usage the endpoint reported), if known."""
        if account.prices is None or response is None or response.usage is None:
            return
        usage = response.usage
        if usage.prompt_tokens is None or usage.completion_tokens is None:
            return
        real = account.prices.cost(usage.prompt_tokens, usage.completion_tokens) or 0.0
        with self._lock:
            self._spent[id(account)] = self._spent.get(id(account), 0.0) - estimate + real


class BudgetedModel:
    """Wraps a model with I/O: each call is issued only when the run's :class:`Allowance` lets it."""

    def __init__(
        self, inner: Model, allowance: Allowance, *, budget_usd: float | None = None, prices: Prices | None = None
    ) -> None:
        self.inner = inner
        self.spec = inner.spec
        self.allowance = allowance
        self.budget_usd = budget_usd
        self.prices = prices

    def __repr__(self) -> str:
        return f"BudgetedModel({self.inner!r})"

    def __getattr__(self, name: str) -> Any:
        # cache_identity, deterministic, aclose ...: as the wrapped model's
        return getattr(self.inner, name)

    async def generate(self, request: ModelRequest) -> Response:
        """Answer through the inner model, if the call fits the budget."""
        estimate = self.allowance.take(self, request)
        response = await self.inner.generate(request)
        self.allowance.settle(self, estimate, response)
        return response
