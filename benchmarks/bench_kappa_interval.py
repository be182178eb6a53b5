"""How wide the judge calibration's kappa interval is for a number of labels: seeded label sets where the judge
agrees with people at a true kappa, through the same bootstrap ``promptsuite calibrate`` uses.

    python benchmarks/bench_kappa_interval.py [--sets 40]
"""

from __future__ import annotations

import argparse
import random
import statistics

from pytest_promptsuite.results.agreement import kappa_interval


def _labels(rng: random.Random, n: int, kappa: float) -> tuple[list[bool], list[bool]]:
    """Return ``n`` balanced labels and a judge agreeing with each at ``(1 + kappa) / 2`` (kappa, at base rate 0.5)."""
    labels = [rng.random() < 0.5 for _ in range(n)]
    agree = (1 + kappa) / 2
    return labels, [label if rng.random() < agree else not label for label in labels]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", type=int, default=40, help="label sets per cell (default 40)")
    sets = parser.parse_args().sets
    print("| labels | true kappa | mean interval width | mean lower end |")
    print("|---:|---:|---:|---:|")
    for n in (20, 50, 100, 200, 400):
        for kappa in (0.6, 0.8):
            rng = random.Random(n * 1000 + int(kappa * 100))
            bounds = [kappa_interval(*_labels(rng, n, kappa)) for _ in range(sets)]
            widths = [high - low for low, high in bounds if low is not None and high is not None]
            lows = [low for low, _ in bounds if low is not None]
            print(f"| {n} | {kappa} | {statistics.mean(widths):.2f} | {statistics.mean(lows):.2f} |")


if __name__ == "__main__":
    main()
