"""Loading a baseline: ``--prompt-baseline`` on a 100,000-row ``results.jsonl``, against
``json.loads`` alone over the same file.

Writes the rows of ``bench_report.make_rows`` (~800-character prompts and outputs, two checks,
tags) as a report's ``results.jsonl``, then times in-process, in turn (``--runs`` rounds, medians):

1. ``json.loads``: reading the file and ``json.loads`` of every line, nothing kept (the floor);
2. ``stream_results``: what ``--prompt-baseline`` does now (rows without their texts, which stay
   on disk), with the peak memory it adds (``tracemalloc``);
3. ``load_results``: every row whole in memory (what ``promptsuite diff`` and ``merge`` read).

The goal (issue 16): ``stream_results`` <= 3 x ``json.loads``.

    python benchmarks/bench_baseline.py [--rows 100000] [--runs 3]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_promptsuite.results.io import load_results
from pytest_promptsuite.results.io import stream_results


sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_report import make_rows  # noqa: E402


def json_floor(path: Path) -> int:
    count = 0
    with path.open("rb") as fp:
        for line in fp:
            json.loads(line)
            count += 1
    return count


def timed(work: Callable[[], Any]) -> float:
    gc.collect()
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def peak_mb(work: Callable[[], Any]) -> float:
    gc.collect()
    tracemalloc.start()
    kept = work()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del kept
    return peak / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    _, baseline = make_rows(args.rows)
    with tempfile.TemporaryDirectory(prefix="bench-baseline-") as tmp:
        path = Path(tmp) / "results.jsonl"
        with path.open("w", encoding="utf-8") as out:
            out.writelines(row.to_json() + "\n" for row in baseline)
        del baseline
        size = path.stat().st_size / 1e6
        works: dict[str, Callable[[], Any]] = {
            "json.loads of every line": lambda: json_floor(path),
            "stream_results (--prompt-baseline)": lambda: stream_results(path),
            "load_results (every row whole)": lambda: load_results(path),
        }
        times: dict[str, list[float]] = {label: [] for label in works}
        for _ in range(args.runs):
            for label, work in works.items():
                times[label].append(timed(work))
        print(f"# bench_baseline: {args.rows:,} rows, {size:.0f} MB; medians of {args.runs}, in turn")
        medians = {label: statistics.median(values) for label, values in times.items()}
        floor = medians["json.loads of every line"]
        for label, values in times.items():
            print(
                f"  {label:<38} {medians[label]:6.2f} s [{min(values):.2f}-{max(values):.2f}]  "
                f"{medians[label] / floor:.2f}x json.loads"
            )
        stream = medians["stream_results (--prompt-baseline)"]
        print(
            f"  peak memory: stream_results {peak_mb(lambda: stream_results(path)):.0f} MB, "
            f"load_results {peak_mb(lambda: load_results(path)):.0f} MB"
        )
        stored = stream_results(path)
        row = stored.full(stored.rows[len(stored.rows) // 2])
        assert row.output and row.prompt, "a stored row reads back whole"
        ok = stream <= 3 * floor
        print(
            f"  goal: stream_results {stream:.2f} s <= 3 x json.loads = {3 * floor:.2f} s: {'MET' if ok else 'NOT MET'}"
        )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
