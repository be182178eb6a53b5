"""Benchmark: a suite against an OpenAI-compatible server with 100 ms latency.

Starts ``tests/loopback.py`` in its own process, writes a suite of N cases (default 1,000) and
times, as whole processes (start-up included), in the same run:

1. ``fake``: pytest with the fake model (pytest's own cost for N cases, no calls);
2. ``async floor``: a bare asyncio client making the same N calls at the same concurrency
   (no pytest, raw HTTP/1.1 on keep-alive sockets: what the server and the network allow), and
   ``runner alone``: the plugin's runner and OpenAI client making them with no pytest (its main
   thread waits): what the plugin's own call path allows, apart from pytest's work per case;
3. ``reference``: ``reference_client.py``, a minimal httpx asyncio client doing the same render
   and checks (what a team would write by hand), and ``aiohttp floor``: the same client on aiohttp
   (the floor a Python client reaches; issue 42 judges the plugin by it);
4. ``endpoint``: pytest with ``openai:`` at ``--prompt-concurrency`` (default 32), no cache;
5. the same with the response cache on (the default; emptied before each run).

Each round runs them in turn, after a warm-up run, in a user's environment (``userenv.py``:
bytecode cached, only the plugins a core install autoloads). For each it prints the CPU seconds the
command and the server used (``/proc``: is the server or the client the one that cannot keep up?)
and, from the server's log, the calls in flight over time: their mean from the first call's arrival
to the last one's answer, the share of that time at the bound, how long after the process started
the first call came (the ramp-up) and how soon the bound was first full. ``--profile-loop`` adds
one plugin run with ``loop_probe.py`` (each thread's CPU, the event loop's callbacks and lag, the
cases that waited). ``--reference REF`` adds the two plugin runs on the package as it was at git
commit REF to each round (before and after, in the same go). The goals: endpoint <= 1.2 x
reference (issue 16); endpoint <= 1.1 x the aiohttp floor's wall and at most 1 ms of CPU a call
beyond the fake model's (issue 42; CPU is what a loaded machine disturbs least: compare it).
Then, with ``--fault-rate`` (default 0.2) of the attempts answered 429 or 500 (seeded,
with ``retry-after-ms``), it checks every case is accounted for: one row each in results.jsonl,
passed, failed or error with a reason; none lost, none duplicated.

    python benchmarks/bench_endpoint.py [--cases 1000] [--concurrency 32] [--runs 3] [--profile-loop]
                                        [--reference REF]

Exit status 0 when both goals hold.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from userenv import CORE_PLUGINS
from userenv import user_env


ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


class Server:
    """``tests/loopback.py`` in a child process."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(
            [PYTHON, str(ROOT / "tests" / "loopback.py"), *args], stdout=subprocess.PIPE, text=True, env=env
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"the server did not start: {line!r}")
        self.port = int(line.split()[1])
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def cpu_s(self) -> float:
        """The server process's CPU time so far (user + system; Linux ``/proc``), to tell a server
        that cannot keep up from a client that does not send."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

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
            out.write(
                json.dumps(
                    {"case_id": case_id, "input": text, "slice": f"s{i % 6}", "must_include": [f"question {i}:"]}
                )
                + "\n"
            )
    return ids


def timed(command: list[str], cwd: Path, package: Path | None = None) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Run ``command`` once; ``package``: a folder holding another ``pytest_promptsuite`` to load."""
    paths = [*([str(package)] if package is not None else []), str(ROOT), str(ROOT / "benchmarks")]
    env = user_env(PYTHONPATH=os.pathsep.join(paths))
    env.pop("OPENAI_API_KEY", None)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)
    return time.perf_counter() - start, done


def pytest_command(*args: str) -> list[str]:
    """pytest with the plugins a core install autoloads (``userenv.py``: the test extra's are not
    loaded, as for a user who installed the plugin with its core dependencies)."""
    return [
        PYTHON,
        "-m",
        "pytest",
        "--prompt-suite",
        "cases.jsonl",
        "-q",
        *CORE_PLUGINS,
        "-p",
        "no:cacheprovider",
        "--tb=line",
        *args,
    ]


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
            writer.write(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data)
            )
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
            )
            json.loads(await reader.readexactly(length))
        writer.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))


