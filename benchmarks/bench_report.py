"""Report generation for a large result set: aggregation (with a baseline diff) and every file.

Builds N synthetic ``CaseResult`` rows (6 slices, about 5 % failing, ~800-char prompts and outputs,
tags, 1 % of cases flipped against a baseline of the same size), then times, in-process:

- ``load``: reading the baseline's ``results.jsonl`` back (what ``--prompt-baseline`` does),
- ``summarize``: pandas aggregation, Wilson intervals, the baseline diff and McNemar,
- ``write``: results.jsonl, summary.json, slices.csv, summary.md and dashboard.html.

    python benchmarks/bench_report.py                  # N = 100,000, 3 runs, medians
    python benchmarks/bench_report.py --rows 20000 --runs 5
    python benchmarks/bench_report.py --browser        # also time headless Chromium on the dashboard
    python benchmarks/bench_report.py --reference dae24b7 --browser   # before/after, one go

With ``--reference REF``, the same benchmark also runs on the package as it was at git commit REF
(exported to a temporary folder), in the same go: ``--runs`` rounds, each timing the reference
once and then this checkout once (a drifting machine load weighs on both), and the medians are
printed side by side with their ratios (this checkout / reference). The target is under 10 s
for 100,000 rows (summarize + write).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.report.writer import write_report
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.io import load_results
from pytest_promptsuite.results.summary import summarize


#: Whether this package's reports take the baseline's rows (its outputs grid has a baseline column).
GRID = "baseline" in inspect.signature(write_report).parameters
SLICES = ["退款", "物流", "账户安全", "提示词注入", "闲聊", "billing"]
WORDS = "the order refund parcel account password 退款 物流 快递 客服 please thanks 请 帮我 查询".split()


def _text(rnd: random.Random, size: int) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(size // 6))


def make_rows(n: int, seed: int = 1234) -> tuple[list[CaseResult], list[CaseResult]]:
    """(current, baseline): the same cases; 1 % of them flip in either direction."""
    rnd = random.Random(seed)
    ok = CheckResult("content", "must_include", True, "")
    bad = CheckResult("content", "must_include", False, "missing required text 'refund'")
    current: list[CaseResult] = []
    baseline: list[CaseResult] = []
    for i in range(n):
        slice_ = SLICES[i % len(SLICES)]
        prompt = _text(rnd, rnd.randint(50, 1600))
        output = _text(rnd, rnd.randint(50, 1600))
        passed = rnd.random() > 0.05
        was = passed if rnd.random() > 0.01 else not passed
        common = {
            "case_id": f"case-{i:06d}",
            "slice": slice_,
            "location": f"cases.jsonl:{i + 1}",
            "prompt": prompt,
            "prompt_hash": f"{i:016x}",
            "tags": (slice_, f"t{i % 7}"),
        }
        current.append(
            CaseResult(
                outcome="passed" if passed else "failed",
                output=output,
                checks=(ok if passed else bad,),
                latency_ms=1.0,
                **common,
            )
        )
        baseline.append(
            CaseResult(
                outcome="passed" if was else "failed",
                output=output,
                checks=(ok if was else bad,),
                latency_ms=1.0,
                **common,
            )
        )
    return current, baseline


def measure(rows: int, runs: int, browser: bool) -> dict[str, float]:
    """Median seconds of each stage (and of Chromium opening the dashboard), printed as it goes."""
    current, baseline = make_rows(rows)
    policy = ThresholdPolicy(option=0.9, max_regression_option=0.02)
    times: dict[str, list[float]] = {"load": [], "summarize": [], "write": []}
    result: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base_dir = Path(tmp) / "base"
        write_report(base_dir, baseline, summarize(baseline, policy))
        for _ in range(runs):
            t0 = time.perf_counter()
            loaded = load_results(base_dir)
            t1 = time.perf_counter()
            summary = summarize(current, policy, baseline=loaded, baseline_source=str(base_dir))
            t2 = time.perf_counter()
            # as a run with --prompt-baseline writes it (the dashboard's baseline column), where
            # the package has that column; the reference run of an older package writes without
            write_report(Path(tmp) / "rep", current, summary, **({"baseline": loaded} if GRID else {}))
            t3 = time.perf_counter()
            times["load"].append(t1 - t0)
            times["summarize"].append(t2 - t1)
            times["write"].append(t3 - t2)
        sizes = {p.name: p.stat().st_size for p in sorted((Path(tmp) / "rep").iterdir())}
        print(f"rows: {rows:,}; runs: {runs}; regressions {len(summary.regressions):,}, fixes {len(summary.fixes):,}")
        for name, values in times.items():
            result[name] = statistics.median(values)
            print(f"{name:>10}: median {result[name]:6.2f} s  [{min(values):.2f}-{max(values):.2f}]")
        result["report"] = result["summarize"] + result["write"]
        print(f"{'report':>10}: {result['report']:6.2f} s (summarize + write; target < 10 s)")
        for name, size in sizes.items():
            print(f"{name:>16}: {size / 1e6:7.1f} MB")
        result["dashboard_mb"] = sizes["dashboard.html"] / 1e6
        chromium = shutil.which("chromium")
        if browser and chromium:
            result["chromium"] = _open(chromium, Path(tmp), runs)
    return result


def _open(chromium: str, tmp: Path, runs: int) -> float:
    """Median seconds for headless Chromium to load the dashboard and run its script to the end."""
    page = (tmp / "rep" / "dashboard.html").as_uri()
    elapsed = []
    for i in range(runs):
        t0 = time.perf_counter()
        dom = subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                f"--user-data-dir={tmp / f'profile-{i}'}",
                "--dump-dom",
                page,
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        ).stdout
        elapsed.append(time.perf_counter() - t0)
    rendered = 'data-rendered="1"' in dom
    rows_shown = dom.count('<tr class="case ')
    print(
        f"{'chromium':>10}: median {statistics.median(elapsed):6.2f} s to load and render "
        f"(rendered={rendered}, {rows_shown} case rows on the first page)"
    )
    return statistics.median(elapsed)


def _reference(ref: str, argv: list[str]) -> dict[str, float]:
    """Run this script against the package as it was at git commit ``ref``; its medians."""
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(root), "archive", ref, "pytest_promptsuite"], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        out = Path(tmp) / "figures.json"
        env = {**os.environ, "PYTHONPATH": tmp}
        print(f"--- reference: the package at {ref} ---", flush=True)
        subprocess.run([sys.executable, __file__, *argv, "--figures", str(out)], env=env, check=True)
        figures: dict[str, float] = json.loads(out.read_text())
        return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--browser", action="store_true", help="time chromium --dump-dom on the dashboard")
    parser.add_argument("--reference", metavar="REF", help="also run on the package at git commit REF; print ratios")
    parser.add_argument("--figures", metavar="FILE", help=argparse.SUPPRESS)  # where a reference run writes
    args = parser.parse_args()
    if not args.reference:
        after = measure(args.rows, args.runs, args.browser)
        if args.figures:
            Path(args.figures).write_text(json.dumps(after))
        return 0
    # rounds alternate between the reference and this checkout, so a machine whose load drifts
    # during the run weighs on both alike; each figure is the median over the rounds
    argv = ["--rows", str(args.rows), "--runs", "1"] + (["--browser"] if args.browser else [])
    rounds: list[tuple[dict[str, float], dict[str, float]]] = []
    for n in range(args.runs):
        before = _reference(args.reference, argv)
        print(f"--- this checkout (round {n + 1} of {args.runs}) ---", flush=True)
        rounds.append((before, measure(args.rows, 1, args.browser)))
    print(f"--- medians over {args.runs} rounds: {args.reference} -> this checkout ---")
    for name in rounds[0][1]:
        old = statistics.median(r[0].get(name, float("nan")) for r in rounds)
        new = statistics.median(r[1][name] for r in rounds)
        print(f"{name:>12}: {old:7.2f} -> {new:7.2f}  ratio {new / old:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
