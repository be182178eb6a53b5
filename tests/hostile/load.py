"""The hostile load run: N cases against the loopback server, a seeded share of them scripted
with mixed faults, run by pytest in its own process; then every row is held to what its script
says must happen. Used by ``tests/hostile/test_load.py`` and ``benchmarks/bench_hostile.py``.

A faulty case's script is one to four steps drawn from :data:`FAULTS`; attempt ``k`` of the case
gets step ``k`` (then plain answers). With ``max_retries = 3`` a case passes when its first
answerable step comes within four attempts (its output then is the echo of its prompt, the echo
with the scrubbed key, or the ``weird`` text), and ends as ``error`` otherwise: after four
retryable faults, or at a body that is not UTF-8 (never retried).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from tests.loopback import WEIRD
from tests.loopback import LoopbackServer
from tests.suite import UNUSED_PLUGINS


#: The faults a script draws from, and those the client retries.
FAULTS = ("429", "500", "503", "reset", "truncated", "gzip", "drip", "hang", "latin1", "echo", "weird")
RETRYABLE = frozenset({"429", "500", "503", "reset", "truncated", "gzip", "drip", "hang"})
MAX_RETRIES = 3
#: The client's timeout: a ``hang`` (the server holds the answer ``HANG_S``) always outlasts it, a
#: plain answer never comes near it, even on a busy machine (3 s made a plain last attempt time out
#: on a 2-core machine at load 6, so a planned pass ended as an error).
TIMEOUT_S = 5
HANG_S = 12
KEY = "sk-load-NEVER-WRITE-ME-31c9a0d7e2"


@dataclass(frozen=True)
class Planned:
    """One case of the load run and what its row must say."""

    case_id: str
    prompt: str
    outcome: str
    output: str | None


def steps_of(prompt: str) -> list[str]:
    """The scripted steps of a case's prompt (``load case 00031 [[hang,503]]``: hang, 503)."""
    return prompt.partition("[[")[2].rstrip("]").split(",") if "[[" in prompt else []


def _step(steps: list[str], attempt: int) -> str:
    """The step attempt ``attempt`` of a case meets (plain answers after its script)."""
    return steps[attempt] if attempt < len(steps) else "ok"


def _answer(prompt: str, step: str) -> tuple[str, str | None]:
    """(outcome, output) of an attempt met by a step the client does not retry."""
    if step == "latin1":
        return "error", None
    if step == "echo":
        return "passed", f"{prompt} key=Bearer ***"
    return "passed", WEIRD if step == "weird" else prompt


def expected(prompt: str, steps: list[str]) -> tuple[str, str | None]:
    """(outcome, output) of a case whose attempts meet ``steps``."""
    for attempt in range(MAX_RETRIES + 1):
        step = _step(steps, attempt)
        if step not in RETRYABLE:
            return _answer(prompt, step)
    return "error", None


def _planned_attempts(steps: list[str]) -> int:
    """How many attempts a case whose attempts meet ``steps`` makes."""
    return next((a + 1 for a in range(MAX_RETRIES + 1) if _step(steps, a) not in RETRYABLE), MAX_RETRIES + 1)


def endings(prompt: str, steps: list[str], seen: int) -> set[tuple[str, str | None, bool]]:
    """The endings a case's row may have when the server saw ``seen`` of its attempts: (outcome, output, whether the
    error must be the client's timeout).

    The plan's, when nothing made an answer late. On a machine too busy to read an answer within the client's
    timeout (two cores at nice 19 beside another suite), the client gives that answer up and tries again: the
    server sees more attempts than planned, and the ending is the last one's; a last attempt given up on ends in
    the timeout's error. Fewer attempts, more than allowed, or one after a body that is not UTF-8 (never retried):
    no ending is right."""
    if not _planned_attempts(steps) <= seen <= MAX_RETRIES + 1:
        return set()
    if "latin1" in [_step(steps, a) for a in range(seen - 1)]:
        return set()
    last = _step(steps, seen - 1)
    if last in RETRYABLE:
        return {("error", None, False)} if seen == MAX_RETRIES + 1 else set()
    ends = {(*_answer(prompt, last), False)}
    if seen == MAX_RETRIES + 1 and last != "latin1":
        ends.add(("error", None, True))
    return ends


def plan(cases: int, fault_share: float, seed: int) -> list[Planned]:
    """The cases of a load run: a seeded ``fault_share`` of them scripted."""
    rng = random.Random(seed)
    faulty = set(rng.sample(range(cases), int(cases * fault_share)))
    planned = []
    for i in range(cases):
        prompt = f"load case {i:05d}"
        if i in faulty:
            prompt += " [[" + ",".join(rng.choice(FAULTS) for _ in range(rng.randint(1, 4))) + "]]"
        steps = steps_of(prompt)
        outcome, output = expected(prompt, steps)
        planned.append(Planned(f"load-{i:05d}", prompt, outcome, output))
    return planned