def _runner_alone(port: int, n: int, concurrency: int, folder: Path) -> None:
    """The plugin's own call path without pytest: its runner (event loop thread, bound) and its
    OpenAI client make the same calls while the main thread only waits."""
    from pytest_promptsuite.models.model_api import ModelRequest
    from pytest_promptsuite.models.openai import OpenAIModel
    from pytest_promptsuite.models.runner import ModelRunner

    prompts = [json.loads(line)["input"] for line in (folder / "cases.jsonl").open()]
    runner = ModelRunner(concurrency)
    model = runner.attach(OpenAIModel("bench", base_url=f"http://127.0.0.1:{port}/v1"))
    with runner.batch_submits():
        futures = [runner.submit(model, ModelRequest(prompt)) for prompt in prompts[:n]]
    for future in futures:
        future.result()
    runner.close()


def floor_command(port: int, n: int, concurrency: int, folder: Path, what: str = "floor") -> list[str]:
    """``_floor`` (or another function of this module, ``what``) in a process of its own."""
    call = f"b._{what}({port}, {n}, {concurrency}, pathlib.Path({str(folder)!r}))"
    code = (
        f"import asyncio, sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); "
        f"import bench_endpoint as b, pathlib; " + (f"asyncio.run({call})" if what == "floor" else call)
    )
    return [PYTHON, "-c", code]


@dataclasses.dataclass(frozen=True)
class Flight:
    """How full the bound was, from the server's side: each call from its arrival at the handler
    to its answer, counted exactly (not sampled)."""

    calls: int
    first_call_s: float  # from the process's start to the first call's arrival: the ramp-up
    span_s: float  # from the first call's arrival to the last one's answer
    mean: float  # calls in flight, averaged over the span
    at_bound: float  # share of the span with ``concurrency`` calls in flight
    bound_reached_s: float | None  # from the first call until the bound was first full


@dataclasses.dataclass(frozen=True)
class Sample:
    """One command's run: its wall time, the CPU seconds it and the server used, its calls."""

    wall_s: float
    client_cpu_s: float
    server_cpu_s: float
    flight: Flight | None


def in_flight(timeline: list[list[float]], since: float, concurrency: int) -> Flight | None:
    """The calls that arrived after ``since`` (the process's start), as a :class:`Flight`."""
    spans = [(a, b) for a, b in timeline if a >= since and b is not None]
    if not spans:
        return None
    events = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    first, last = events[0][0], events[-1][0]
    count, area, full, reached = 0, 0.0, 0.0, None
    for (when, step), (after, _) in zip(events, events[1:], strict=False):
        count += step
        area += count * (after - when)
        if count >= concurrency:
            full += after - when
            reached = when - first if reached is None else reached
    span = max(last - first, 1e-9)
    return Flight(len(spans), first - since, span, area / span, full / span, reached)


