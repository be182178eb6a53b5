"""The sequential gate (``--prompt-sequential``): each compared slice's verdict settled case by case by
betting e-processes, so a run stops calling a slice (or variant) once its verdicts are known."""

from __future__ import annotations

import math
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Literal

from pytest_promptsuite.results.stats import holm


#: Of the gate's ``alpha``, the share the sequential test may spend before every case ran; the rest
#: goes to the fixed test when a run does not stop (the two together keep false alarms <= alpha).
SEQUENTIAL_SHARE = 0.2
#: The chance of wrongly settling "no drop of the detectable size" on a drop of that size; with the
#: same again left to the fixed test at the end, such a drop is missed at most 10 % of the time.
FUTILITY_ERROR = 0.05
#: The largest bet a step makes (of the wealth at stake), so that one case never ruins a test.
_MAX_BET = 0.75

Settled = Literal["regressed", "no drop of the detectable size"]
ThresholdVerdict = Literal["met", "missed"]
#: A compared (slice, variant, against): one stream.
StreamKey = tuple[str, "str | None", str]
#: A (slice, variant): the cases that stop together once every verdict they feed is settled.
Group = tuple[str, "str | None"]


def _z(level: float) -> float:
    """Return the one-sided normal quantile of ``level`` (the z a test at that level needs)."""
    from statistics import NormalDist

    return NormalDist().inv_cdf(1 - level)


@dataclass
class Stream:
    """One compared (slice, variant): the drops of its paired cases as they arrive, and the two e-processes
    betting on them (``efficacy``: a drop; ``futility``: no drop that size): docs/explanation/statistics.md."""

    slice: str
    variant: str | None
    against: str
    #: Paired cases the run plans for this comparison.
    planned: int
    n: int = 0
    total: float = 0.0
    squares: float = 0.0
    log_efficacy: float = 0.0
    best_efficacy: float = 0.0
    log_futility: float = 0.0
    futile: bool = False
    #: The detectable drop the futility test last bet against.
    detectable: float | None = None
    #: Judged by the drop alone (``delta``: deterministic runs): settled only once certain whatever the
    #: cases not run do, which is the fixed gate's own verdict.
    exact: bool = False

    def noise(self) -> float:
        """Return the variance of a case's drop, from the cases so far with two pseudo-cases of 1/4."""
        mean = self.total / self.n if self.n else 0.0
        return max(1e-4, (self.squares + 0.5) / (self.n + 2) - mean * mean * self.n / (self.n + 2))

    def certain(self, max_drop: float) -> Settled | None:
        """Return the verdict of the drop over every planned case once the cases left cannot change it."""
        left = max(0, self.planned - self.n)
        if (self.total - left) / self.planned > max_drop + 1e-9:
            return "regressed"
        if (self.total + left) / self.planned <= max_drop + 1e-9:
            return "no drop of the detectable size"
        return None

    def add(self, x: float, max_drop: float, detectable: float) -> None:
        """Take one case's drop ``x``; bet first, from what came before."""
        if self.exact:
            self.n += 1
            self.total += x
            self.squares += x * x
            self.futile = self.certain(max_drop) == "no drop of the detectable size"
            return
        mean = self.total / (self.n + 1)  # shrunk towards no drop
        variance = self.noise()
        gap = mean - max_drop
        bet = min(max(gap / (variance + gap * gap), 0.0), _MAX_BET / (1 + max_drop))
        self.log_efficacy += math.log1p(bet * (x - max_drop))
        self.best_efficacy = max(self.best_efficacy, self.log_efficacy)
        gap = detectable - mean
        bet = min(max(gap / (variance + gap * gap), 0.0), _MAX_BET / (1 + detectable))
        self.log_futility += math.log1p(-bet * (x - detectable))
        self.detectable = detectable
        if self.log_futility >= math.log(1 / FUTILITY_ERROR):
            self.futile = True
        self.n += 1
        self.total += x
        self.squares += x * x

    @property
    def p_value(self) -> float:
        """The always-valid p-value of "no drop beyond the allowed one": 1 / the e-process's maximum."""
        return min(1.0, math.exp(-self.best_efficacy))

    @property
    def drop(self) -> float | None:
        """The mean drop over the cases so far."""
        return self.total / self.n if self.n else None


@dataclass
class Quota:
    """One slice (or one variant of it) under a threshold: what its final pass rate can still be."""

    slice: str
    variant: str | None
    threshold: float
    planned: int
    ran: int = 0
    passed: int = 0
    uncounted: int = 0

    def add(self, passed: bool | None) -> None:
        """Take one counted unit (a row, or a case under ``case_pass``): passed, failed, or None (review)."""
        self.ran += 1
        if passed is None:
            self.uncounted += 1
        elif passed:
            self.passed += 1

    @property
    def verdict(self) -> ThresholdVerdict | None:
        """``met`` or ``missed`` once certain whatever the units not run do (the fixed gate's own verdict
        then), else None."""
        left = self.planned - self.ran
        counted_all = self.planned - self.uncounted
        lowest = self.passed / counted_all if counted_all > 0 else 1.0
        ran_counted = self.ran - self.uncounted
        highest = max(
            (self.passed + left) / counted_all if counted_all > 0 else 1.0,
            self.passed / ran_counted if ran_counted > 0 else 1.0,
        )
        if lowest + 1e-9 >= self.threshold:
            return "met"
        if highest + 1e-9 < self.threshold:
            return "missed"
        return None


