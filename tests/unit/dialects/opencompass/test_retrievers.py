"""SPEC §6.1 retrievers: Zero, FixK, Random (reference indices, D10), BM25 and Topk, and the retriever a spec
names."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from pytest_promptsuite.dialects.opencompass.render_request import render_request
from pytest_promptsuite.dialects.opencompass.retrievers import BM25Retriever
from pytest_promptsuite.dialects.opencompass.retrievers import FixKRetriever
from pytest_promptsuite.dialects.opencompass.retrievers import RandomRetriever
from pytest_promptsuite.dialects.opencompass.retrievers import Retriever
from pytest_promptsuite.dialects.opencompass.retrievers import TopkRetriever
from pytest_promptsuite.dialects.opencompass.retrievers import ZeroRetriever
from pytest_promptsuite.dialects.opencompass.retrievers import builtin_retriever
from pytest_promptsuite.dialects.opencompass.retrievers import make_retriever
from pytest_promptsuite.errors import TemplateError


def rows(n: int) -> list[dict[str, str]]:
    return [{"question": f"q{i}", "answer": str(i)} for i in range(n)]


def test_zero_retriever() -> None:
    retriever = ZeroRetriever()
    assert retriever.retrieve(rows(3), [{}], output_column="answer") == [[]]
    assert (retriever.ice_separator, retriever.ice_eos_token) == ("", "")


def test_fixk_keeps_order_and_repeats() -> None:
    retriever = FixKRetriever([2, 0, 2])
    assert retriever.retrieve(rows(3), [{}, {}]) == [[2, 0, 2], [2, 0, 2]]
    assert (retriever.ice_separator, retriever.ice_eos_token) == ("\n", "\n")


@pytest.mark.parametrize("index", [3, -1])
def test_fixk_index_out_of_range_is_named(index: int) -> None:
    with pytest.raises(TemplateError, match=f"index {index}"):
        FixKRetriever([0, index]).retrieve(rows(3), [{}])


@pytest.mark.parametrize(
    ("seed", "n", "k", "expected"), [(43, 6, 3, [5, 2, 1]), (43, 8, 3, [3, 7, 5]), (7, 8, 2, [2, 5])]
)
def test_d10_random_reproduces_the_reference_indices(seed: int, n: int, k: int, expected: list[int]) -> None:
    assert RandomRetriever(ice_num=k, seed=seed).retrieve(rows(n), [{}])[0] == expected


def test_random_draws_once_per_test_row_in_order() -> None:
    import numpy as np

    rng = np.random.RandomState(43)
    expected = [[int(i) for i in rng.choice(8, 2, replace=False)] for _ in range(3)]
    assert RandomRetriever(ice_num=2).retrieve(rows(8), [{}, {}, {}]) == expected
    assert expected[0] != expected[1] or expected[1] != expected[2]


def test_random_does_not_touch_the_global_numpy_state() -> None:
    import numpy as np

    np.random.seed(1)
    before = np.random.get_state()[1].copy()
    RandomRetriever(ice_num=2).retrieve(rows(5), [{}])
    assert (np.random.get_state()[1] == before).all()


def test_random_ice_num_larger_than_train_is_named() -> None:
    with pytest.raises(TemplateError, match="ice_num"):
        RandomRetriever(ice_num=4).retrieve(rows(3), [{}])


def test_bm25_most_similar_first() -> None:
    train = [
        {"question": "the cat sat on the mat", "answer": "a"},
        {"question": "dogs chase cats in the park", "answer": "b"},
        {"question": "stock markets fell sharply today", "answer": "c"},
        {"question": "a cat and a dog", "answer": "d"},
    ]
    test = [
        {"question": "who sat on the mat", "answer": "?"},
        {"question": "why did stock markets fall", "answer": "?"},
    ]
    got = BM25Retriever(ice_num=2).retrieve(train, test, output_column="answer")
    assert got[0][0] == 0
    assert got[1][0] == 2


def test_bm25_ties_come_out_later_row_first_as_reference_argsort() -> None:
    train = [{"q": "alpha"}, {"q": "beta"}, {"q": "gamma"}]
    assert BM25Retriever(ice_num=3).retrieve(train, [{"q": "delta"}]) == [[2, 1, 0]]


def test_bm25_scores_match_rank_bm25_formula() -> None:
    retriever = BM25Retriever()
    corpus = [["a", "b"], ["b", "c"], ["c", "d"]]
    scores = retriever.scores(corpus, ["d"])
    # idf(d) = ln(3 - 1 + .5) - ln(1 + .5); tf 1, |doc| = avgdl: 2.5 / (1 + 1.5)
    import math

    assert scores[2] == pytest.approx((math.log(2.5) - math.log(1.5)) * 2.5 / 2.5)
    assert scores[0] == scores[1] == 0


def test_topk_tfidf_cosine_most_similar_first() -> None:
    train = [
        {"question": "translate hello into french"},
        {"question": "add two and three"},
        {"question": "add five and seven please"},
    ]
    got = TopkRetriever(ice_num=3).retrieve(train, [{"question": "please add one and nine"}])
    assert got[0][0] == 2
    assert got[0][1] == 1
    assert got[0][2] == 0


def test_topk_embedding_is_pluggable() -> None:
    def embed(texts: Sequence[str]) -> list[list[float]]:
        return [[float(len(t)), 1.0] for t in texts]

    train = [{"q": "x" * 1}, {"q": "x" * 10}, {"q": "x" * 100}]
    got = TopkRetriever(ice_num=1, embedding=embed).retrieve(train, [{"q": "x" * 90}])
    assert got == [[2]]


def test_make_retriever_validates_keys() -> None:
    with pytest.raises(TemplateError, match="'bogus'"):
        make_retriever({"type": "ZeroRetriever", "bogus": 1})
    with pytest.raises(TemplateError, match="fix_id_list"):
        make_retriever({"type": "FixKRetriever"})
    with pytest.raises(TemplateError, match="'Nope'"):
        make_retriever({"type": "Nope"})
    assert isinstance(make_retriever({"type": "BM25Retriever", "ice_num": 2}), BM25Retriever)
    with pytest.raises(TemplateError, match="BM25Retriever"):
        make_retriever({"type": "BM25Retriever"}, allowed=["ZeroRetriever"])


def length_embedding(texts: Sequence[str]) -> list[list[float]]:
    """A toy embedding for the import-path test: (length, 1)."""
    return [[float(len(t)), 1.0] for t in texts]


def test_topk_embedding_by_import_path() -> None:
    retriever = make_retriever({"type": "TopkRetriever", "ice_num": 1, "embedding": f"{__name__}:length_embedding"})
    assert isinstance(retriever, TopkRetriever)
    assert retriever.retrieve([{"q": "x"}, {"q": "x" * 50}], [{"q": "x" * 60}]) == [[1]]
    with pytest.raises(TemplateError, match="embedding"):
        make_retriever({"type": "TopkRetriever", "embedding": "no_such_module_xyz:f"})


class TestBuiltinRetriever:
    def test_names(self) -> None:
        assert isinstance(builtin_retriever("ZeroRetriever", {}), ZeroRetriever)
        fixk = builtin_retriever("FixKRetriever", {"fix_id_list": [1]})
        assert isinstance(fixk, FixKRetriever)
        assert builtin_retriever("LastKRetriever", {}) is None
        assert builtin_retriever(["not", "a", "name"], {}) is None

    def test_bad_params_are_template_errors(self) -> None:
        with pytest.raises(TemplateError, match="retriever: FixKRetriever needs 'fix_id_list'"):
            builtin_retriever("FixKRetriever", {})
        with pytest.raises(TemplateError, match="retriever: unknown key 'k' for ZeroRetriever"):
            builtin_retriever("ZeroRetriever", {"k": 1})

    def test_render_request_asks_the_lookup_it_is_given(self) -> None:
        class Last(Retriever):
            def retrieve(self, train: Any, tests: Any, *, output_column: str | None = None) -> list[list[int]]:
                return [[len(train) - 1] for _ in tests]

        asked: list[tuple[str, dict[str, Any]]] = []

        def make(*, name: str, params: dict[str, Any]) -> Retriever | None:
            asked.append((name, params))
            return Last() if name == "FixKRetriever" else None

        request = {
            "prompt_template": {"template": "</E>Q: {q}", "ice_token": "</E>"},
            "ice_template": {"template": "{q}={a} "},
            "retriever": {"type": "FixKRetriever", "fix_id_list": [0]},
            "ice_examples": [{"q": "1", "a": "one"}, {"q": "2", "a": "two"}],
            "example": {"q": "3"},
            "output_column": "a",
        }
        assert render_request(request, make_retriever=make)["retrieved"] == [1]
        assert asked == [("FixKRetriever", {"fix_id_list": [0]})]
        with pytest.raises(TemplateError, match=r"retriever.type: unknown retriever 'ZeroRetriever' \(known: "):
            render_request({**request, "retriever": None}, make_retriever=make)
