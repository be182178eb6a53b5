"""Scoring a prompt by its token log-probabilities, for the ppl suite mode (``inferencer = "ppl"``): the label
whose prompt has the lowest perplexity is the prediction, as in OpenCompass's ``PPLInferencer``."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_promptsuite.errors import EndpointError
from pytest_promptsuite.errors import ModelError
from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.models.model_api import Model
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.model_api import Response
from pytest_promptsuite.prompts.core import prompt_text
from pytest_promptsuite.safety.scrub import scrub_cut


_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


@dataclass(frozen=True)
class LabelScore:
    """The summed log-probability of a prompt's tokens and how many were scored."""

    logprob: float
    tokens: int

    @property
    def perplexity(self) -> float:
        """``exp`` of the mean negative log-probability (infinite when nothing was scored)."""
        return math.exp(-self.logprob / self.tokens) if self.tokens else math.inf

    def to_text(self) -> str:
        """Encode the score as the text of a :class:`Response` (how it travels through the runner)."""
        return encode({"logprob": self.logprob, "tokens": self.tokens}, compact=True, scrub=False)

    @classmethod
    def from_text(cls, text: str) -> LabelScore:
        """Read the score :meth:`to_text` wrote (a ModelError for anything else)."""
        try:
            data = decode(text)
            return cls(float(data["logprob"]), int(data["tokens"]))
        except (JsonError, KeyError, TypeError, ValueError):
            raise ModelError(f"not a score: {scrub_cut(text, 100).text!r}") from None


def fake_score(prompt: str) -> LabelScore:
    """Score a prompt as the fake model does: each token (a word or a punctuation mark) has a log-probability
    fixed by its text, between -1 and -5, so the same prompt always scores the same."""
    tokens = _TOKEN.findall(prompt)
    total = 0.0
    for token in tokens:
        digest = int.from_bytes(hashlib.sha256(token.encode("utf-8")).digest()[:2], "big")
        total -= 1.0 + 4.0 * digest / 65535
    return LabelScore(round(total, 6), len(tokens))


def echo_logprobs(data: Any, prompt: str) -> LabelScore:
    """Score ``prompt`` from a ``/v1/completions`` answer to ``echo: true, logprobs: 0``.

    The log-probabilities of the prompt's tokens count: the first has none, and generated tokens (past
    ``usage.prompt_tokens`` or past the prompt's text) are left out.
    """
    logprobs = _logprobs(data)
    values = logprobs.get("token_logprobs") if isinstance(logprobs, Mapping) else None
    if not isinstance(values, list):
        raise EndpointError(
            "the endpoint answered without choices[0].logprobs.token_logprobs: scoring needs "
            "/v1/completions with echo and logprobs (vLLM serves them)"
        )
    scored = _finite(_prompt_part(values, data.get("usage"), logprobs, prompt))
    if not scored:
        raise EndpointError("the endpoint gave no finite log-probability for the prompt's tokens")
    return LabelScore(sum(scored), len(scored))


def _logprobs(data: Any) -> Any:
    """Return ``choices[0].logprobs`` of an answer, or None."""
    choices = data.get("choices") if isinstance(data, Mapping) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        return choices[0].get("logprobs")
    return None


def _prompt_part(values: list[Any], usage: Any, logprobs: Mapping[str, Any], prompt: str) -> list[Any]:
    """Return the log-probabilities of the prompt's tokens: the first ``usage.prompt_tokens``, else those whose
    text offset lies inside the prompt, else all."""
    count = usage.get("prompt_tokens") if isinstance(usage, Mapping) else None
    offsets = logprobs.get("text_offset")
    if isinstance(count, int) and 0 < count <= len(values):
        return values[:count]
    if isinstance(offsets, list) and len(offsets) == len(values):
        return [v for v, o in zip(values, offsets, strict=False) if isinstance(o, int) and o < len(prompt)]
    return values


def _finite(values: list[Any]) -> list[float]:
    """Return the numbers of ``values`` as floats, or none when one of them is not finite."""
    scored = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return scored if all(math.isfinite(v) for v in scored) else []


def predict_label(scores: Sequence[tuple[str, LabelScore]]) -> str:
    """Return the label of lowest perplexity (the first of equals)."""
    best = min(range(len(scores)), key=lambda i: (scores[i][1].perplexity, i))
    return scores[best][0]


def _scorer(model: Model) -> Any:
    """Return the model that scores: ``model`` or the one a response cache wraps."""
    inner: Any = model
    while not callable(getattr(inner, "score", None)) and not callable(getattr(inner, "score_sync", None)):
        inner = getattr(inner, "inner", None)
        if inner is None:
            raise ModelError(
                f"{model.spec} cannot score prompts: the ppl mode needs the fake model or an "
                "openai: model on a /v1/completions endpoint that returns logprobs"
            )
    return inner


class ScoringModel:
    """``model``'s ``score`` as a model's ``generate``: the response's text is the score."""

    def __init__(self, model: Model) -> None:
        self.model = _scorer(model)
        self.spec = f"{model.spec} (scoring)"
        self.deterministic = bool(getattr(self.model, "deterministic", False))
        if callable(getattr(self.model, "score_sync", None)):
            self.generate_sync = self._generate_sync

    def _generate_sync(self, request: ModelRequest) -> Response:
        score: LabelScore = self.model.score_sync(request)
        return Response(text=score.to_text(), finish_reason="stop")

    async def aclose(self) -> None:
        """Close the scoring model's connections (the runner closes the models it called)."""
        close = getattr(self.model, "aclose", None)
        if close is not None:
            await close()

    async def generate(self, request: ModelRequest) -> Response:
        """Score ``request``'s prompt; the text of the response is the :class:`LabelScore`."""
        if callable(getattr(self.model, "score_sync", None)):
            return self._generate_sync(request)
        score: LabelScore = await self.model.score(request)
        return Response(text=score.to_text(), finish_reason="stop")


def score_text(prompt: Any) -> str:
    """Return the text the fake model scores: a string prompt, or the messages' contents joined."""
    return prompt if isinstance(prompt, str) else prompt_text(prompt)
