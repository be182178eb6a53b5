"""Per-case overhead of ``pytest --prompt-suite`` against a plain parametrized pytest test.

Both runs see the same JSONL suite (about 5 % of cases failing) and do the same work per case: echo
the input (the fake model) and check every ``must_include`` / ``must_not_include`` substring. The
plain test is what a team would write by hand; the ratio is the price of the plugin.

    python benchmarks/bench_overhead.py                 # N = 10,000 and 50,000, 3 runs / 1 run
    python benchmarks/bench_overhead.py --sizes 2000 --runs 5
    python benchmarks/bench_overhead.py --instructions --sizes 1000 3000   # valgrind: no noise

Runs alternate (plain, plugin, plain, ...) so machine noise hits both; medians are reported, with
each run's peak resident memory and CPU time (user + system: on a shared machine the CPU ratio
moves less than the wall ratio, which other processes stretch). The plain run uses ``--tb=line``;
the plugin writes its report (``--prompt-report``). Both run in a user's environment
(``userenv.py``: bytecode cached, only the plugins a core install autoloads, the plugin loaded in
both). Goal (issue 16, N = 50,000): wall <= 1.1x plain, peak memory <= 2 KB per case over plain's.
On a shared machine the wall time of one side moves by 10 % from run to run; ``--instructions``
counts each run's instructions under valgrind instead (the same count every time), at two sizes:
the difference is each side's instructions per case, which is what the ratio at 50,000 tends to.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from userenv import CORE_PLUGINS
from userenv import user_env


PLAIN_TEST = """
import json
from pathlib import Path

import pytest

CASES = [json.loads(line) for line in Path(__file__).with_name("cases.jsonl").open(encoding="utf-8")
         if line.strip()]


def fake_model(prompt):
    return prompt


@pytest.mark.parametrize("case", CASES, ids=[c["case_id"] for c in CASES])
def test_case(case):
    output = fake_model(case["input"])
    missing = [t for t in case["must_include"] if t not in output]
    forbidden = [t for t in case["must_not_include"] if t in output]
    assert not missing and not forbidden, (missing, forbidden)
