"""How far a judge agrees with people: rates, the confusion matrix, Cohen's kappa with its seeded bootstrap
interval, the labellers' Krippendorff's alpha and the judge's flip rate (docs/explanation/statistics.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


#: Bootstrap resamples of the kappa interval, and the seed of numpy's ``default_rng`` that draws them.
RESAMPLES = 2000
SEED = 0
#: What the interval is, as ``calibration.json`` records it.
INTERVAL = "95 % percentile bootstrap over labels (2,000 resamples, numpy default_rng(0))"


def cohen_kappa(labels: Sequence[bool], verdicts: Sequence[bool]) -> float | None:
    """Return Cohen's kappa of two pass/fail raters; None when it is undefined (both always give one and the
    same verdict, so chance agreement is 1)."""
    kappas = _kappas(np.asarray(labels, dtype=bool)[None, :], np.asarray(verdicts, dtype=bool)[None, :])
    value = float(kappas[0])
    return None if np.isnan(value) else value


def _kappas(labels: Any, verdicts: Any) -> Any:
    """Return the kappa of each row of two boolean matrices (NaN where it is undefined)."""
    observed = (labels == verdicts).mean(axis=1)
    p_label, p_verdict = labels.mean(axis=1), verdicts.mean(axis=1)
    chance = p_label * p_verdict + (1 - p_label) * (1 - p_verdict)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = (observed - chance) / (1 - chance)
    return np.where(np.isclose(chance, 1.0), np.nan, kappa)


def kappa_interval(
    labels: Sequence[bool], verdicts: Sequence[bool], *, resamples: int = RESAMPLES, seed: int = SEED
) -> tuple[float | None, float | None]:
    """Return the 95 % percentile bootstrap interval of kappa: ``resamples`` draws of the labels with
    replacement (``default_rng(seed).integers(0, n, (resamples, n))``); a draw whose kappa is undefined is
    left out; None, None when no draw has one."""
    n = len(labels)
    if n == 0:
        return None, None
    draws = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    kappas = _kappas(np.asarray(labels, dtype=bool)[draws], np.asarray(verdicts, dtype=bool)[draws])
    defined = kappas[~np.isnan(kappas)]
    if defined.size == 0:
        return None, None
    low, high = np.percentile(defined, [2.5, 97.5])
    return float(low), float(high)


def _share(count: int, total: int) -> float | None:
    return count / total if total else None


@dataclass(frozen=True)
class Agreement:
    """A judge's verdicts against people's labels on the same outputs (``passed`` is the positive class)."""

    n: int
    #: Counts by (label, verdict): both pass, label pass and judge fail, label fail and judge pass, both fail.
    both_pass: int
    missed: int
    false_pass: int
    both_fail: int
    kappa: float | None
    kappa_low: float | None
    kappa_high: float | None

    @classmethod
    def of(cls, labels: Sequence[bool], verdicts: Sequence[bool]) -> Agreement:
        """Compare ``verdicts`` with ``labels``, pair by pair."""
        pairs = Counter((bool(label), bool(verdict)) for label, verdict in zip(labels, verdicts, strict=True))
        low, high = kappa_interval(labels, verdicts)
        return cls(
            n=pairs.total(),
            both_pass=pairs[True, True],
            missed=pairs[True, False],
            false_pass=pairs[False, True],
            both_fail=pairs[False, False],
            kappa=cohen_kappa(labels, verdicts),
            kappa_low=low,
            kappa_high=high,
        )

    @property
    def base_rate(self) -> float | None:
        """The share of labels that say pass."""
        return _share(self.both_pass + self.missed, self.n)

    @property
    def judge_pass_rate(self) -> float | None:
        """The share of the judge's verdicts that say pass."""
        return _share(self.both_pass + self.false_pass, self.n)

    @property
    def accuracy(self) -> float | None:
        """The share of verdicts equal to their label."""
        return _share(self.both_pass + self.both_fail, self.n)

    @property
    def true_pass_rate(self) -> float | None:
        """Of the outputs people passed, the share the judge passed (sensitivity); None without any."""
        return _share(self.both_pass, self.both_pass + self.missed)

    @property
    def true_fail_rate(self) -> float | None:
        """Of the outputs people failed, the share the judge failed (specificity); None without any."""
        return _share(self.both_fail, self.both_fail + self.false_pass)

    def to_dict(self) -> dict[str, Any]:
        """Return the figures as ``calibration.json`` records them."""
        return {
            "n": self.n,
            "base_rate": self.base_rate,
            "judge_pass_rate": self.judge_pass_rate,
            "accuracy": self.accuracy,
            "true_pass_rate": self.true_pass_rate,
            "true_fail_rate": self.true_fail_rate,
            "kappa": self.kappa,
            "kappa_low": self.kappa_low,
            "kappa_high": self.kappa_high,
            "confusion": {
                "label_pass_judge_pass": self.both_pass,
                "label_pass_judge_fail": self.missed,
                "label_fail_judge_pass": self.false_pass,
                "label_fail_judge_fail": self.both_fail,
            },
        }


def krippendorff_alpha(units: Sequence[Sequence[bool]]) -> float | None:
    """Return Krippendorff's alpha (nominal) of the labellers: each unit holds the labels one output got;
    units with fewer than two labels do not count. None when it is undefined (no pairable unit, or one value)."""
    pairable = [unit for unit in units if len(unit) >= 2]
    coincidence = np.zeros((2, 2))
    for unit in pairable:
        passes = sum(1 for value in unit if value)
        counts = np.array([len(unit) - passes, passes], dtype=float)
        coincidence += (np.outer(counts, counts) - np.diag(counts)) / (len(unit) - 1)
    totals = coincidence.sum(axis=1)
    total = totals.sum()
    expected = (total * total - (totals * totals).sum()) / (total - 1) if total > 1 else 0.0
    if expected == 0:
        return None
    observed = coincidence[0, 1] + coincidence[1, 0]
    return float(1 - observed / expected)


def flip_rate(verdict_sets: Sequence[Sequence[bool]]) -> float | None:
    """Return the share of outputs whose repeated verdicts were not all the same (None: none was repeated)."""
    repeated = [verdicts for verdicts in verdict_sets if len(verdicts) >= 2]
    if not repeated:
        return None
    return sum(1 for verdicts in repeated if len(set(verdicts)) > 1) / len(repeated)
