"""The agreement statistics against independent computations: scikit-learn's ``cohen_kappa_score``, a bootstrap
written here, the ``krippendorff`` package; on seeded label sets and the degenerate ones."""

from __future__ import annotations

import math
import random
import warnings

import numpy as np
import pytest

from pytest_promptsuite.results.agreement import RESAMPLES
from pytest_promptsuite.results.agreement import SEED
from pytest_promptsuite.results.agreement import Agreement
from pytest_promptsuite.results.agreement import cohen_kappa
from pytest_promptsuite.results.agreement import flip_rate
from pytest_promptsuite.results.agreement import kappa_interval
from pytest_promptsuite.results.agreement import krippendorff_alpha


krippendorff = pytest.importorskip("krippendorff")
metrics = pytest.importorskip("sklearn.metrics")


def _sklearn_kappa(labels: list[bool], verdicts: list[bool]) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(metrics.cohen_kappa_score(labels, verdicts, labels=[False, True]))


def _seeded(seed: int, n: int, agree: float, base: float = 0.5) -> tuple[list[bool], list[bool]]:
    rng = random.Random(seed)
    labels = [rng.random() < base for _ in range(n)]
    verdicts = [label if rng.random() < agree else not label for label in labels]
    return labels, verdicts


#: Seeded label sets and the degenerate ones: all labels one class, the judge always one verdict, n < 5.
SETS = [
    _seeded(1, 50, 0.9),
    _seeded(2, 40, 0.6),
    _seeded(3, 200, 0.75, base=0.2),
    _seeded(4, 3, 0.7),
    ([True] * 10, [True] * 7 + [False] * 3),  # every label pass
    ([False] * 6, [False] * 6),  # every label fail, the judge agrees: undefined
    ([True, False, True, True, False, False], [True] * 6),  # the judge always passes
    ([True, False], [False, True]),
    ([True], [True]),
    ([True, False, True, False], [True, False, True, False]),
]


@pytest.mark.parametrize(("labels", "verdicts"), SETS)
def test_kappa_is_sklearns(labels: list[bool], verdicts: list[bool]) -> None:
    expected = _sklearn_kappa(labels, verdicts)
    got = cohen_kappa(labels, verdicts)
    if math.isnan(expected):
        assert got is None
    else:
        assert got == pytest.approx(expected, abs=1e-12)


def _plain_kappa(labels: list[bool], verdicts: list[bool]) -> float:
    """Cohen's kappa from its definition, in plain Python (NaN when chance agreement is 1)."""
    n = len(labels)
    observed = sum(1 for a, b in zip(labels, verdicts, strict=True) if a == b) / n
    p_label, p_verdict = sum(labels) / n, sum(verdicts) / n
    chance = p_label * p_verdict + (1 - p_label) * (1 - p_verdict)
    return math.nan if abs(1 - chance) < 1e-12 else (observed - chance) / (1 - chance)


@pytest.mark.parametrize(("labels", "verdicts"), SETS)
def test_plain_kappa_is_sklearns(labels: list[bool], verdicts: list[bool]) -> None:
    expected, plain = _sklearn_kappa(labels, verdicts), _plain_kappa(labels, verdicts)
    assert math.isnan(expected) == math.isnan(plain)
    assert math.isnan(plain) or plain == pytest.approx(expected, abs=1e-12)


def _bootstrap(labels: list[bool], verdicts: list[bool]) -> tuple[float | None, float | None]:
    """The documented bootstrap, draw by draw: the same draws, undefined draws left out, numpy's percentile."""
    n = len(labels)
    draws = np.random.default_rng(SEED).integers(0, n, size=(RESAMPLES, n)).tolist()
    kappas = [_plain_kappa([labels[i] for i in row], [verdicts[i] for i in row]) for row in draws]
    defined = [k for k in kappas if not math.isnan(k)]
    if not defined:
        return None, None
    return float(np.percentile(defined, 2.5)), float(np.percentile(defined, 97.5))


