"""Retrievers: which train rows become a test row's in-context examples (Zero, FixK and Random as
OpenCompass picks them; BM25 and Topk most similar first), and the ICE value built from them."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import Protocol

from pytest_promptsuite.dialects.opencompass.prompt_list import Intermediate
from pytest_promptsuite.dialects.opencompass.prompt_list import PromptList
from pytest_promptsuite.dialects.opencompass.template import PromptTemplate
from pytest_promptsuite.errors import TemplateError


Row = Mapping[str, Any]
#: Texts in, one vector per text out.
Embedding = Callable[[Sequence[str]], Sequence[Sequence[float]]]


def row_text(row: Row, output_column: str | None = None) -> str:
    """Return the text a similarity retriever compares: every field but the answer, in row order."""
    return " ".join(str(v) for k, v in row.items() if k != output_column)


class Retriever:
    """Chooses train-row indices for test rows; carries the separator and eos of the ICE."""

    default_separator = "\n"
    default_eos = "\n"

    def __init__(self, *, ice_separator: Any = None, ice_eos_token: Any = None) -> None:
        for key, value in (("ice_separator", ice_separator), ("ice_eos_token", ice_eos_token)):
            if value is not None and not isinstance(value, str):
                raise TemplateError(f"retriever.{key} must be a string, got {value!r}")
        self.ice_separator: str = self.default_separator if ice_separator is None else ice_separator
        self.ice_eos_token: str = self.default_eos if ice_eos_token is None else ice_eos_token

    def retrieve(
        self, train: Sequence[Row], tests: Sequence[Row], *, output_column: str | None = None
    ) -> list[list[int]]:
        """Return one list of train indices per test row, in test-row order."""
        raise NotImplementedError


class ZeroRetriever(Retriever):
    """No examples (0-shot)."""

    default_separator = ""
    default_eos = ""

    def retrieve(
        self, train: Sequence[Row], tests: Sequence[Row], *, output_column: str | None = None
    ) -> list[list[int]]:
        return [[] for _ in tests]


class FixKRetriever(Retriever):
    """The same rows, ``fix_id_list`` in order (repeats allowed), for every test row."""

    def __init__(self, fix_id_list: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(fix_id_list, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in fix_id_list
        ):
            raise TemplateError(f"retriever.fix_id_list must be an array of integers, got {fix_id_list!r}")
        self.fix_id_list: list[int] = list(fix_id_list)

    def retrieve(
        self, train: Sequence[Row], tests: Sequence[Row], *, output_column: str | None = None
    ) -> list[list[int]]:
        for i in self.fix_id_list:
            if not 0 <= i < len(train):
                raise TemplateError(
                    f"retriever.fix_id_list: index {i} is out of range: there are {len(train)} "
                    "train rows (ice_examples)"
                )
        return [list(self.fix_id_list) for _ in tests]


def _ice_num(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TemplateError(f"retriever.ice_num must be a non-negative integer, got {value!r}")
    return value


def _fits(ice_num: int, train: Sequence[Row]) -> None:
    if ice_num > len(train):
        raise TemplateError(f"retriever.ice_num = {ice_num} is larger than the {len(train)} train rows")


class RandomRetriever(Retriever):
    """``ice_num`` distinct rows per test row, drawn as the reference does (numpy legacy MT19937)."""

    def __init__(self, ice_num: Any = 1, seed: Any = 43, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for key, value in (("ice_num", ice_num), ("seed", seed)):
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**32:
                raise TemplateError(f"retriever.{key} must be an integer from 0 to 2**32 - 1, got {value!r}")
        self.ice_num: int = ice_num
        self.seed: int = seed

    def retrieve(
        self, train: Sequence[Row], tests: Sequence[Row], *, output_column: str | None = None
    ) -> list[list[int]]:
        _fits(self.ice_num, train)
        import numpy as np  # the reference's exact stream (legacy MT19937); numpy comes with pandas

        rng = np.random.RandomState(self.seed)
        return [[int(i) for i in rng.choice(len(train), self.ice_num, replace=False)] for _ in tests]


_TOKEN = re.compile(r"\w+", re.UNICODE)


def tokenize(text: str) -> list[str]:
    """Split ``text`` into lower-cased word tokens, each CJK character a token (CJK has no spaces)."""
    tokens: list[str] = []
    for word in _TOKEN.findall(text.lower()):
        if any("\u4e00" <= ch <= "\u9fff" for ch in word):
            tokens.extend(word)
        else:
            tokens.append(word)
    return tokens


def tfidf_embedding(corpus: Sequence[str]) -> Embedding:
    """Fit an embedding on ``corpus``: TF-IDF vectors with smooth idf, as scikit-learn's."""
    docs = [Counter(tokenize(t)) for t in corpus]
    df: Counter[str] = Counter()
    for doc in docs:
        df.update(doc.keys())
    n = len(docs)
    vocab = {term: i for i, term in enumerate(sorted(df))}
    idf = {term: math.log((1 + n) / (1 + df[term])) + 1 for term in df}

    def embed(texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            vec = [0.0] * len(vocab)
            for term, count in Counter(tokenize(text)).items():
                if term in vocab:
                    vec[vocab[term]] = count * idf[term]
            out.append(vec)
        return out

    return embed


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(x * x for x in b))
    if na == 0 or nb == 0:
        return 0.0
    return sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb)