"""

SLICES = ["退款", "物流", "提示词注入", "信息不足", "账户", "billing"]
WORDS = "the order refund policy shipping account 未提供 订单 退款 物流 please thanks item".split()


def make_suite(folder: Path, n: int, seed: int = 1234, fail_share: float = 0.05) -> int:
    """Write ``cases.jsonl`` with ``n`` cases; return how many are designed to fail."""
    rng = random.Random(seed)
    failing = 0
    with (folder / "cases.jsonl").open("w", encoding="utf-8") as fp:
        for i in range(n):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 120)))
            must = [rng.choice(text.split())]
            must_not = ["sk-live"]
            if rng.random() < fail_share:
                failing += 1
                must.append("NOT-THERE")
            case = {
                "case_id": f"case-{i:06d}",
                "input": text,
                "slice": SLICES[i % len(SLICES)],
                "must_include": must,
                "must_not_include": must_not,
            }
            fp.write(json.dumps(case, ensure_ascii=False) + "\n")
    (folder / "test_plain.py").write_text(PLAIN_TEST, encoding="utf-8")
    return failing


def timed(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """(wall seconds, peak resident memory in MB, CPU seconds) of one run (``wait4``: that
    child's own peak and time)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1):
            err.seek(0)
            sys.exit(f"{' '.join(cmd)} exited {code}:\n{err.read().decode()[-2000:]}")
    return elapsed, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


Runs = list[tuple[float, float, float]]


def row(n: int, failing: int, label: str, plain: Runs, ours: Runs) -> str:
    """One line of the table: medians of each side, the ratios, memory per case over plain."""
    p, o = statistics.median(t for t, _, _ in plain), statistics.median(t for t, _, _ in ours)
    pm, om = statistics.median(m for _, m, _ in plain), statistics.median(m for _, m, _ in ours)
    pc, oc = statistics.median(c for _, _, c in plain), statistics.median(c for _, _, c in ours)
    return (
        f"| {n:,} | {failing:,} | {label} | {p:.2f} | {o:.2f} | {o / p:.2f} | {pm:.0f} | {om:.0f} "
        f"| {(om - pm) * 1024 / n:.2f} | {pc:.2f} | {oc:.2f} | {oc / pc:.2f} | {len(ours)} |"
    )


def instructions(cmd: list[str], cwd: Path, env: dict[str, str]) -> int:
    """The instructions one run executes, counted by ``valgrind --tool=callgrind``: the same count
    for the same run whatever else the machine does (string hashing seeded, so dicts and sets
    are laid out alike every time)."""
    counting = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd]
    done = subprocess.run(counting, cwd=cwd, capture_output=True, text=True, env={**env, "PYTHONHASHSEED": "0"})
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode not in (0, 1) or found is None:
        sys.exit(f"{' '.join(counting)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def per_case_instructions(
    sizes: list[int],
    pytest_cmd: list[str],
    plugin_args: list[str],
    env: dict[str, str],
    before_env: dict[str, str] | None = None,
) -> None:
    """Each side's instructions per case, from two suite sizes (the slope: start-up cancels out),
    and the whole runs' counts: what the wall ratio at 50,000 cases tends to, without the noise."""
    small, large = sorted(sizes)[:2]
    counts: dict[str, dict[int, int]] = {"plain": {}, "promptsuite": {}}
    if before_env is not None:
        counts["before"] = {}
    for n in (small, large):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            make_suite(folder, n)
            timed([*pytest_cmd, *plugin_args, "--co"], folder, env)  # a warm-up: pytest's rewritten bytecode
            if before_env is not None:  # and the other tree's bytecode (its first run would count compiling it)
                timed([*pytest_cmd, *plugin_args, "--co"], folder, before_env)
            counts["plain"][n] = instructions([*pytest_cmd, "test_plain.py"], folder, env)
            counts["promptsuite"][n] = instructions([*pytest_cmd, *plugin_args], folder, env)
            if before_env is not None:
                counts["before"][n] = instructions([*pytest_cmd, *plugin_args], folder, before_env)
    print(f"# instructions (valgrind --tool=callgrind), N = {small:,} and {large:,}")
    print("| side | instructions at N small | at N large | per case (slope) |")
    print("|---|---:|---:|---:|")
    slope = {side: (c[large] - c[small]) / (large - small) for side, c in counts.items()}
    for side, c in counts.items():
        print(f"| {side} | {c[small]:,} | {c[large]:,} | {slope[side]:,.0f} |")
    print(
        f"per case: promptsuite / plain = {slope['promptsuite'] / slope['plain']:.3f}; whole runs at "
        f"N = {large:,}: {counts['promptsuite'][large] / counts['plain'][large]:.3f}"
    )
    if before_env is not None:
        print(f"per case: before / plain = {slope['before'] / slope['plain']:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000])
    parser.add_argument("--runs", type=int, default=0, help="runs per size (default: 3, or 1 at 50,000+)")
    parser.add_argument(
        "--before",
        type=Path,
        metavar="SRC",
        help="also run the plugin from SRC (a checkout of an earlier commit: its package "
        "goes first on PYTHONPATH) in the same rounds, for a before/after figure",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count instructions under valgrind instead of timing (two --sizes, e.g. 1000 3000: "
        "the per-case slope; about 1 ms of native run is 50 ms under valgrind)",
    )
    args = parser.parse_args()
    pytest_cmd = [sys.executable, "-m", "pytest", *CORE_PLUGINS, "-p", "no:cacheprovider", "-q", "--tb=line"]
    plugin_args = ["--prompt-suite", "cases.jsonl", "--prompt-min-pass-rate", "0", "--prompt-report", "report"]
    env = user_env()
    before_env = None
    if args.before is not None:
        before_env = user_env(PYTHONPATH=str(args.before.resolve()))
    if args.instructions:
        per_case_instructions(args.sizes, pytest_cmd, plugin_args, env, before_env)
        return
    env_note = f"python {sys.version.split()[0]}, {os.cpu_count()} cpus"
    print(f"# bench_overhead ({env_note}); plain: pytest --tb=line; promptsuite: --prompt-report on")
    print(
        "| N | failing | promptsuite from | plain pytest s | promptsuite s | ratio | plain peak MB "
        "| promptsuite peak MB | KB per case over plain | plain CPU s | promptsuite CPU s | CPU ratio | runs |"
    )
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        runs = args.runs or (1 if n >= 50_000 else 3)
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            failing = make_suite(folder, n)
            plain: Runs = []
            ours: Runs = []
            before: Runs = []
            timed([*pytest_cmd, *plugin_args, "--co"], folder, env)  # a warm-up: pytest's rewritten bytecode
            for _ in range(runs):
                plain.append(timed([*pytest_cmd, "test_plain.py"], folder, env))
                ours.append(timed([*pytest_cmd, *plugin_args], folder, env))
                if before_env is not None:
                    before.append(timed([*pytest_cmd, *plugin_args], folder, before_env))
            print(row(n, failing, "this tree", plain, ours), flush=True)
            if before:
                print(row(n, failing, str(args.before), plain, before), flush=True)


if __name__ == "__main__":
    main()
