"""Batch mode end to end: N cases (default 10,000) through the loopback server's Batch API, against
the same cases as direct calls to the same server, in one run.

Starts ``tests/loopback.py`` (its chat endpoint and its Batch API, ``tests/loopback_batch.py``) in
its own process, writes a suite of N cases (about 5 % designed to fail their checks) and runs:

1. ``direct``: ``pytest --prompt-suite`` with ``openai:`` at concurrency 32, no cache;
2. ``batch``: the same with ``--prompt-batch``: one job, polled until it ends;
3. ``batch file``: ``--prompt-batch-file`` (the request file, checked against the OpenAI batch
   format: one ``{"custom_id", "method", "url", "body"}`` a line).

It then compares ``results.jsonl`` of the first two row by row (outcome, output, checks, prompt
hash): the goal (issue 16) is the same results, none lost, and no direct call in batch mode.

    python benchmarks/bench_batch.py [--cases 10000]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any


sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_endpoint import Server  # noqa: E402
from bench_endpoint import pytest_command  # noqa: E402
from bench_endpoint import timed  # noqa: E402


def write_suite(folder: Path, n: int) -> list[str]:
    ids = [f"case-{i:05d}" for i in range(n)]
    with (folder / "cases.jsonl").open("w", encoding="utf-8") as out:
        for i, case_id in enumerate(ids):
            must = [f"question {i}:"] + (["NOT-THERE"] if i % 20 == 7 else [])
            out.write(
                json.dumps(
                    {
                        "case_id": case_id,
                        "input": f"question {i}: " + "lorem ipsum " * (i % 40),
                        "slice": f"s{i % 6}",
                        "must_include": must,
                    }
                )
                + "\n"
            )
    return ids


def rows_of(path: Path) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for line in path.open(encoding="utf-8"):
        row = json.loads(line)
        rows[row["case_id"]] = row
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    args = parser.parse_args()
    server = Server()
    common = [
        "--prompt-model",
        "openai:bench",
        "--prompt-base-url",
        server.base_url,
        "--prompt-concurrency",
        "32",
        "--prompt-no-cache",
        "--prompt-min-pass-rate",
        "0",
    ]
    try:
        with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
            folder = Path(tmp)
            ids = write_suite(folder, args.cases)
            seconds: dict[str, float] = {}
            calls: dict[str, int] = {}
            for label, extra in (
                ("direct", ["--prompt-report", "direct"]),
                ("batch", ["--prompt-batch", "--prompt-report", "batched"]),
                ("batch file", ["--prompt-batch-file", "requests.jsonl"]),
            ):
                before = server.stats()["requests"]
                seconds[label], done = timed(pytest_command(*common, *extra), folder)
                calls[label] = server.stats()["requests"] - before
                if done.returncode not in (0, 1):
                    sys.exit(f"{label} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
            direct = rows_of(folder / "direct" / "results.jsonl")
            batched = rows_of(folder / "batched" / "results.jsonl")
            lines = [json.loads(line) for line in (folder / "requests.jsonl").open(encoding="utf-8")]
    finally:
        server.stop()
    lost = sorted(set(ids) - set(batched))
    keys = ("outcome", "output", "checks", "prompt_hash", "usage")
    differ = [i for i in ids if i in batched and any(direct[i][k] != batched[i][k] for k in keys)]
    formatted = all(
        set(line) == {"custom_id", "method", "url", "body"}
        and line["method"] == "POST"
        and line["url"] == "/v1/chat/completions"
        and "messages" in line["body"]
        for line in lines
    )
    outcomes: dict[str, int] = {}
    for row in batched.values():
        outcomes[row["outcome"]] = outcomes.get(row["outcome"], 0) + 1
    print(f"# bench_batch: {args.cases:,} cases against the loopback server (no latency)")
    for label, value in seconds.items():
        print(f"  {label:<11} {value:7.2f} s, {calls[label]:,} direct calls")
    print(
        f"  batch rows {len(batched):,} (outcomes {outcomes}); lost {len(lost)}; differing from direct "
        f"calls {len(differ)}; request file {len(lines):,} lines, OpenAI batch format: {formatted}"
    )
    ok = (
        not lost
        and not differ
        and calls["batch"] == 0
        and calls["batch file"] == 0
        and formatted
        and len(lines) == args.cases
    )
    print(f"  goal: same results as direct calls, 0 lost, the OpenAI format: {'MET' if ok else 'NOT MET'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
