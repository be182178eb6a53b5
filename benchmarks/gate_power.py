"""How often the regression gate fails a slice: with no change (false alarms) and with a real drop.

    python benchmarks/gate_power.py                      # 2,000 simulated pairs per cell, all cores
    python benchmarks/gate_power.py --pairs 500 --sizes 200 --repeats 1 3
    python benchmarks/gate_power.py --delta              # also the drop-only rule at 0, 0.02, 0.05
    python benchmarks/gate_power.py --case-pass 0.8 --repeats 3 5   # cases judged by [gate] case_pass

A slice of N cases: 70 % pass with p = 0.98, 15 % with p = 0.02, 15 % are flaky with p uniform in
0.2-0.8. Baseline and candidate are drawn independently, each case run k times; a real drop of d
points makes round(d * N / 0.96) of the steady cases fail (p = 0.02) in the candidate. The rows go
through ``pytest_promptsuite.results.summarize`` (what the plugin calls) as two runs on an endpoint
(so ``auto`` picks the paired rule), thresholds off: the gate fails only on a regression.

Then two checks through pytest itself: deterministic runs on the fake model (200 cases: never a
failure without a regression, always one on 10 regressions), and end-to-end runs against the
seeded loopback server, whose ``summary.json`` must agree with ``summarize`` fed the same rows.
Seeded throughout: the same command prints the same table.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import random
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_promptsuite.config.settings import GateSettings  # noqa: E402
from pytest_promptsuite.config.settings import ThresholdPolicy  # noqa: E402
from pytest_promptsuite.results.case_result import CaseResult  # noqa: E402
from pytest_promptsuite.results.records import RunInfo  # noqa: E402
from pytest_promptsuite.results.summary import Baseline  # noqa: E402
from pytest_promptsuite.results.summary import summarize  # noqa: E402


SCENARIOS = {"no change": 0.0, "10-point drop": 0.10, "5-point drop": 0.05}
ENDPOINT = RunInfo("bench", {"": {"spec": "openai:sim", "base_url": None, "params": {}, "deterministic": False}})
DELTA_LIMITS = (0.0, 0.02, 0.05)


def population(n: int, rng: random.Random) -> list[float]:
    """Each case's pass probability."""
    out = []
    for _ in range(n):
        u = rng.random()
        out.append(0.98 if u < 0.70 else 0.02 if u < 0.85 else rng.uniform(0.2, 0.8))
    return out


def dropped(p: list[float], drop: float, rng: random.Random) -> list[float]:
    """The candidate's probabilities: a drop of ``drop`` points made of steady cases that fail."""
    steady = [i for i, v in enumerate(p) if v == 0.98]
    q = list(p)
    for i in rng.sample(steady, min(len(steady), round(drop * len(p) / 0.96))):
        q[i] = 0.02
    return q


def draw(p: list[float], k: int, rng: random.Random) -> list[CaseResult]:
    """One run: every case ``k`` times."""
    return [
        CaseResult(case_id=f"c{i:04d}", slice="s", outcome="passed" if rng.random() < pi else "failed", repeat=r)
        for i, pi in enumerate(p)
        for r in range(k)
    ]


def cell(task: tuple[int, int, str, int, int, bool, float | None]) -> tuple[int, int, str, int, list[int]]:
    """Simulate ``pairs`` pairs of one cell; return how many failed the gate (and the drop-only
    rule at each limit, with ``delta``), cases judged by ``[gate] case_pass`` when given."""
    n, k, scenario, pairs, seed, delta, case_pass = task
    settings = GateSettings(case_pass=case_pass)
    rng = random.Random(seed)
    fails = [0] * (1 + (len(DELTA_LIMITS) if delta else 0))
    for _ in range(pairs):
        p = population(n, rng)
        old, new = draw(p, k, rng), draw(dropped(p, SCENARIOS[scenario], rng), k, rng)
        base = Baseline(old, "sim", run=ENDPOINT)
        summary = summarize(new, ThresholdPolicy(option=0.0), baseline=base, run=ENDPOINT, settings=settings)
        fails[0] += not summary.gate.passed
        for j, limit in enumerate(DELTA_LIMITS if delta else ()):
            today = summarize(
                new,
                ThresholdPolicy(option=0.0, max_regression_option=limit),
                baseline=base,
                run=ENDPOINT,
                settings=GateSettings(regression="delta", case_pass=case_pass),
            )
            fails[1 + j] += not today.gate.passed
    return n, k, scenario, pairs, fails


