"""Stage tests for ``checks.embedding``: ``similar`` by the embeddings of a model, as promptfoo does it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.checks.support import result_of


@pytest.mark.parametrize(
    ("entry", "output", "passes", "words"),
    [
        ({"type": "similar:cosine", "value": "refund issued today"}, "Your refund was issued today", True, "0.77"),
        ({"type": "similar:cosine", "value": ["no", "refund issued"], "threshold": 0.9}, "refund issued", True, "1.00"),
        ({"type": "similar:cosine", "value": "refund issued"}, "the weather is nice", False, "similarity 0.00"),
        ({"type": "not-similar:cosine", "value": "refund issued"}, "the weather is nice", True, "0.00"),
        ({"type": "similar:dot", "value": "a b", "threshold": 2}, "a b c", True, "similarity 2.00"),
        ({"type": "similar:euclidean", "value": "a b", "threshold": 0.75}, "a b c", False, "distance 1.00"),
        ({"type": "similar:euclidean", "value": "a b", "threshold": 1}, "a b c", True, "distance 1.00"),
    ],
)
def test_similar_by_embeddings_as_promptfoo(entry: dict[str, Any], output: str, passes: bool, words: str) -> None:
    # promptfoo's similar (= similar:cosine), default threshold 0.75; here on the fake model's word embedding
    from pytest_promptsuite.models.fake import FakeModel

    result = result_of(entry, output, embed=FakeModel().embed)
    assert (result.passed, words in result.message) == (passes, True), result.message


def test_similar_without_an_embedding_model_says_how_to_add_one() -> None:
    result = result_of({"type": "similar:cosine", "value": "refund"}, "refund")
    assert not result.passed and "no embedding model: add [models.embedding] to the suite config" in result.message
