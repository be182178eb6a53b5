"""Seeded populations of cases for the gate's simulations, and a suite of slices run through the
sequential gate as a ``--prompt-sequential`` run feeds it (shared by the tests that draw them)."""

from __future__ import annotations

import random
from collections.abc import Sequence

from pytest_promptsuite.results.eprocess import SequentialGate
from pytest_promptsuite.results.eprocess import stratified_order
from pytest_promptsuite.results.stats import Stratum
from pytest_promptsuite.results.stats import holm
from pytest_promptsuite.results.stats import stratified_p


def population(n: int, rng: random.Random) -> list[float]:
    """Return each of ``n`` cases' pass probability: 70 % steady passes, 15 % steady fails, the rest flaky."""
    out = []
    for _ in range(n):
        u = rng.random()
        out.append(0.98 if u < 0.7 else 0.02 if u < 0.85 else rng.uniform(0.2, 0.8))
    return out


def drop_steady(p: list[float], cases: int) -> list[float]:
    """Return ``p`` with its first ``cases`` steady passes failing (a drop of about ``cases * 0.96 / n``)."""
    q = list(p)
    for i in [i for i, v in enumerate(p) if v == 0.98][:cases]:
        q[i] = 0.02
    return q


def sequential_suite(
    olds: Sequence[Sequence[bool]], news: Sequence[Sequence[bool]], seed: int, alpha: float = 0.05
) -> tuple[list[bool], int]:
    """Run one pair of a suite of slices (each slice's baseline and candidate outcomes, paired by case)
    through the sequential gate in the run's stratified order, each slice stopping once settled; a slice that
    ran every case is judged at the end by the fixed test (Holm over every slice at the level left, on the
    cases each ran, as the plugin's summary does). Return which slices failed, and the cases that ran."""
    gate = SequentialGate(alpha=alpha, max_drop=0.0, planned=sum(len(o) for o in olds))
    for s, old in enumerate(olds):
        gate.compare(f"s{s}", None, "baseline", len(old))
        gate.plan_group((f"s{s}", None), len(old))
    ran: list[list[int]] = [[] for _ in olds]
    order = stratified_order({f"s{s}": [f"{s}:{i}" for i in range(len(o))] for s, o in enumerate(olds)}, seed)
    for case in order:
        s, i = map(int, case.split(":"))
        if (f"s{s}", None) in gate.stopped:
            continue
        gate.add_drop(f"s{s}", None, "baseline", float(olds[s][i]) - float(news[s][i]))
        gate.group_done((f"s{s}", None))
        gate.case_done()
        gate.settle_groups()
        ran[s].append(i)
    return _judged(gate, olds, news, ran), sum(map(len, ran))


def _judged(
    gate: SequentialGate, olds: Sequence[Sequence[bool]], news: Sequence[Sequence[bool]], ran: list[list[int]]
) -> list[bool]:
    """Return each slice's verdict: the sequential one where it stopped early, else the fixed test's too."""
    regressed = gate.regressed()
    p_values = []
    for s, cases in enumerate(ran):
        strata = [Stratum(int(olds[s][i]), 1, int(news[s][i]), 1) for i in cases]
        dropped = sum(olds[s][i] for i in cases) > sum(news[s][i] for i in cases)
        p_values.append(stratified_p(strata) if dropped else 1.0)
    adjusted = holm(p_values)
    return [
        (f"s{s}", None, "baseline") in regressed
        or ((f"s{s}", None) not in gate.stopped and adjusted[s] <= gate.final_alpha)
        for s in range(len(olds))
    ]
