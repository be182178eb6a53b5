"""Benchmark: a suite against a rate-limited OpenAI-compatible server, fixed concurrency against ``auto``.

Starts ``tests/loopback.py`` with a token bucket (default 200 requests/s, burst 20, 100 ms a call; past it a 429
with ``retry-after-ms`` and OpenAI's ``x-ratelimit-*`` headers), a fresh server for each setting, and times, as
whole processes (start-up included), in the same go: pytest with the fake model (pytest's own start-up and work
for the N cases, no calls), then ``--prompt-concurrency 8``, ``64`` and ``auto`` (``[model] max_concurrency``
64, the default). For each it prints the wall time, the attempts and the share of them answered 429 (the
server's counts), the cases that ended as errors and the concurrency reached (``summary.json``). The goal
(issue 28): ``auto`` within 1.3 x the server's own limit (N / rate) plus the fake run's time, at most 10 % of
its attempts answered 429, no case an error.

    python benchmarks/bench_ratelimit.py [--cases 1000] [--rate 200] [--burst 20] [--latency-ms 100] [-n 2]

Exit status 0 when the goal holds.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_endpoint import Server
from bench_endpoint import pytest_command
from bench_endpoint import timed
from bench_endpoint import write_suite


SETTINGS = ("8", "64", "auto")


def run(folder: Path, args: argparse.Namespace, setting: str | None) -> dict[str, Any]:
    """Run the suite once at ``setting`` (None: the fake model) against a fresh server; return its figures."""
    server = None
    extra: list[str] = ["--prompt-no-cache", "--prompt-report", "report"]
    if args.workers:
        extra += ["-p", "xdist", "-n", str(args.workers)]
    if setting is not None:
        server = Server("--latency-ms", str(args.latency_ms), "--rate-rps", str(args.rate), "--burst", str(args.burst))
        config = (
            f'[model]\nspec = "openai:m"\nbase_url = "{server.base_url}"\nparams = {{ max_tokens = 16 }}\n'
            f"max_concurrency = {args.max_concurrency}\n"
        )
        (folder / "promptsuite.toml").write_text(config, encoding="utf-8")
        extra += ["--prompt-concurrency", setting]
    else:
        (folder / "promptsuite.toml").unlink(missing_ok=True)
    try:
        seconds, done = timed(pytest_command(*extra), folder)
        stats = server.stats() if server is not None else {}
    finally:
        if server is not None:
            server.stop()
    summary = json.loads((folder / "report" / "summary.json").read_text(encoding="utf-8"))
    calls = summary["run"]["models"][""].get("calls", {})
    requests = stats.get("requests", 0)
    refused = stats.get("statuses", {}).get("429", 0)
    return {
        "setting": setting or "fake",
        "seconds": seconds,
        "exit": done.returncode,
        "attempts": requests,
        "refused": refused,
        "share": refused / requests if requests else 0.0,
        "errors": summary["totals"]["error"],
        "reached": calls.get("reached", calls.get("concurrency", "-")),
        "reported_share": calls.get("refused_share"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=200)
    parser.add_argument("--burst", type=int, default=20)
    parser.add_argument("--latency-ms", type=float, default=100)
    parser.add_argument("--max-concurrency", type=int, default=64)
    parser.add_argument("-n", "--workers", type=int, default=0, help="pytest-xdist workers (0: none)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ratelimit-") as tmp:
        folder = Path(tmp)
        write_suite(folder, args.cases)
        run(folder, args, None)  # warm-up: bytecode, pytest's rewritten asserts
        rows = [run(folder, args, setting) for setting in (None, *SETTINGS)]
    limit_s = args.cases / args.rate
    fake_s = rows[0]["seconds"]
    print(
        f"{args.cases:,} cases, server limit {args.rate:g} requests/s (burst {args.burst}), "
        f"{args.latency_ms:g} ms a call: the limit allows {limit_s:.1f} s; pytest alone (fake model) {fake_s:.2f} s"
        + (f"; -n {args.workers}" if args.workers else "")
    )
    head = ("concurrency", "wall s", "x limit", "attempts", "429 share", "errors", "reached")
    print(f"{head[0]:<12} " + " ".join(f"{name:>9}" for name in head[1:]))
    for row in rows:
        over = (row["seconds"] - fake_s) / limit_s if row["setting"] != "fake" else 0.0
        print(
            f"{row['setting']:<12} {row['seconds']:>9.2f} {over:>9.2f} {row['attempts']:>9,} "
            f"{row['share']:>9.1%} {row['errors']:>9} {row['reached']!s:>9}"
        )
    auto = rows[-1]
    goal = auto["seconds"] <= 1.3 * limit_s + fake_s and auto["share"] <= 0.10 and auto["errors"] == 0
    print(
        f"goal (auto <= 1.3 x {limit_s:.1f} s + {fake_s:.2f} s = {1.3 * limit_s + fake_s:.2f} s, <= 10 % 429, "
        f"no error): {'met' if goal else 'NOT met'}"
    )
    sys.exit(0 if goal else 1)


if __name__ == "__main__":
    main()