def simulate(
    sizes: list[int], repeats: list[int], pairs: int, delta: bool, processes: int, case_pass: float | None = None
) -> None:
    """The table of gate failure rates per (N, k) and scenario."""
    chunk = 100
    tasks = [
        (
            n,
            k,
            scenario,
            min(chunk, pairs - start),
            zlib.crc32(f"{n} {k} {scenario} {start}".encode()),
            delta,
            case_pass,
        )
        for n in sizes
        for k in repeats
        for scenario in SCENARIOS
        for start in range(0, pairs, chunk)
    ]
    totals: dict[tuple[int, int, str], list[int]] = {}
    started = time.perf_counter()
    with multiprocessing.Pool(processes) as pool:
        for n, k, scenario, done, fails in pool.imap_unordered(cell, tasks):
            key = (n, k, scenario)
            acc = totals.setdefault(key, [0] * (len(fails) + 1))
            acc[0] += done
            for j, f in enumerate(fails):
                acc[1 + j] += f
    rule = "" if case_pass is None else f", [gate] case_pass = {case_pass:g}: a case passes on that share of its k"
    print(f"\n## The gate on simulated pairs ({pairs:,} per cell{rule}, {time.perf_counter() - started:.0f} s)\n")
    print(
        "Rate at which the gate fails the slice, with 2 standard errors. Targets: false alarms <= 5 % in "
        "every cell; a 10-point drop at N = 200, k = 1 caught >= 90 %; a 5-point drop at N = 200, k = 3 "
        "caught >= 90 %.\n"
    )
    head = ["N", "k", *SCENARIOS]
    if delta:
        head += [f"{s}, drop only, max {m:g}" for s in SCENARIOS for m in DELTA_LIMITS]
    print("| " + " | ".join(head) + " |")
    print("|" + "---:|" * len(head))
    for n in sizes:
        for k in repeats:
            cells = [str(n), str(k)]
            extra = []
            for scenario in SCENARIOS:
                acc = totals[(n, k, scenario)]
                cells.append(_rate(acc[1], acc[0], _target(n, k, scenario)))
                extra += [_rate(f, acc[0], None) for f in acc[2:]]
            print("| " + " | ".join(cells + extra) + " |", flush=True)


def _target(n: int, k: int, scenario: str) -> tuple[str, float] | None:
    if scenario == "no change":
        return ("<=", 0.05)
    if n == 200 and ((k == 1 and scenario == "10-point drop") or (k == 3 and scenario == "5-point drop")):
        return (">=", 0.90)
    return None


def _rate(fails: int, pairs: int, target: tuple[str, float] | None) -> str:
    rate = fails / pairs
    se = math.sqrt(max(rate * (1 - rate), 1e-12) / pairs)
    text = f"{rate:.1%} ± {2 * se:.1%}"
    if target is not None:
        sign, bound = target
        met = rate - 2 * se <= bound if sign == "<=" else rate + 2 * se >= bound
        text += " ✓" if met else " ✗"
    return text


# -- through pytest ---------------------------------------------------------------------------


def _pytest(folder: Path, *args: str) -> int:
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        "--prompt-suite",
        "cases.jsonl",
        "--prompt-min-pass-rate",
        "0",
        *args,
    ]
    return subprocess.run(cmd, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False).returncode


