"""What the static prompt check costs: collecting a suite whose template reads fields, against the
same cases with a template that reads none (the reference, in the same go), and ``promptsuite
validate`` (collection plus a dry render of every case in every variant).

The suite: N cases, two variants, each a template file reading ``input`` and three ``vars``
fields. Each command runs in a child process (imports included, as a user sees it); medians of
``--runs``.

    python benchmarks/bench_validate.py                  # N = 10,000, 3 runs
    python benchmarks/bench_validate.py --cases 2000 --runs 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def write_suite(folder: Path, cases: int, *, reads: bool) -> Path:
    """A suite of ``cases`` cases in two variants; ``reads``: the templates read four fields."""
    folder.mkdir(parents=True)
    body = "Tier: {tier}\nCity: {city}\nTone: {tone}\nQuestion: {input}\n" if reads else "A fixed prompt.\n"
    (folder / "v1.txt").write_text("You are a travel agent.\n" + body, encoding="utf-8")
    (folder / "v2.txt").write_text("You are a careful travel agent.\n" + body, encoding="utf-8")
    renderer = "format" if reads else "none"
    (folder / "promptsuite.toml").write_text(
        f'[suite]\ncases = ["cases.jsonl"]\n[template]\ntemplate_file = "v1.txt"\nrenderer = "{renderer}"\n'
        '[variants.v1]\n[variants.v2]\ntemplate_file = "v2.txt"\n',
        encoding="utf-8",
    )
    with (folder / "cases.jsonl").open("w", encoding="utf-8") as out:
        for i in range(cases):
            row = {
                "case_id": f"trip-{i:06d}",
                "input": f"Can I change flight {i}?",
                "slice": f"s{i % 5}",
                "must_include": ["flight"],
            }
            if reads:
                row["vars"] = {"tier": "gold", "city": "Oslo", "tone": "dry"}
            out.write(json.dumps(row) + "\n")
    return folder


def _time(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    """Print the medians and the ratios against the reference."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        plain = write_suite(root / "plain", args.cases, reads=False)
        fields = write_suite(root / "fields", args.cases, reads=True)
        collect = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "--prompt-suite"]
        validate = [sys.executable, "-m", "pytest_promptsuite", "validate"]
        timings: dict[str, list[float]] = {"reference": [], "collect": [], "validate": []}
        for _ in range(args.runs):
            timings["reference"].append(_time([*collect, str(plain)], root))
            timings["collect"].append(_time([*collect, str(fields)], root))
            timings["validate"].append(_time([*validate, str(fields)], root))
    ref = statistics.median(timings["reference"])
    items = 2 * args.cases
    print(f"{args.cases:,} cases x 2 variants = {items:,} items, median of {args.runs} runs")
    print(f"  pytest --collect-only, templates read nothing (reference): {ref:6.2f} s")
    for name, label in (
        ("collect", "pytest --collect-only, templates read 4 fields"),
        ("validate", "promptsuite validate (collection + dry render)"),
    ):
        value = statistics.median(timings[name])
        print(f"  {label + ':':<58}{value:6.2f} s  ({value / ref:.2f}x)")


if __name__ == "__main__":
    main()
