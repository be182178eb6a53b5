"""The sequential gate (``--prompt-sequential``) against the fixed-N gate, on simulated pairs: how often
each fails a slice (false alarms, drops caught) and how many of the calls the sequential one makes.

    python benchmarks/sequential_gate.py                     # 1,000 pairs per cell
    python benchmarks/sequential_gate.py --pairs 200 --sizes 200

The population is ``gate_power.py``'s: 70 % of cases pass with p = 0.98, 15 % with p = 0.02, 15 % are
flaky with p uniform in 0.2-0.8; a drop of d points makes round(d * N / 0.96) steady cases fail. The
baseline ran every case once; the candidate's cases arrive in a seeded random order and feed
:class:`~pytest_promptsuite.results.eprocess.SequentialGate` one by one, the run stopping once its
verdict is settled; a run that never settles ends with the fixed test at the level left to it. The
fixed-N gate is ``summarize`` on all N cases (what a run without ``--prompt-sequential`` decides).
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
from pytest_promptsuite.results.eprocess import SequentialGate  # noqa: E402
from pytest_promptsuite.results.stats import Stratum  # noqa: E402
from pytest_promptsuite.results.stats import stratified_p  # noqa: E402
from pytest_promptsuite.results.summary import Baseline  # noqa: E402
from pytest_promptsuite.results.summary import summarize  # noqa: E402


sys.path.insert(0, str(ROOT / "benchmarks"))
from gate_power import ENDPOINT  # noqa: E402
from gate_power import dropped  # noqa: E402
from gate_power import population  # noqa: E402


SCENARIOS = {"no change": 0.0, "10-point drop": 0.10, "3-point drop": 0.03}
ALPHA = 0.05


def sequential_run(old: list[bool], new: list[bool], rng: random.Random) -> tuple[bool, int]:
    """Run the candidate's cases in a random order through the sequential gate; return (failed, cases run)."""
    n = len(old)
    gate = SequentialGate(alpha=ALPHA, max_drop=0.0, planned=n)
    gate.compare("s", None, "baseline", n)
    order = list(range(n))
    rng.shuffle(order)
    for ran, i in enumerate(order, 1):
        gate.add_drop("s", None, "baseline", float(old[i]) - float(new[i]))
        if gate.case_done():
            return bool(gate.regressed()), ran
    if gate.regressed():
        return True, n
    strata = [Stratum(int(o), 1, int(c), 1) for o, c in zip(old, new, strict=True)]
    drop = (sum(old) - sum(new)) / n
    return drop > 0 and stratified_p(strata) <= gate.final_alpha, n


def fixed_run(old: list[bool], new: list[bool]) -> bool:
    """Return whether the fixed-N gate (``summarize``, what the plugin calls) fails the slice."""

    def rows(passed: list[bool]) -> list[CaseResult]:
        return [
            CaseResult(case_id=f"c{i:04d}", slice="s", outcome="passed" if p else "failed")
            for i, p in enumerate(passed)
        ]

    base = Baseline(rows(old), "sim", run=ENDPOINT)
    return not summarize(rows(new), ThresholdPolicy(option=0.0), baseline=base, run=ENDPOINT).gate.passed


def cell(task: tuple[int, str, int, int]) -> tuple[int, str, int, int, int, int]:
    """Simulate ``pairs`` pairs; return (N, scenario, pairs, fixed fails, sequential fails, cases run)."""
    n, scenario, pairs, seed = task
    rng = random.Random(seed)
    fixed = sequential = ran = 0
    for _ in range(pairs):
        p = population(n, rng)
        q = dropped(p, SCENARIOS[scenario], rng)
        old = [rng.random() < v for v in p]
        new = [rng.random() < v for v in q]
        fixed += fixed_run(old, new)
        failed, cases = sequential_run(old, new, rng)
        sequential += failed
        ran += cases
    return n, scenario, pairs, fixed, sequential, ran


def _rate(k: int, n: int) -> str:
    rate = k / n
    return f"{rate:.1%} ± {2 * math.sqrt(max(rate * (1 - rate), 1e-12) / n):.1%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    chunk = 50
    tasks = [
        (n, s, min(chunk, args.pairs - start), zlib.crc32(f"seq {n} {s} {start}".encode()))
        for n in args.sizes
        for s in SCENARIOS
        for start in range(0, args.pairs, chunk)
    ]
    totals: dict[tuple[int, str], list[int]] = {}
    started = time.perf_counter()
    with multiprocessing.Pool(args.processes) as pool:
        for n, s, done, fixed, seq, ran in pool.imap_unordered(cell, tasks):
            acc = totals.setdefault((n, s), [0, 0, 0, 0])
            for j, v in enumerate((done, fixed, seq, ran)):
                acc[j] += v
    print(f"# sequential_gate (python {sys.version.split()[0]}, {os.cpu_count()} cpus)")
    print(f"\n## Fixed-N and sequential gates ({args.pairs:,} pairs per cell, {time.perf_counter() - started:.0f} s)\n")
    print(
        "Rate at which each gate fails the slice (2 standard errors), and the calls the sequential gate made "
        "as a share of the fixed gate's N. Targets: false alarms <= 5 %; the 10-point drop caught >= 90 %; "
        "at N = 1,000 at least 30 % fewer calls on no change and on the 10-point drop.\n"
    )
    print("| N | scenario | fixed-N gate fails | sequential gate fails | sequential calls | calls saved |")
    print("|---:|---|---:|---:|---:|---:|")
    for n in args.sizes:
        for s in SCENARIOS:
            done, fixed, seq, ran = totals[(n, s)]
            share = ran / (done * n)
            print(f"| {n:,} | {s} | {_rate(fixed, done)} | {_rate(seq, done)} | {share:.0%} | {1 - share:.0%} |")


if __name__ == "__main__":
    main()
