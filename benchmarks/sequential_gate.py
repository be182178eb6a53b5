"""The sequential gate (``--prompt-sequential``) against the fixed-N gate, on simulated pairs: how often
each fails a slice (false alarms, drops caught) and how many of the calls the sequential one makes.

    python benchmarks/sequential_gate.py                     # 2,000 pairs per cell
    python benchmarks/sequential_gate.py --pairs 200 --suites "3 x 200"

The population is ``gate_power.py``'s: 70 % of cases pass with p = 0.98, 15 % with p = 0.02, 15 % are
flaky with p uniform in 0.2-0.8; a drop of d points makes round(d * N / 0.96) steady cases fail. The
baseline ran every case once; the candidate's cases arrive in the run's seeded order, stratified by slice,
and feed :class:`~pytest_promptsuite.results.eprocess.SequentialGate` one by one as a run does
(``tests/simulation.py``), each slice stopping once its verdict is settled; a slice that never settles
ends with the fixed test at the level left to it. The fixed-N gate is ``summarize`` on every case (what a
run without ``--prompt-sequential`` decides).
Seeded throughout: the same command prints the same table.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import random
import sys
import time
import zlib
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_promptsuite.config.settings import ThresholdPolicy  # noqa: E402
from pytest_promptsuite.results.case_result import CaseResult  # noqa: E402
from pytest_promptsuite.results.summary import Baseline  # noqa: E402
from pytest_promptsuite.results.summary import summarize  # noqa: E402


sys.path.insert(0, str(ROOT / "benchmarks"))
from gate_power import ENDPOINT  # noqa: E402
from gate_power import dropped  # noqa: E402
from gate_power import population  # noqa: E402

from tests.simulation import sequential_suite  # noqa: E402


SCENARIOS = {"no change": 0.0, "10-point drop": 0.10, "3-point drop": 0.03}
#: Suites: slices x cases per slice. A drop is in the first slice only; the others do not change.
SUITES = {"1 x 200": (1, 200), "3 x 200": (3, 200), "1 x 1,000": (1, 1000)}
ALPHA = 0.05


def fixed_run(olds: list[list[bool]], news: list[list[bool]]) -> list[bool]:
    """Return which slices the fixed-N gate (``summarize``, what the plugin calls) fails."""

    def rows(runs: list[list[bool]]) -> list[CaseResult]:
        return [
            CaseResult(case_id=f"c{s}-{i:04d}", slice=f"s{s}", outcome="passed" if p else "failed")
            for s, passed in enumerate(runs)
            for i, p in enumerate(passed)
        ]

    base = Baseline(rows(olds), "sim", run=ENDPOINT)
    summary = summarize(rows(news), ThresholdPolicy(option=0.0), baseline=base, run=ENDPOINT)
    return [s.gate == "fail" for s in summary.slices]


def cell(task: tuple[str, str, int, int]) -> tuple[str, str, int, int, int, int]:
    """Simulate ``pairs`` pairs of a suite; return (suite, scenario, pairs, fixed fails, sequential fails,
    cases run). A pair fails when any slice fails (a false alarm with no change; the drop caught, else)."""
    suite, scenario, pairs, seed = task
    slices, n = SUITES[suite]
    rng = random.Random(seed)
    fixed = sequential = ran = 0
    for _ in range(pairs):
        olds, news = [], []
        for s in range(slices):
            p = population(n, rng)
            q = dropped(p, SCENARIOS[scenario], rng) if s == 0 else p
            olds.append([rng.random() < v for v in p])
            news.append([rng.random() < v for v in q])
        fixed += any(fixed_run(olds, news))
        failed, cases = sequential_suite(olds, news, rng.getrandbits(32), alpha=ALPHA)
        sequential += any(failed)
        ran += cases
    return suite, scenario, pairs, fixed, sequential, ran


def _rate(k: int, n: int) -> str:
    rate = k / n
    return f"{rate:.1%} ± {2 * math.sqrt(max(rate * (1 - rate), 1e-12) / n):.1%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--suites", nargs="+", default=list(SUITES), choices=list(SUITES))
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    chunk = 50
    tasks = [
        (suite, s, min(chunk, args.pairs - start), zlib.crc32(f"seq {suite} {s} {start}".encode()))
        for suite in args.suites
        for s in SCENARIOS
        for start in range(0, args.pairs, chunk)
    ]
    totals: dict[tuple[str, str], list[int]] = {}
    started = time.perf_counter()
    with multiprocessing.Pool(args.processes) as pool:
        for suite, s, done, fixed, seq, ran in pool.imap_unordered(cell, tasks):
            acc = totals.setdefault((suite, s), [0, 0, 0, 0])
            for j, v in enumerate((done, fixed, seq, ran)):
                acc[j] += v
    print(f"# sequential_gate (python {sys.version.split()[0]}, {os.cpu_count()} cpus)")
    print(f"\n## Fixed-N and sequential gates ({args.pairs:,} pairs per cell, {time.perf_counter() - started:.0f} s)\n")
    print(
        "Rate at which each gate fails the suite (2 standard errors; a drop is in the first slice only), and the "
        "calls the sequential gate made as a share of the fixed gate's. Targets: false alarms <= 5 %; the "
        "10-point drop caught >= 90 % where it is the detectable size or more.\n"
    )
    print("| suite (slices x cases) | scenario | fixed-N gate fails | sequential gate fails | sequential calls |")
    print("|---|---|---:|---:|---:|")
    for suite in args.suites:
        slices, n = SUITES[suite]
        for s in SCENARIOS:
            done, fixed, seq, ran = totals[(suite, s)]
            print(f"| {suite} | {s} | {_rate(fixed, done)} | {_rate(seq, done)} | {ran / (done * n * slices):.0%} |")


if __name__ == "__main__":
    main()