def write_suite(folder: Path, planned: list[Planned], base_url: str, *, faulty_first: bool = False) -> None:
    """The case file (each passing case must include its own id's text) and the config; ``faulty_first``:
    the scripted cases first in the file (in plan order), then the others."""
    lines = []
    if faulty_first:
        planned = sorted(planned, key=lambda p: "[[" not in p.prompt)  # stable: plan order within each part
    for p in planned:
        row: dict[str, Any] = {"case_id": p.case_id, "input": p.prompt, "slice": "load"}
        if p.output is not None and p.output != WEIRD:
            row["must_include"] = [p.prompt.split(" [[")[0]]  # a row with another case's answer fails
        lines.append(json.dumps(row))
    (folder / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "promptsuite.toml").write_text(
        f'[model]\nspec = "openai:load"\nbase_url = "{base_url}"\n'
        f"timeout_s = {TIMEOUT_S}\nmax_retries = {MAX_RETRIES}\n",
        encoding="utf-8",
    )


@dataclass
class LoadReport:
    """What a load run did and how its rows compare with the plan."""

    cases: int = 0
    rows: int = 0
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    mislabelled: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    files_searched: int = 0
    seconds: float = 0.0
    exit_status: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    requests: int = 0
    max_in_flight: int = 0
    statuses: dict[int, int] = field(default_factory=dict)


def _compare(report: LoadReport, planned: list[Planned], rows: list[dict[str, Any]], seen: dict[str, int]) -> None:
    """Hold every row to the endings its case may have, given the attempts the server saw (``seen``, by prompt)."""
    by_id = Counter(row["case_id"] for row in rows)
    report.rows = len(rows)
    report.lost = sorted(p.case_id for p in planned if p.case_id not in by_id)
    report.duplicated = sorted(case_id for case_id, n in by_id.items() if n > 1)
    report.outcomes = dict(Counter(row["outcome"] for row in rows))
    want = {p.case_id: p for p in planned}
    for row in rows:
        p = want.get(row["case_id"])
        if p is None or not _ends_as_seen(row, p, seen.get(p.prompt, 0)):
            report.mislabelled.append(row["case_id"])


def _ends_as_seen(row: dict[str, Any], p: Planned, seen: int) -> bool:
    """Tell whether ``row`` has one of the endings its case may have after ``seen`` attempts."""
    steps = steps_of(p.prompt)
    timeout = f"within {TIMEOUT_S:g} s" in (row.get("error") or "")
    return any(
        row["outcome"] == outcome and (output is None or row["output"] == output) and (timeout or not timed_out)
        for outcome, output, timed_out in endings(p.prompt, steps, seen)
    )


def run_load(
    server: LoopbackServer,
    folder: Path,
    *,
    cases: int = 2000,
    concurrency: int = 32,
    fault_share: float = 0.25,
    seed: int = 17,
    timeout: float = 900,
    workers: int = 2,
    faulty_first: bool = False,
) -> LoadReport:
    """Run the load suite in ``folder`` with pytest in a child process (``workers`` pytest-xdist
    workers sharing the ``concurrency`` bound; 0 for a serial run); compare and grep.

    ``faulty_first`` writes the scripted cases first. pytest runs a worker's items in order, and pytest-xdist
    sends a worker more only as it reports them: a case waiting out its timeouts and backoffs holds up the items
    behind it once their calls have ended. Scattered through the file (the default, as the benchmark runs it),
    such waits add up one after another; first in the file, they overlap (85-100 s become about 55 s on two cores).
    """
    server.reset(api_key=KEY, retry_after_ms=10, hang_s=HANG_S, drip_s=0.05)
    planned = plan(cases, fault_share, seed)
    write_suite(folder, planned, server.base_url, faulty_first=faulty_first)
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--prompt-suite",
        "cases.jsonl",
        "-p",
        "no:randomly",
        *UNUSED_PLUGINS,
        "-p",
        "no:cacheprovider",
        "--prompt-concurrency",
        str(concurrency),
        "--prompt-report",
        "report",
        "--junitxml",
        "junit.xml",
        "--prompt-record",
        "cassette.jsonl",
        "--log-file",
        "run.log",
        "-o",
        "log_file_level=DEBUG",
        "-q",
        *(["-n", str(workers)] if workers else []),
    ]
    start = time.monotonic()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, timeout=timeout, check=False)
    report = LoadReport(cases=cases, seconds=time.monotonic() - start, exit_status=done.returncode)
    (folder / "stdout.txt").write_bytes(done.stdout)
    (folder / "stderr.txt").write_bytes(done.stderr)
    text = (folder / "report" / "results.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.split("\n") if line.strip()]
    _compare(report, planned, rows, dict(server.stats.attempts))
    files = [p for p in folder.rglob("*") if p.is_file() and p.name != "promptsuite.toml"]
    report.files_searched = len(files)
    report.leaks = [str(p) for p in files if KEY.encode() in p.read_bytes()]
    stats = server.stats
    report.requests, report.max_in_flight, report.statuses = stats.requests, stats.max_in_flight, dict(stats.statuses)
    return report
