"""Stage tests for the sequential gate (``results.sequential``): its e-process against values worked out
by hand, Ville's bound checked exactly over every sequence of a small case, the certain verdicts, the
stratified order, and a seeded simulation of its false alarms, power and calls."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import pytest

from pytest_promptsuite.results.eprocess import Quota
from pytest_promptsuite.results.eprocess import SequentialGate
from pytest_promptsuite.results.eprocess import Stream
from pytest_promptsuite.results.eprocess import stratified_order
from pytest_promptsuite.results.stats import Stratum
from pytest_promptsuite.results.stats import stratified_p
from tests.simulation import drop_steady
from tests.simulation import population
from tests.simulation import sequential_suite


def test_the_first_bets_by_hand() -> None:
    """Case 1: no case before it, the shrunk mean is 0, so no bet: the wealth stays 1. Case 2: the mean
    shrunk over two is 1/2, the noise (1 + 2 x 1/4) / 3 - 1 x 1/3 = 1/6, so the bet 1/2 / (1/6 + 1/4) =
    6/5 is capped at 3/4; a second regression makes the wealth 1 + 3/4. Case 3, a fix: mean 2/3, noise
    (2 + 1/2) / 4 - 1 x 2/4 = 1/8, bet (2/3) / (1/8 + 4/9) > 3/4, capped: 7/4 x (1 - 3/4) = 7/16."""
    stream = Stream("s", None, "baseline", planned=10)
    stream.add(1.0, 0.0, 0.5)
    assert stream.log_efficacy == 0.0
    stream.add(1.0, 0.0, 0.5)
    assert math.exp(stream.log_efficacy) == pytest.approx(7 / 4)
    stream.add(-1.0, 0.0, 0.5)
    assert math.exp(stream.log_efficacy) == pytest.approx(7 / 16)
    assert stream.p_value == pytest.approx(4 / 7)  # 1 / the best wealth so far
    assert stream.drop == pytest.approx(1 / 3)


def test_ville_bound_holds_exactly_over_every_sequence() -> None:
    """Under no change a case's drop is +1 or -1 with equal chance once it flips (and 0 else): over all
    3^8 sequences of 8 cases, weighted exactly (a flip each with chance 1/2), the chance the e-process
    ever reaches 1 / alpha is at most alpha, for several alpha."""
    weights = {-1.0: Fraction(1, 4), 0.0: Fraction(1, 2), 1.0: Fraction(1, 4)}
    for alpha in (0.5, 0.25, 0.1):
        reached = Fraction(0)
        for xs in itertools.product(weights, repeat=8):
            stream = Stream("s", None, "baseline", planned=8)
            for x in xs:
                stream.add(x, 0.0, 0.5)
            if stream.best_efficacy >= math.log(1 / alpha) - 1e-12:
                reached += math.prod((weights[x] for x in xs), start=Fraction(1))
        assert reached <= Fraction(alpha).limit_denominator(1000)


def test_a_drop_alone_is_settled_only_when_certain() -> None:
    stream = Stream("s", None, "baseline", planned=10, exact=True)
    for x in (1.0, 1.0, 0.0, 0.0, 0.0):
        stream.add(x, 0.0, 0.5)
    assert stream.certain(0.0) is None  # 2 regressions, 5 cases left: the drop over 10 could still be 0
    for x in (0.0, 0.0, 0.0):
        stream.add(x, 0.0, 0.5)
    assert stream.certain(0.0) is None  # 2 fixes left would make the drop 0, which is allowed
    stream.add(0.0, 0.0, 0.5)
    assert stream.certain(0.0) == "regressed"  # 1 left cannot undo 2 regressions
    calm = Stream("s", None, "baseline", planned=4, exact=True)
    calm.add(-1.0, 0.1, 0.5)
    assert calm.certain(0.1) is None
    calm.add(-1.0, 0.1, 0.5)
    assert calm.certain(0.1) == "no drop of the detectable size"  # -2 + 2 left = 0 <= 0.1 x 4


def test_a_threshold_is_settled_only_when_certain() -> None:
    quota = Quota("s", None, threshold=0.5, planned=10)
    for passed in (True, True, True, True):
        quota.add(passed)
    assert quota.verdict is None
    quota.add(True)
    assert quota.verdict == "met"  # 5 of 10 whatever the rest do
    missed = Quota("s", None, threshold=0.5, planned=10)
    for passed in (False,) * 5:
        missed.add(passed)
    assert missed.verdict is None  # 5 passes left would make 50 %
    missed.add(None)  # a review: not counted, so 4 left can make at most 4 of 9
    assert missed.verdict == "missed"
    assert Quota("s", None, threshold=0.0, planned=3).verdict == "met"


def test_the_order_is_seeded_and_stratified() -> None:
    groups = {"a": [f"a{i}" for i in range(30)], "b": [f"b{i}" for i in range(10)]}
    order = stratified_order(groups, seed=7)
    assert order == stratified_order(groups, seed=7) != stratified_order(groups, seed=8)
    assert sorted(order) == sorted(groups["a"] + groups["b"])
    for prefix in range(4, 41, 4):  # every prefix holds each slice in its share, within one case
        assert abs(sum(c.startswith("b") for c in order[:prefix]) - prefix / 4) <= 1
    assert order[:30] != sorted(order[:30])


def _run(n: int, drop_cases: int, rng: random.Random) -> tuple[bool, int]:
    """One pair through the gate as a run feeds it; (failed, cases run)."""
    p = population(n, rng)
    q = list(p)
    for i in [i for i, v in enumerate(p) if v == 0.98][:drop_cases]:
        q[i] = 0.02
    old = [rng.random() < v for v in p]
    new = [rng.random() < v for v in q]
    gate = SequentialGate(alpha=0.05, max_drop=0.0, planned=n)
    gate.compare("s", None, "baseline", n)
    order = list(range(n))
    rng.shuffle(order)
    for ran, i in enumerate(order, 1):
        gate.add_drop("s", None, "baseline", float(old[i]) - float(new[i]))
        if gate.case_done():
            return bool(gate.regressed()), ran
    strata = [Stratum(int(o), 1, int(c), 1) for o, c in zip(old, new, strict=True)]
    final = sum(old) > sum(new) and stratified_p(strata) <= gate.final_alpha
    return bool(gate.regressed()) or final, n


@pytest.mark.slow
def test_seeded_simulation_of_false_alarms_power_and_calls() -> None:
    """The README's population (``benchmarks/sequential_gate.py`` runs thousands): with no change at
    most alpha false alarms, a 10-point drop of 200 cases caught >= 90 % (margins for 300 pairs), and
    at N = 1,000 the 10-point drop settled with far fewer calls than the fixed gate's 1,000."""
    rng = random.Random(20261202)
    pairs = 300
    false_alarms = sum(_run(200, 0, rng)[0] for _ in range(pairs)) / pairs
    caught = sum(_run(200, 21, rng)[0] for _ in range(pairs)) / pairs  # 21 x 0.96 = 10 points
    assert false_alarms <= 0.07
    assert caught >= 0.87
    big = [_run(1000, 104, rng) for _ in range(60)]
    assert sum(failed for failed, _ in big) / len(big) >= 0.95
    assert sum(ran for _, ran in big) / (1000 * len(big)) <= 0.5