@pytest.mark.parametrize(("labels", "verdicts"), SETS)
def test_interval_is_the_bootstrap_written_here(labels: list[bool], verdicts: list[bool]) -> None:
    low, high = kappa_interval(labels, verdicts)
    want_low, want_high = _bootstrap(labels, verdicts)
    if want_low is None:
        assert (low, high) == (None, None)
        return
    assert low == pytest.approx(want_low, abs=1e-9)
    assert high == pytest.approx(want_high, abs=1e-9)
    kappa = cohen_kappa(labels, verdicts)
    assert kappa is None or low - 1e-9 <= kappa <= high + 1e-9 or len(labels) < 5


def test_interval_of_no_labels() -> None:
    assert kappa_interval([], []) == (None, None)


def test_the_interval_narrows_with_more_labels() -> None:
    small = kappa_interval(*_seeded(7, 30, 0.85))
    large = kappa_interval(*_seeded(7, 600, 0.85))
    assert small[0] is not None and small[1] is not None and large[0] is not None and large[1] is not None
    assert large[1] - large[0] < (small[1] - small[0]) / 2


@pytest.mark.parametrize(("labels", "verdicts"), SETS)
def test_rates_and_confusion_are_sklearns(labels: list[bool], verdicts: list[bool]) -> None:
    figures = Agreement.of(labels, verdicts)
    matrix = metrics.confusion_matrix(labels, verdicts, labels=[True, False])
    assert [[figures.both_pass, figures.missed], [figures.false_pass, figures.both_fail]] == matrix.tolist()
    assert figures.accuracy == pytest.approx(metrics.accuracy_score(labels, verdicts))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        recall = metrics.recall_score(labels, verdicts, pos_label=True, zero_division=np.nan)
        specificity = metrics.recall_score(labels, verdicts, pos_label=False, zero_division=np.nan)
    assert (figures.true_pass_rate is None) == math.isnan(recall)
    assert figures.true_pass_rate is None or figures.true_pass_rate == pytest.approx(recall)
    assert (figures.true_fail_rate is None) == math.isnan(specificity)
    assert figures.true_fail_rate is None or figures.true_fail_rate == pytest.approx(specificity)
    assert figures.base_rate == pytest.approx(sum(labels) / len(labels))
    assert figures.judge_pass_rate == pytest.approx(sum(verdicts) / len(verdicts))
    assert figures.to_dict()["confusion"]["label_fail_judge_pass"] == figures.false_pass


def _units(seed: int, count: int, raters: int, agree: float) -> list[list[bool]]:
    rng = random.Random(seed)
    units = []
    for _ in range(count):
        truth = rng.random() < 0.5
        size = rng.randint(1, raters)
        units.append([truth if rng.random() < agree else not truth for _ in range(size)])
    return units


UNITS = [
    _units(1, 40, 3, 0.9),
    _units(2, 25, 4, 0.6),
    _units(3, 4, 2, 0.8),
    [[True, True], [False, False], [True, False]],
    [[True, False], [True, True, False]],
]


@pytest.mark.parametrize("units", UNITS)
def test_alpha_is_krippendorffs(units: list[list[bool]]) -> None:
    raters = max(len(u) for u in units)
    data = [[float(u[r]) if r < len(u) else np.nan for u in units] for r in range(raters)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its 0 / 0 where alpha is undefined
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    got = krippendorff_alpha(units)
    assert got is None if math.isnan(expected) else got == pytest.approx(expected, abs=1e-12)


def test_alpha_undefined() -> None:
    assert krippendorff_alpha([[True, True], [True, True, True]]) is None  # one value only
    assert krippendorff_alpha([[True], [False]]) is None  # no output has two labels


def test_flip_rate() -> None:
    assert flip_rate([[True, True, True], [True, False, True], [False], [False, False]]) == pytest.approx(1 / 3)
    assert flip_rate([[True], [False]]) is None
