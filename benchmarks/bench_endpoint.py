"""Benchmark: a suite against an OpenAI-compatible server with 100 ms latency.

Starts ``tests/loopback.py`` in its own process, writes a suite of N cases (default 1,000) and
times, as whole processes (start-up included), in the same run:

1. ``fake``: pytest with the fake model (pytest's own cost for N cases, no calls);
2. ``async floor``: a bare asyncio client making the same N calls at the same concurrency
   (no pytest, raw HTTP/1.1 on keep-alive sockets: what the server and the network allow);
3. ``reference``: ``reference_client.py``, a minimal httpx asyncio client doing the same render
   and checks (what a team would write by hand);
4. ``endpoint``: pytest with ``openai:`` at ``--prompt-concurrency`` (default 32), no cache,
   with the server's in-flight count over time (how full the bound was, and how soon after the
   process started the first call came).

Each round runs the four in turn. The goal (issue 16): endpoint <= 1.2 x reference.
Then, with ``--fault-rate`` (default 0.2) of the attempts answered 429 or 500 (seeded, with
``retry-after-ms``), it checks every case is accounted for: one row each in results.jsonl,
passed, failed or error with a reason; none lost, none duplicated.

    python benchmarks/bench_endpoint.py [--cases 1000] [--concurrency 32] [--runs 3]

Exit status 0 when both goals hold.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any


ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


class Server:
    """``tests/loopback.py`` in a child process."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(
            [PYTHON, str(ROOT / "tests" / "loopback.py"), *args],
            stdout=subprocess.PIPE, text=True, env=env,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"the server did not start: {line!r}")
        self.port = int(line.split()[1])
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def stats(self, timeline: bool = False) -> dict[str, Any]:
        query = "?timeline=1" if timeline else ""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats{query}") as reply:
            return json.loads(reply.read())

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def write_suite(folder: Path, n: int) -> list[str]:
    ids = [f"case-{i:05d}" for i in range(n)]
    with (folder / "cases.jsonl").open("w", encoding="utf-8") as out:
        for i, case_id in enumerate(ids):
            text = f"question {i}: " + "lorem ipsum " * (i % 50)
            out.write(json.dumps({"case_id": case_id, "input": text, "slice": f"s{i % 6}",
                                  "must_include": [f"question {i}:"]}) + "\n")
    return ids


def timed(command: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("OPENAI_API_KEY", None)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)
    return time.perf_counter() - start, done


def pytest_command(*args: str) -> list[str]:
    return [PYTHON, "-m", "pytest", "--prompt-suite", "cases.jsonl", "-q", "-p", "no:randomly",
            "-p", "no:cacheprovider", "--tb=line", *args]


async def _floor(port: int, n: int, concurrency: int, folder: Path) -> None:
    prompts = [json.loads(line)["input"] for line in (folder / "cases.jsonl").open()]
    queue: asyncio.Queue[str] = asyncio.Queue()
    for prompt in prompts[:n]:
        queue.put_nowait(prompt)

    async def worker() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        while not queue.empty():
            prompt = queue.get_nowait()
            body = json.dumps({"model": "m", "messages": [{"role": "user", "content": prompt}]})
            data = body.encode()
            writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                         b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data))
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length"))
            json.loads(await reader.readexactly(length))
        writer.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))


def floor_command(port: int, n: int, concurrency: int, folder: Path) -> list[str]:
    code = (f"import asyncio, sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); "
            f"import bench_endpoint as b, pathlib; "
            f"asyncio.run(b._floor({port}, {n}, {concurrency}, pathlib.Path({str(folder)!r})))")
    return [PYTHON, "-c", code]