def _suite_pairs(pairs: int, slices: int, n: int, drop_cases: int, seed: int) -> tuple[float, float, float]:
    """Run ``pairs`` pairs of a suite of ``slices`` slices of ``n`` cases (a drop of ``drop_cases`` steady
    cases in the first slice only); return (share failing any slice, share failing the first, calls made)."""
    rng = random.Random(seed)
    any_failed = first_failed = ran = 0
    for _ in range(pairs):
        olds, news = [], []
        for s in range(slices):
            p = population(n, rng)
            q = drop_steady(p, drop_cases) if s == 0 else p
            olds.append([rng.random() < v for v in p])
            news.append([rng.random() < v for v in q])
        failed, cases = sequential_suite(olds, news, rng.getrandbits(32))
        any_failed += any(failed)
        first_failed += failed[0]
        ran += cases
    return any_failed / pairs, first_failed / pairs, ran / (pairs * slices * n)


@pytest.mark.slow
def test_seeded_simulation_of_a_suite_whose_slices_stop_one_by_one() -> None:
    """Three slices of 200, each stopping once its own verdict is settled (2,000 pairs a cell): with no change
    false alarms over the three stay within alpha (2 standard errors: 6 %); a drop of 12.5 points in one slice
    (about the design's detectable drop for three comparisons of 200) is caught >= 90 %; and both save calls,
    the unchanged slices stopping while the dropped one goes on."""
    alarms, _, calls_no_change = _suite_pairs(2000, 3, 200, 0, seed=20261207)
    assert alarms <= 0.06
    assert calls_no_change <= 0.7
    _, caught, calls_drop = _suite_pairs(2000, 3, 200, 26, seed=20261208)  # 26 x 0.96 / 200 = 12.5 points
    assert caught >= 0.90
    assert calls_drop <= 0.75


def test_a_slice_and_variant_stops_once_every_verdict_its_cases_feed_is_settled() -> None:
    """Variant v1's cases feed its own comparison with the baseline and v2's comparison with v1: v1 stops
    only once both are settled (and its threshold); a stopped comparison takes no more cases."""
    gate = SequentialGate(alpha=0.05, max_drop=0.0, planned=4)
    gate.compare("s", "v1", "baseline", 4, exact=True)
    gate.compare("s", "v2", "variant v1", 4, exact=True, fed_by=[("s", "v1")])
    for variant in ("v1", "v2"):
        gate.threshold("s", variant, 0.0, 4)
        gate.plan_group(("s", variant), 4)
    stopped = []
    for step in range(3):
        gate.add_drop("s", "v1", "baseline", -1.0 if step < 2 else 0.0)  # two fixes: no drop over 4, certain
        gate.add_drop("s", "v2", "variant v1", 1.0)  # regressed once 3 of 4 dropped
        gate.group_done(("s", "v1"))
        gate.group_done(("s", "v2"))
        gate.case_done()
        stopped.append(gate.settle_groups())
    assert stopped == [[], [], [("s", "v1"), ("s", "v2")]]  # v1's own verdict was settled after 2: not enough
    assert gate.stopped == {("s", "v1"): 3, ("s", "v2"): 3} and gate.settled_after == 3
    assert gate.to_dict()["calls_saved_cases"] == 2  # one case of each variant
    before = gate.streams[("s", "v1", "baseline")].n
    gate.add_drop("s", "v1", "baseline", 1.0)
    assert gate.streams[("s", "v1", "baseline")].n == before
    assert [g["settled_after"] for g in gate.to_dict()["groups"]] == [3, 3]