def measure(
    command: list[str], cwd: Path, label: str, server: Server, concurrency: int, package: Path | None = None
) -> Sample:
    """Run ``command`` once; a failure (exit status other than 0 or 1) ends the benchmark."""
    before, server_before = resource.getrusage(resource.RUSAGE_CHILDREN), server.cpu_s()
    since = time.monotonic()
    seconds, done = timed(command, cwd, package)
    after, server_after = resource.getrusage(resource.RUSAGE_CHILDREN), server.cpu_s()
    if done.returncode not in (0, 1):
        sys.exit(f"{label} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    if "loop_probe" in command:
        print(done.stderr.rstrip())
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    flight = in_flight(server.stats(timeline=True)["timeline"], since, concurrency)
    return Sample(seconds, cpu, server_after - server_before, flight)


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _row(label: str, samples: list[Sample]) -> str:
    """One command's line: medians over the rounds."""
    walls = [s.wall_s for s in samples]
    cpus = [s.client_cpu_s for s in samples]
    server = _median([s.server_cpu_s for s in samples])
    line = (
        f"  {label:<34} {statistics.median(walls):6.2f} s [{min(walls):.2f}-{max(walls):.2f}]"
        f"  cpu {statistics.median(cpus):5.2f} s [{min(cpus):.2f}-{max(cpus):.2f}], server {server:4.2f} s"
    )
    flights = [s.flight for s in samples if s.flight is not None]
    if not flights:
        return line
    reached = _median([f.bound_reached_s for f in flights])
    return (
        line + f"  | first call {_median([f.first_call_s for f in flights]):.2f} s, calls over "
        f"{_median([f.span_s for f in flights]):.2f} s, in flight {_median([f.mean for f in flights]):4.1f}, "
        f"at the bound {_median([f.at_bound for f in flights]):.0%}, bound full after "
        + ("never" if reached is None else f"{reached:.2f} s")
    )


def export_package(ref: str, folder: Path) -> Path:
    """The package as it was at git commit ``ref``, exported into ``folder``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "pytest_promptsuite"], capture_output=True, check=True
    ).stdout
    folder.mkdir()
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def latency_bound(args: argparse.Namespace, folder: Path) -> bool:
    """The plugin against a minimal asyncio client (``reference_client.py``) and the raw floor,
    in turn, ``--runs`` rounds; the plugin's wall time over the reference's is the figure, and
    each one's calls in flight on the server say how full each kept the bound."""
    ideal = args.cases * args.latency_ms / 1000 / args.concurrency
    server = Server("--latency-ms", str(args.latency_ms))
    endpoint_args = [
        "--prompt-model",
        "openai:bench",
        "--prompt-base-url",
        server.base_url,
        "--prompt-concurrency",
        str(args.concurrency),
        "--prompt-no-cache",
    ]
    plugin = f"pytest, openai: at {args.concurrency}"
    commands = {
        "pytest, fake model": pytest_command(),
        "async floor (raw asyncio client)": floor_command(server.port, args.cases, args.concurrency, folder),
        # the plugin's runner and client without pytest: what its own call path keeps in flight
        "runner alone (no pytest)": floor_command(server.port, args.cases, args.concurrency, folder, "runner_alone"),
        "reference (httpx asyncio client)": [
            PYTHON,
            str(ROOT / "benchmarks" / "reference_client.py"),
            "cases.jsonl",
            server.base_url,
            "--concurrency",
            str(args.concurrency),
        ],
        AIOHTTP_FLOOR: [
            PYTHON,
            str(ROOT / "benchmarks" / "reference_client.py"),
            "cases.jsonl",
            server.base_url,
            "--concurrency",
            str(args.concurrency),
            "--aiohttp",
        ],
        plugin: pytest_command(*endpoint_args),
        # the default: answers stored in the response cache (emptied before each run)
        f"{plugin}, cache on": pytest_command(*endpoint_args[:-1], "--prompt-cache", "bench-cache"),
    }
    packages: dict[str, Path] = {}
    if args.reference:  # the same two plugin runs on the package at another commit, in turn
        package = export_package(args.reference, folder.with_name(folder.name + "-reference"))
        for label in (plugin, f"{plugin}, cache on"):
            commands[f"{label} @{args.reference}"] = commands[label]
            packages[f"{label} @{args.reference}"] = package
    samples: dict[str, list[Sample]] = {label: [] for label in commands}
    try:
        print(
            f"N={args.cases}, latency {args.latency_ms:g} ms, concurrency {args.concurrency}: "
            f"ideal {ideal:.3f} s; {args.runs} rounds, each command in turn; medians "
            f"(wall [range], CPU of the command and of the server, the server's calls in flight)",
            flush=True,
        )
        for label, command in commands.items():  # a warm-up: pytest's rewritten plugin bytecode, each package's
            if label.startswith("pytest"):
                timed(command, folder, packages.get(label))
        for _ in range(args.runs):
            for label, command in commands.items():
                shutil.rmtree(folder / "bench-cache", ignore_errors=True)
                samples[label].append(measure(command, folder, label, server, args.concurrency, packages.get(label)))
        if args.profile_loop:
            print("  one more plugin run with benchmarks/loop_probe.py:")
            measure(pytest_command(*endpoint_args, "-p", "loop_probe"), folder, plugin, server, args.concurrency)
        stats = server.stats()
    finally:
        server.stop()
        shutil.rmtree(folder.with_name(folder.name + "-reference"), ignore_errors=True)
    for label, values in samples.items():
        print(_row(label, values))
    medians = {label: statistics.median(s.wall_s for s in values) for label, values in samples.items()}
    endpoint, reference = medians[plugin], medians["reference (httpx asyncio client)"]
    print(f"  server's peak in flight: {stats['max_in_flight']}")
    print(
        f"  plugin / reference = {endpoint / reference:.2f}; plugin / ideal = {endpoint / ideal:.2f}; "
        f"plugin / raw floor = {endpoint / medians['async floor (raw asyncio client)']:.2f}"
    )
    if args.reference:
        before = medians[f"{plugin} @{args.reference}"]
        print(f"  plugin / the plugin at {args.reference} = {endpoint / before:.2f}")
    ok = endpoint <= 1.2 * reference
    print(
        f"  goal: plugin {endpoint:.2f} s <= 1.2 x reference = {1.2 * reference:.2f} s: {'MET' if ok else 'NOT MET'}",
        flush=True,
    )
    return floor_goal(args.cases, samples, plugin) and ok


AIOHTTP_FLOOR = "aiohttp floor (aiohttp asyncio client)"


def floor_goal(cases: int, samples: dict[str, list[Sample]], plugin: str) -> bool:
    """Print the plugin against the aiohttp floor (wall, calls a second) and its CPU a call beyond the fake model's;
    True when it is within 1.1 x the floor's wall and 1 ms of CPU a call."""
    wall = {label: statistics.median(s.wall_s for s in values) for label, values in samples.items()}
    per_call = {
        label: 1000 * statistics.median(s.client_cpu_s for s in values) / cases for label, values in samples.items()
    }
    endpoint, floor = wall[plugin], wall[AIOHTTP_FLOOR]
    beyond = per_call[plugin] - per_call["pytest, fake model"]
    print(
        f"  plugin / aiohttp floor = {endpoint / floor:.2f} (wall); calls a second {cases / endpoint:.0f} vs "
        f"{cases / floor:.0f} ({floor / endpoint:.0%} of the floor's)\n"
        f"  CPU a call (process and children): plugin {per_call[plugin]:.2f} ms, fake model "
        f"{per_call['pytest, fake model']:.2f} ms, aiohttp floor {per_call[AIOHTTP_FLOOR]:.2f} ms, httpx reference "
        f"{per_call['reference (httpx asyncio client)']:.2f} ms: the plugin's calls cost {beyond:.2f} ms a call "
        "beyond the fake model's"
    )
    ok = endpoint <= 1.1 * floor and beyond <= 1.0
    print(
        f"  goal: <= 1.1 x the aiohttp floor's wall and <= 1 ms CPU a call beyond the fake model's: "
        f"{'MET' if ok else 'NOT MET'}",
        flush=True,
    )
    return ok


def faults(args: argparse.Namespace, folder: Path, ids: list[str]) -> bool:
    server = Server(
        "--latency-ms",
        str(args.latency_ms),
        "--fail-rate",
        str(args.fault_rate),
        "--retry-after-ms",
        "200",
        "--seed",
        "1234",
    )
    try:
        seconds, done = timed(
            pytest_command(
                "--prompt-model",
                "openai:bench",
                "--prompt-base-url",
                server.base_url,
                "--prompt-concurrency",
                str(args.concurrency),
                "--prompt-no-cache",
                "--prompt-report",
                "fault-report",
            ),
            folder,
        )
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
    print(
        f"faults: {args.fault_rate:.0%} of attempts answered 429/500 (seeded, retry-after-ms "
        f"200), N={args.cases}: {seconds:.2f} s, exit {done.returncode}"
    )
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
    parser.add_argument(
        "--reference", metavar="REF", help="also run the plugin on the package at git commit REF, in the same rounds"
    )
    parser.add_argument(
        "--profile-loop",
        action="store_true",
        help="one more plugin run with benchmarks/loop_probe.py: each thread's CPU, "
        "the event loop's callbacks, how often a case waited for its call",
    )
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
