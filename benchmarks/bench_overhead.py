"""Per-case overhead of ``pytest --prompt-suite`` against a plain parametrized pytest test.

Both runs see the same JSONL suite (about 5 % of cases failing) and do the same work per case: echo
the input (the fake model) and check every ``must_include`` / ``must_not_include`` substring. The
plain test is what a team would write by hand; the ratio is the price of the plugin.

    python benchmarks/bench_overhead.py                 # N = 10,000 and 50,000, 3 runs / 1 run
    python benchmarks/bench_overhead.py --sizes 2000 --runs 5

Runs alternate (plain, plugin, plain, ...) so machine noise hits both; medians are reported.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


PLAIN_TEST = '''
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
'''

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
            case = {"case_id": f"case-{i:06d}", "input": text, "slice": SLICES[i % len(SLICES)],
                    "must_include": must, "must_not_include": must_not}
            fp.write(json.dumps(case, ensure_ascii=False) + "\n")
    (folder / "test_plain.py").write_text(PLAIN_TEST, encoding="utf-8")
    return failing


def timed(cmd: list[str], cwd: Path) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return elapsed, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000])
    parser.add_argument("--runs", type=int, default=0, help="runs per size (default: 3, or 1 at 50,000+)")
    args = parser.parse_args()
    pytest_cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
    env_note = f"python {sys.version.split()[0]}, {os.cpu_count()} cpus"
    print(f"# bench_overhead ({env_note})")
    print("| N | failing | plain pytest s (median) | promptsuite s (median) | ratio | runs |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        runs = args.runs or (1 if n >= 50_000 else 3)
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            failing = make_suite(folder, n)
            plain: list[float] = []
            ours: list[float] = []
            for _ in range(runs):
                plain.append(timed([*pytest_cmd, "test_plain.py"], folder)[0])
                ours.append(
                    timed([*pytest_cmd, "--prompt-suite", "cases.jsonl", "--prompt-min-pass-rate", "0"], folder)[0]
                )
            p, o = statistics.median(plain), statistics.median(ours)
            print(f"| {n:,} | {failing:,} | {p:.2f} | {o:.2f} | {o / p:.2f} | {runs} |", flush=True)


if __name__ == "__main__":
    main()