@dataclass
class SequentialGate:
    """Every comparison and threshold of a ``--prompt-sequential`` run, fed case by case.

    ``alpha`` is the gate's level; the sequential test spends ``SEQUENTIAL_SHARE`` of it (Holm over the
    comparisons on always-valid p-values, so any stopping time keeps it), the fixed test at the end the rest.
    """

    alpha: float
    max_drop: float
    streams: dict[tuple[str, str | None, str], Stream] = field(default_factory=dict)
    quotas: dict[tuple[str, str | None], Quota] = field(default_factory=dict)
    #: Cases (units of the order) the run plans, and how many have arrived.
    planned: int = 0
    arrived: int = 0
    #: Set once every verdict is settled: after this many cases.
    settled_after: int | None = None
    #: Each (slice, variant) and the comparisons its cases feed (its own, and those compared with it).
    needs: dict[Group, set[StreamKey]] = field(default_factory=dict)
    #: Each (slice, variant)'s cases: planned, and arrived so far.
    group_planned: dict[Group, int] = field(default_factory=dict)
    group_arrived: dict[Group, int] = field(default_factory=dict)
    #: Each settled (slice, variant), after how many of its cases: no more of them need a call.
    stopped: dict[Group, int] = field(default_factory=dict)

    @property
    def sequential_alpha(self) -> float:
        """The level the sequential test spends."""
        return self.alpha * SEQUENTIAL_SHARE

    @property
    def final_alpha(self) -> float:
        """The level left to the fixed test, when every case ran."""
        return self.alpha - self.sequential_alpha

    def compare(
        self,
        slice_name: str,
        variant: str | None,
        against: str,
        planned: int,
        *,
        exact: bool = False,
        fed_by: Sequence[Group] = (),
    ) -> None:
        """Plan a comparison of ``planned`` paired cases (``exact``: by the drop alone, the ``delta`` rule),
        fed by the (slice, variant)'s cases and those of ``fed_by`` (the variant it is compared with)."""
        key = (slice_name, variant, against)
        self.streams[key] = Stream(slice_name, variant, against, planned, exact=exact)
        for group in [(slice_name, variant), *fed_by]:
            self.needs.setdefault(group, set()).add(key)

    def threshold(self, slice_name: str, variant: str | None, threshold: float, planned: int) -> None:
        """Plan a threshold over ``planned`` counted units."""
        self.quotas[(slice_name, variant)] = Quota(slice_name, variant, threshold, planned)
        self.needs.setdefault((slice_name, variant), set())

    def plan_group(self, group: Group, cases: int) -> None:
        """Plan ``cases`` cases of a (slice, variant)."""
        self.group_planned[group] = cases
        self.needs.setdefault(group, set())

    def group_done(self, group: Group) -> None:
        """Count one case of a (slice, variant) as arrived."""
        self.group_arrived[group] = self.group_arrived.get(group, 0) + 1

    def settle_groups(self) -> list[Group]:
        """Stop the (slice, variant)s whose every verdict is now known and whose cases are not all in;
        return them. A stopped group's comparisons take no more cases."""
        verdicts = self.verdicts()
        fresh = [
            group
            for group, keys in self.needs.items()
            if group not in self.stopped and self._group_open(group) and self._group_settled(group, keys, verdicts)
        ]
        for group in fresh:
            self.stopped[group] = self.group_arrived.get(group, 0)
        if fresh and self.settled_after is None and not any(self._runs_on(g) for g in self.group_planned):
            self.settled_after = self.arrived  # the last to settle had cases left: the whole run stops
        return fresh

    def _runs_on(self, group: Group) -> bool:
        return group not in self.stopped and self._group_open(group)

    def _group_open(self, group: Group) -> bool:
        return self.group_arrived.get(group, 0) < self.group_planned.get(group, 0)

    def _group_settled(self, group: Group, keys: set[StreamKey], verdicts: Mapping[StreamKey, Settled | None]) -> bool:
        quota = self.quotas.get(group)
        return all(verdicts[key] is not None for key in keys) and (quota is None or quota.verdict is not None)

    def is_stopped(self, stream: StreamKey) -> bool:
        """Tell whether a comparison takes no more cases: a (slice, variant) feeding it stopped."""
        return any(stream in self.needs.get(group, ()) for group in self.stopped)

    def detectable(self, stream: Stream) -> float:
        """Return the drop this design catches with 90 % power at the comparison's planned size: at
        most ``FUTILITY_ERROR`` lost to the futility test, the rest of the miss to the fixed test at
        ``final_alpha`` (Bonferroni over the comparisons, like the fixed gate's detectable drop)."""
        family = max(1, len(self.streams))
        z = _z(self.final_alpha / family) + _z(0.10 - FUTILITY_ERROR)
        return z * math.sqrt(stream.noise() / max(1, stream.planned))

    def add_drop(self, slice_name: str, variant: str | None, against: str, x: float) -> None:
        """Take one paired case's drop for a comparison (none once it stopped: its verdict is kept)."""
        key = (slice_name, variant, against)
        if self.is_stopped(key):
            return
        stream = self.streams[key]
        stream.add(x, self.max_drop, self.detectable(stream))

    def add_unit(self, slice_name: str, variant: str | None, passed: bool | None) -> None:
        """Take one unit of a slice's pass rate (None: review, not counted)."""
        quota = self.quotas.get((slice_name, variant))
        if quota is not None:
            quota.add(passed)

    def regressed(self) -> set[tuple[str, str | None, str]]:
        """Return the comparisons the sequential test calls regressed (Holm at its level)."""
        keys = [k for k, s in self.streams.items() if not s.exact]
        adjusted = holm([self.streams[k].p_value for k in keys])
        found = {k for k, p in zip(keys, adjusted, strict=True) if p <= self.sequential_alpha}
        return found | self._certainly_regressed()

    def _certainly_regressed(self) -> set[tuple[str, str | None, str]]:
        """Return the exact comparisons (``delta``) whose drop is certain already."""
        return {k for k, s in self.streams.items() if s.exact and s.certain(self.max_drop) == "regressed"}

    def verdicts(self) -> dict[tuple[str, str | None, str], Settled | None]:
        """Return each comparison's settled verdict, or None while open."""
        down = self.regressed()
        return {
            key: "regressed" if key in down else "no drop of the detectable size" if s.futile else None
            for key, s in self.streams.items()
        }

    def case_done(self) -> bool:
        """Count one case of the order as arrived; return whether every verdict is now settled (with groups
        planned, :meth:`settle_groups` says when: once the last open one stops)."""
        self.arrived += 1
        if self.settled_after is None and not self.group_planned and self.is_settled() and self.arrived < self.planned:
            self.settled_after = self.arrived
        return self.settled_after is not None

    def is_settled(self) -> bool:
        """Tell whether every comparison and every threshold has its verdict."""
        return all(v is not None for v in self.verdicts().values()) and all(
            q.verdict is not None for q in self.quotas.values()
        )

    def _cases_skipped(self) -> int:
        """Count the cases that stopped (slice, variant)s did not run (of the order, without groups planned)."""
        if not self.group_planned:
            return self.planned - self.arrived if self.settled_after is not None else 0
        return sum(self.group_planned[group] - ran for group, ran in self.stopped.items())

    def to_dict(self) -> dict[str, Any]:
        """Return ``summary.json``'s ``sequential``."""
        verdicts = self.verdicts()
        return {
            "cases": self.planned,
            "ran": self.arrived,
            "settled_after": self.settled_after,
            "calls_saved_cases": self._cases_skipped(),
            "groups": [
                {
                    "slice": g[0],
                    "variant": g[1],
                    "cases": n,
                    "ran": self.group_arrived.get(g, 0),
                    "settled_after": self.stopped.get(g),
                }
                for g, n in self.group_planned.items()
            ],
            "sequential_alpha": self.sequential_alpha,
            "final_alpha": self.final_alpha,
            "futility_error": FUTILITY_ERROR,
            "comparisons": [
                {
                    "slice": s.slice,
                    "variant": s.variant,
                    "against": s.against,
                    "cases": s.n,
                    "planned": s.planned,
                    "drop": s.drop,
                    "p_sequential": s.p_value,
                    "detectable_drop": s.detectable,
                    "verdict": verdicts[key],
                }
                for key, s in self.streams.items()
            ],
            "thresholds": [
                {"slice": q.slice, "variant": q.variant, "threshold": q.threshold, "verdict": q.verdict}
                for q in self.quotas.values()
            ],
        }


def stratified_order(groups: Mapping[str, Sequence[str]], seed: int) -> list[str]:
    """Return the ids of every slice (``groups``: slice -> ids) in a seeded random order, stratified:
    each slice's ids shuffled, the slices interleaved so that any prefix holds each in its share."""
    import random

    rng = random.Random(seed)
    keyed: list[tuple[float, str, str]] = []
    for name in sorted(groups):
        ids = list(groups[name])
        rng.shuffle(ids)
        keyed += [((i + rng.random()) / len(ids), name, case) for i, case in enumerate(ids)]
    return [case for *_, case in sorted(keyed)]
