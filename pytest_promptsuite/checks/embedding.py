"""promptfoo's ``similar:cosine``, ``similar:dot`` and ``similar:euclidean``: the output's embedding against
``value``'s, from the suite's ``[models.embedding]`` (a model with an ``embed`` method, or an endpoint's
``/embeddings``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any

from pytest_promptsuite.checks.check_api import Check
from pytest_promptsuite.checks.check_api import CheckContext
from pytest_promptsuite.checks.check_api import Embed
from pytest_promptsuite.checks.check_api import Params
from pytest_promptsuite.checks.check_api import Verdict
from pytest_promptsuite.checks.check_api import json_text
from pytest_promptsuite.checks.check_api import shorten
from pytest_promptsuite.errors import ModelError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.model_api import Response


if TYPE_CHECKING:
    from pytest_promptsuite.models.model_api import Model
    from pytest_promptsuite.models.runner import ModelRunner


#: promptfoo compares with this slack (``Number.EPSILON``).
_EPSILON = 2.220446049250313e-16


def _score(metric: str, a: Sequence[float], b: Sequence[float]) -> float:
    """Return the similarity (cosine, dot) or the distance (euclidean) of two vectors, as promptfoo's."""
    if len(a) != len(b):
        raise ValueError(f"the embeddings differ in length ({len(a)} and {len(b)})")
    if metric == "euclidean":
        return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b, strict=True)))
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    if metric == "dot":
        return dot
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norms if norms else 0.0


class ModelEmbedder:
    """An embedding callable over an endpoint model (``openai:MODEL``'s ``/embeddings``): the texts of one call
    go in one request, through the run's runner, so the response cache, cassettes and budget cover them."""

    def __init__(self, model: Model, runner: ModelRunner, spec: str, params: dict[str, Any] | None = None) -> None:
        self.model = model
        self.runner = runner
        self.spec = spec
        self.params = dict(params or {})

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        return self.ask(texts)[0]

    def ask(self, texts: Sequence[str], case_id: str = "") -> tuple[list[list[float]], Response]:
        """Embed ``texts`` for case ``case_id``: one vector per text, and the response (its token usage too).
        A failure is a ModelError that names the model and the case."""
        messages = [{"role": "user", "content": text} for text in texts]
        where = f"{self.spec}" + (f" on case {case_id}" if case_id else "")
        request = ModelRequest(prompt=messages, params=self.params, case_id=case_id)
        try:
            response = self.runner.call(self.model, request)
        except ModelError as exc:  # a store's message may name the case already: once is enough
            raise ModelError(f"{where}: {str(exc).removeprefix(f'case {case_id}: ')}") from exc
        vectors = decode(response.text)
        if not isinstance(vectors, list) or len(vectors) != len(texts):
            count = len(vectors) if isinstance(vectors, list) else 0
            raise ModelError(f"{where}: {count} embeddings for {len(texts)} texts")
        return vectors, response


class EmbeddingSimilar(Check):
    """``similar:METRIC``: the output's embedding is within ``threshold`` (default 0.75) of one of ``value``:
    a similarity at least it (cosine, dot), or a distance at most it (euclidean)."""

    def __init__(self, metric: str, expected: list[str], threshold: float) -> None:
        self.metric = metric
        self.expected = expected
        self.threshold = threshold

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        distance = self.metric == "euclidean"
        target = shorten(self.expected[0]) if len(self.expected) == 1 else f"one of {len(self.expected)} texts"
        expected = f"{'distance <=' if distance else 'similarity >='} {self.threshold:g} ({self.metric}) to {target}"
        if ctx.embed is None:
            return Verdict(
                False,
                expected,
                "no embedding model: add [models.embedding] to the suite config, a model that embeds texts "
                "(a plugin's, through pytest_promptsuite_make_model; spec = 'fake' embeds words offline)",
            )
        texts = [json_text(value), *self.expected]
        details = None
        try:
            vectors, details = _vectors(ctx.embed, texts, ctx.case.case_id)
            scores = [_score(self.metric, vectors[0], v) for v in vectors[1:]]
        except (ModelError, ValueError, IndexError, TypeError) as exc:
            return Verdict(False, expected, f"the embedding model failed: {exc}", details=details)
        best = min(scores) if distance else max(scores)
        passed = best <= self.threshold + _EPSILON if distance else best >= self.threshold - _EPSILON
        score = 1 / (1 + best) if distance else best
        found = f"{'distance' if distance else 'similarity'} {best:.2f}"
        return Verdict(passed, expected, found, score=score, details=details)


def _vectors(embed: Embed, texts: list[str], case_id: str) -> tuple[Sequence[Sequence[float]], dict[str, Any] | None]:
    """Embed the texts; return the vectors and, from an embedding model, its token usage (recorded beside the
    check)."""
    if not isinstance(embed, ModelEmbedder):
        return embed(texts), None
    vectors, response = embed.ask(texts, case_id)
    return vectors, {"embedding_usage": response.usage.to_dict()} if response.usage is not None else None


def make_similar(p: Params) -> Check:
    """Make ``similar:cosine``, ``similar:dot`` or ``similar:euclidean``: ``value`` a text or a list of
    texts, ``threshold`` (default 0.75)."""
    expected = p.strings("value", required=True)
    threshold = p.number("threshold", what="a number")
    assert expected is not None
    return EmbeddingSimilar(p.name.partition(":")[2], expected, 0.75 if threshold is None else threshold)