def run_once(command: list[str], cwd: Path, label: str) -> float:
    seconds, done = timed(command, cwd)
    if done.returncode not in (0, 1):
        sys.exit(f"{label} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return seconds


def in_flight(timeline: list[list[float]], since: float, concurrency: int) -> str:
    """How full the bound was: the server's in-flight count sampled every 5 ms from the first
    call's start to the last one's end, and how long after the process started the first call came."""
    spans = [(a, b) for a, b in timeline if a >= since and b is not None]
    if not spans:
        return "no calls"
    first, last = min(a for a, _ in spans), max(b for _, b in spans)
    steps = max(1, int((last - first) / 0.005))
    counts = [0] * (steps + 1)
    for a, b in spans:
        for i in range(int((a - first) / 0.005), min(steps, int((b - first) / 0.005)) + 1):
            counts[i] += 1
    full = sum(c >= concurrency for c in counts) / len(counts)
    mean = sum(counts) / len(counts)
    return (f"first call {first - since:.2f} s after the process started; calls over {last - first:.2f} s; "
            f"in flight: mean {mean:.1f} of {concurrency}, at the bound {full:.0%} of that time")


def latency_bound(args: argparse.Namespace, folder: Path) -> bool:
    """The plugin against a minimal asyncio client (``reference_client.py``) and the raw floor,
    in turn, ``--runs`` rounds; the plugin's wall time over the reference's is the figure."""
    ideal = args.cases * args.latency_ms / 1000 / args.concurrency
    server = Server("--latency-ms", str(args.latency_ms))
    endpoint_args = ["--prompt-model", "openai:bench", "--prompt-base-url", server.base_url,
                     "--prompt-concurrency", str(args.concurrency), "--prompt-no-cache"]
    commands = {
        "pytest, fake model": pytest_command(),
        "async floor (raw asyncio client)": floor_command(server.port, args.cases, args.concurrency, folder),
        "reference (httpx asyncio client)": [PYTHON, str(ROOT / "benchmarks" / "reference_client.py"),
                                             "cases.jsonl", server.base_url, "--concurrency",
                                             str(args.concurrency)],
        f"pytest, openai: at {args.concurrency}": pytest_command(*endpoint_args),
    }
    times: dict[str, list[float]] = {label: [] for label in commands}
    flight = ""
    try:
        print(f"N={args.cases}, latency {args.latency_ms:g} ms, concurrency {args.concurrency}: "
              f"ideal {ideal:.3f} s; {args.runs} rounds, each command in turn", flush=True)
        for _ in range(args.runs):
            for label, command in commands.items():
                since = time.monotonic()
                times[label].append(run_once(command, folder, label))
                if label.startswith("pytest, openai"):
                    timeline = server.stats(timeline=True)["timeline"]
                    flight = in_flight(timeline, since, args.concurrency)
        stats = server.stats()
    finally:
        server.stop()
    medians = {label: statistics.median(values) for label, values in times.items()}
    for label, values in times.items():
        print(f"  {label:<36} median {medians[label]:6.2f} s  [{min(values):.2f}-{max(values):.2f}]")
    endpoint = medians[f"pytest, openai: at {args.concurrency}"]
    reference = medians["reference (httpx asyncio client)"]
    print(f"  server's peak in flight: {stats['max_in_flight']}; last plugin run: {flight}")
    print(f"  plugin / reference = {endpoint / reference:.2f}; plugin / ideal = {endpoint / ideal:.2f}; "
          f"plugin / raw floor = {endpoint / medians['async floor (raw asyncio client)']:.2f}")
    ok = endpoint <= 1.2 * reference
    print(f"  goal: plugin {endpoint:.2f} s <= 1.2 x reference = {1.2 * reference:.2f} s: "
          f"{'MET' if ok else 'NOT MET'}", flush=True)
    return ok


def faults(args: argparse.Namespace, folder: Path, ids: list[str]) -> bool:
    server = Server("--latency-ms", str(args.latency_ms), "--fail-rate", str(args.fault_rate),
                    "--retry-after-ms", "200", "--seed", "1234")
    try:
        seconds, done = timed(pytest_command(
            "--prompt-model", "openai:bench", "--prompt-base-url", server.base_url,
            "--prompt-concurrency", str(args.concurrency), "--prompt-no-cache",
            "--prompt-report", "fault-report"), folder)
        stats = server.stats()
    finally:
        server.stop()
    rows = [json.loads(line) for line in (folder / "fault-report" / "results.jsonl").open()]
    seen = Counter(row["case_id"] for row in rows)
    outcomes = Counter(row["outcome"] for row in rows)
    reasons = Counter(row["error"].split(" from ")[0] for row in rows if row["outcome"] == "error")
    lost = sorted(set(ids) - set(seen))
    twice = sorted(case for case, count in seen.items() if count > 1)
    unexplained = [row["case_id"] for row in rows if row["outcome"] == "error" and not row["error"]]
    print(f"faults: {args.fault_rate:.0%} of attempts answered 429/500 (seeded, retry-after-ms "
          f"200), N={args.cases}: {seconds:.2f} s, exit {done.returncode}")
    print(f"  server: {stats['requests']} requests, statuses {stats['statuses']}")
    print(f"  rows {len(rows)}; outcomes {dict(outcomes)}; error reasons {dict(reasons)}")
    print(f"  lost {len(lost)}, duplicated {len(twice)}, errors without a reason {len(unexplained)}")
    return not lost and not twice and not unexplained and len(rows) == len(ids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--fault-rate", type=float, default=0.2)
    parser.add_argument("--skip-faults", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-endpoint-") as tmp:
        folder = Path(tmp)
        ids = write_suite(folder, args.cases)
        ok = latency_bound(args, folder)
        if not args.skip_faults:
            ok = faults(args, folder, ids) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