class TopkRetriever(Retriever):
    """The ``ice_num`` train rows most similar to the test row (cosine), most similar first.

    ``embedding`` maps texts to vectors; by default ``embedding_factory(train_texts)`` fits TF-IDF
    on the train rows. Ties keep train order (faiss's inner-product search does the same).
    """

    def __init__(
        self,
        ice_num: Any = 1,
        *,
        embedding: Embedding | None = None,
        embedding_factory: Callable[[Sequence[str]], Embedding] = tfidf_embedding,
        text_of: Callable[[Row, str | None], str] = row_text,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.ice_num = _ice_num(ice_num)
        self.embedding = embedding
        self.embedding_factory = embedding_factory
        self.text_of = text_of

    def retrieve(
        self, train: Sequence[Row], tests: Sequence[Row], *, output_column: str | None = None
    ) -> list[list[int]]:
        _fits(self.ice_num, train)
        train_texts = [self.text_of(r, output_column) for r in train]
        embed = self.embedding or self.embedding_factory(train_texts)
        train_vecs = list(embed(train_texts))
        test_vecs = list(embed([self.text_of(r, output_column) for r in tests]))
        out = []
        for vec in test_vecs:
            scores = [_cosine(vec, t) for t in train_vecs]
            order = sorted(range(len(train)), key=lambda i: (-scores[i], i))
            out.append(order[: self.ice_num])
        return out


class BM25Retriever(Retriever):
    """The ``ice_num`` train rows with the highest Okapi BM25 score (k1 1.5, b 0.75, as rank_bm25).

    Ties come out as the reference's ``argsort(scores)[::-1]`` gives them: the later row first.
    """

    def __init__(
        self,
        ice_num: Any = 1,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
        text_of: Callable[[Row, str | None], str] = row_text,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.ice_num = _ice_num(ice_num)
        self.k1, self.b, self.epsilon = k1, b, epsilon
        self.text_of = text_of

    def scores(self, corpus: Sequence[list[str]], query: list[str]) -> list[float]:
        """Score ``query`` against each tokenised document of ``corpus`` (BM25Okapi)."""
        n = len(corpus)
        avgdl = sum(len(d) for d in corpus) / n if n else 0.0
        df: Counter[str] = Counter()
        for doc in corpus:
            df.update(set(doc))
        idf: dict[str, float] = {}
        for term, freq in df.items():
            idf[term] = math.log(n - freq + 0.5) - math.log(freq + 0.5)
        average = sum(idf.values()) / len(idf) if idf else 0.0
        eps = self.epsilon * average
        idf = {t: (eps if v < 0 else v) for t, v in idf.items()}
        out = []
        for doc in corpus:
            tf = Counter(doc)
            score = 0.0
            for term in query:
                f = tf.get(term, 0)
                denom = f + self.k1 * (1 - self.b + self.b * len(doc) / (avgdl or 1))
                score += idf.get(term, 0.0) * (f * (self.k1 + 1) / denom)
            out.append(score)
        return out

    def retrieve(
        self, train: Sequence[Row], tests: Sequence[Row], *, output_column: str | None = None
    ) -> list[list[int]]:
        _fits(self.ice_num, train)
        corpus = [tokenize(self.text_of(r, output_column)) for r in train]
        out = []
        for row in tests:
            scores = self.scores(corpus, tokenize(self.text_of(row, output_column)))
            order = sorted(range(len(train)), key=lambda i: (-scores[i], -i))
            out.append(order[: self.ice_num])
        return out


#: Retriever types by name, and the keys each accepts besides ``type``.
RETRIEVERS: dict[str, tuple[type[Retriever], frozenset[str]]] = {
    "ZeroRetriever": (ZeroRetriever, frozenset({"ice_separator", "ice_eos_token"})),
    "FixKRetriever": (FixKRetriever, frozenset({"fix_id_list", "ice_separator", "ice_eos_token"})),
    "RandomRetriever": (RandomRetriever, frozenset({"ice_num", "seed", "ice_separator", "ice_eos_token"})),
    "BM25Retriever": (BM25Retriever, frozenset({"ice_num", "ice_separator", "ice_eos_token"})),
    "TopkRetriever": (TopkRetriever, frozenset({"ice_num", "embedding", "ice_separator", "ice_eos_token"})),
}


def import_embedding(spec: Any, *, key: str = "retriever.embedding") -> Embedding:
    """Import the embedding function named ``"module:function"`` (texts in, one vector per text out)."""
    import importlib

    if callable(spec):
        return spec  # type: ignore[no-any-return]
    if not isinstance(spec, str) or ":" not in spec:
        raise TemplateError(f"{key} must be 'module:function', got {spec!r}")
    module, _, attr = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]
    except (ImportError, AttributeError) as exc:
        raise TemplateError(f"{key} = {spec!r} cannot be imported: {exc}") from exc


def make_retriever(spec: Any, *, key: str = "retriever", allowed: Sequence[str] | None = None) -> Retriever:
    """Make a retriever from its config object ``{"type": ..., ...}``; errors name the key."""
    if spec is None:
        return ZeroRetriever()
    if not isinstance(spec, Mapping):
        raise TemplateError(f"{key} must be an object with a 'type', got {spec!r}")
    kind = spec.get("type", "ZeroRetriever")
    names = list(allowed) if allowed is not None else list(RETRIEVERS)
    if not isinstance(kind, str) or kind not in names:
        raise TemplateError(f"{key}.type: unknown retriever {kind!r} (known: {', '.join(names)})")
    cls, keys = RETRIEVERS[kind]
    _check_keys(spec, kind, keys, key)
    kwargs = {k: v for k, v in spec.items() if k != "type"}
    if kind == "TopkRetriever" and kwargs.get("embedding") is not None:
        kwargs["embedding"] = import_embedding(kwargs["embedding"], key=f"{key}.embedding")
    return cls(**kwargs)


def _check_keys(spec: Mapping[str, Any], kind: str, keys: frozenset[str], key: str) -> None:
    unknown = [k for k in spec if k != "type" and k not in keys]
    if unknown:
        raise TemplateError(f"{key}: unknown key {unknown[0]!r} for {kind} (it takes: {', '.join(sorted(keys))})")
    if kind == "FixKRetriever" and "fix_id_list" not in spec:
        raise TemplateError(f"{key}: FixKRetriever needs 'fix_id_list'")


def builtin_retriever(name: Any, params: Mapping[str, Any]) -> Retriever | None:
    """Make our retriever ``name`` with ``params`` (None for a name not ours): the built-in answer of
    ``pytest_promptsuite_make_retriever``."""
    if not isinstance(name, str) or name not in RETRIEVERS:
        return None
    return make_retriever({"type": name, **params})


class MakeRetriever(Protocol):
    """``make(name=..., params=...) -> Retriever | None``: the ``pytest_promptsuite_make_retriever``
    hook, or :func:`builtin_retriever`."""

    def __call__(self, *, name: Any, params: dict[str, Any]) -> Retriever | None:
        """Make the retriever ``name`` with ``params``, or return None for an unknown name."""


def build_ice(
    indices: Sequence[int],
    train: Sequence[Row],
    ice_template: PromptTemplate | None,
    *,
    output_column: str | None,
    separator: str,
    eos: str,
) -> Intermediate:
    """Build the ICE value: the rendered rows joined with ``separator``, then ``eos``."""
    if not indices:
        if ice_template is not None and ice_template.is_dialogue:
            return ""
        return eos
    if ice_template is None:
        raise TemplateError("the retriever chose in-context examples but there is no ice_template")
    if output_column is None:
        raise TemplateError("in-context examples need output_column (the answer field that labels each example)")
    items = [_ice_item(ice_template, train, i, output_column) for i in indices]
    if ice_template.is_dialogue or isinstance(items[0], list):
        return _ice_list(items, separator, eos)
    return separator.join(str(x) for x in items) + eos


def _ice_item(ice_template: PromptTemplate, train: Sequence[Row], i: int, output_column: str) -> Intermediate:
    """Render train row ``i`` as an in-context example, labelled by its ``output_column``."""
    row = train[i]
    if not isinstance(row, Mapping):
        raise TemplateError(f"ice_examples[{i}] must be an object, got {type(row).__name__}")
    if output_column not in row:
        raise TemplateError(f"ice_examples[{i}] has no field {output_column!r} (the output_column)")
    return ice_template.ice_item(row, row[output_column])


def _ice_list(items: list[Intermediate], separator: str, eos: str) -> PromptList:
    """Join dialogue examples into one PromptList: ``ice + ice_separator`` for each (as OpenCompass), then eos."""
    out = PromptList()
    for item in items:
        if isinstance(item, list):
            out.extend(item)
        elif item:
            out.append(item)
        if separator:
            out.append(separator)
    out.append(eos)
    return out