def _write(folder: Path, inputs: list[str]) -> None:
    lines = [
        json.dumps({"case_id": f"c{i:03d}", "input": text, "slice": "s", "must_include": ["ok"]})
        for i, text in enumerate(inputs)
    ]
    (folder / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def deterministic() -> None:
    """One 200-case slice on the fake model, default settings."""
    print("\n## Deterministic runs (fake model, 200 cases, default settings)\n")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        inputs = [f"ok {i}" if i % 9 else f"no {i}" for i in range(200)]  # some cases always fail
        _write(folder, inputs)
        base = _pytest(folder, "--prompt-report", "base")
        same = [_pytest(folder, "--prompt-baseline", "base") for _ in range(3)]
        worse = list(inputs)
        for i in [i for i, t in enumerate(inputs) if t.startswith("ok")][:10]:
            worse[i] = f"no {i}"
        _write(folder, worse)
        broken = [_pytest(folder, "--prompt-baseline", "base") for _ in range(3)]
    print(f"- baseline run exit {base}; unchanged against it: exits {same} (0 = gate holds)")
    print(f"- 10 regressions against it: exits {broken} (1 = the gate fails)")


def end_to_end(runs: int) -> None:
    """pytest against the seeded loopback server, and ``summarize`` on the rows it wrote."""
    from tests.loopback import serve

    print(f"\n## End to end: pytest against the seeded loopback server ({runs} pairs, N = 200, k = 3)\n")
    print("| pair | scenario | pytest exit | p (summary.json) | p (summarize) | verdicts agree |")
    print("|---:|---|---:|---:|---:|---|")
    rng = random.Random(7)
    with serve() as server, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "promptsuite.toml").write_text(
            f'[model]\nspec = "openai:loop"\nbase_url = "{server.base_url}"\nconcurrency = 16\n', encoding="utf-8"
        )
        env_args = ["--prompt-no-cache", "--prompt-repeat", "3"]
        for pair in range(runs):
            scenario = "10-point drop" if pair % 2 else "no change"
            p = population(200, rng)
            q = dropped(p, SCENARIOS[scenario], rng)
            _write(folder, [f"ok {i} <<pass {v:.4f}>>" for i, v in enumerate(p)])
            server.reset().knobs.seed = 2 * pair
            _pytest(folder, *env_args, "--prompt-report", "base")
            _write(folder, [f"ok {i} <<pass {v:.4f}>>" for i, v in enumerate(q)])
            server.reset().knobs.seed = 2 * pair + 1
            status = _pytest(folder, *env_args, "--prompt-baseline", "base", "--prompt-report", "now")
            print("| " + " | ".join(_agreement(folder, pair, scenario, status)) + " |", flush=True)


def _agreement(folder: Path, pair: int, scenario: str, status: int) -> list[str]:
    from pytest_promptsuite.results.io import load_results

    written = json.loads((folder / "now" / "summary.json").read_text("utf-8"))
    old_run = json.loads((folder / "base" / "summary.json").read_text("utf-8"))["run"]
    again = summarize(
        load_results(folder / "now"),
        ThresholdPolicy(option=0.0),
        baseline=Baseline(load_results(folder / "base"), "base", run=RunInfo.from_dict(old_run)),
        run=RunInfo.from_dict(written["run"]),
    )
    ours, theirs = again.slices[0], written["slices"][0]
    agree = (
        ours.test is not None
        and ours.test.p_regression == theirs["p_regression"]
        and ours.test.verdict == theirs["verdict"]
        and again.gate.passed == (status == 0)
    )
    p = ours.test.p_regression if ours.test is not None else float("nan")
    return [str(pair), scenario, str(status), f"{theirs['p_regression']:.3g}", f"{p:.3g}", "yes" if agree else "NO"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 200, 1000])
    parser.add_argument("--repeats", type=int, nargs="+", default=[1, 3, 5])
    parser.add_argument("--delta", action="store_true", help="also the drop-only rule (slower)")
    parser.add_argument("--e2e", type=int, default=6, help="end-to-end pairs against the loopback server")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--case-pass", type=float, default=None, help="judge cases by [gate] case_pass")
    parser.add_argument("--no-pytest", action="store_true", help="the simulation only")
    args = parser.parse_args()
    print(f"# gate_power (python {sys.version.split()[0]}, {os.cpu_count()} cpus)")
    simulate(args.sizes, args.repeats, args.pairs, args.delta, args.processes, args.case_pass)
    if args.no_pytest:
        return
    deterministic()
    if args.e2e:
        end_to_end(args.e2e)


if __name__ == "__main__":
    main()
