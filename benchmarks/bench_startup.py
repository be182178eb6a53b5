"""Start-up: the one-case edit-run loop against bare pytest on one test, in the same venv.

Times, as whole processes, in turn (``--runs`` rounds, medians):

1. ``bare``: ``pytest test_one.py`` without the plugin (one plain test; anyio's plugin loaded);
   the same with pydantic imported, as a run with a config imports it (``floor_pydantic.py``, a
   plugin of one import line): the floor of a run whose config pydantic validates;
2. ``installed``: ``pytest test_one.py`` with the plugin loaded but no case: what every other
   pytest run of a project that installed the plugin pays;
3. ``plugin``: ``pytest --prompt-suite one.jsonl`` (one case on the fake model, no config file);
4. ``with a config``: ``pytest --prompt-suite suite/``, the same case with a ``promptsuite.toml``
   (``[suite]``, ``[model]``, ``[template]``, ``[thresholds]``), as most suites have one.

Every run has a user's environment (``userenv.py``): bytecode cached, no test-extra plugin
autoloaded, the test suite's example ``promptsuite.plugins`` package blocked, as for a user who
installed the plugin with its core dependencies only: the runs load anyio's pytest plugin (httpx
depends on anyio) and the plugin runs the plugin, with ``-p``.

Then ``python -X importtime`` of the plugin, and the heavy packages a one-case run imports.
The goals (issue 24): a case file alone <= bare + 0.3 s; with a ``promptsuite.toml`` <= the
pydantic floor + 0.3 s.

    python benchmarks/bench_startup.py [--runs 5] [--python VENV/bin/python --autoload]

In a wheel install with autoloading (what a user gets: ``--python V/bin/python --autoload``), pytest
also rewrites the asserts of every module of the plugin's distribution (its ``pytest11`` entry
point), which ``-p pytest_promptsuite.plugin`` in the dev venv does not: time both.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from userenv import ANYIO_PLUGIN
from userenv import CORE_PLUGINS
from userenv import user_env


CASE = (
    '{"case_id": "refund-001", "input": "Can I return an opened item?", "slice": "refunds", '
    '"must_include": ["return"]}\n'
)
TEST = "def test_one():\n    assert 'return' in 'Can I return an opened item?'\n"
#: pydantic's own import, as a run reading a config makes it (the validator it builds is ours to count).
FLOOR = "from pydantic import TypeAdapter  # noqa: F401\n"
CONFIG = """[suite]
cases = ["one.jsonl"]

[model]
spec = "fake"
params = { temperature = 0 }

[template]
prompt_template = "You answer customer questions.\\nQ: {input}\\nA:"

[thresholds]
default = 0.8
slices = { refunds = 1.0 }
"""
#: A user's environment (``userenv.py``); the warm-up round writes the bytecode caches.
ENV = user_env()
HEAVY = ("pydantic", "pandas", "numpy", "httpx", "jinja2", "yaml", "jsonschema", "rapidfuzz", "asyncio")


def timed(command: list[str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=ENV)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def import_report(cwd: Path, python: str, load: list[str], bare: list[str]) -> None:
    """The heavy packages a one-case run imports (without and with a config) that a bare run of one
    test does not (anyio's plugin imports asyncio), and the plugin's import time (cumulative, ms)."""

    def heavy(target: str, plugins: list[str]) -> set[str] | None:
        args = [target] if target.endswith(".py") else ["--prompt-suite", target]
        script = (
            f"import json, sys, pytest; pytest.main(['-q', '-p', 'no:cacheprovider', *{plugins!r}, *{args!r}]); "
            f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r})))"
        )
        done = subprocess.run([python, "-c", script], cwd=cwd, capture_output=True, text=True, env=ENV)
        return set(json.loads(done.stdout.splitlines()[-1])) if done.returncode == 0 else None

    bare_heavy = heavy("test_one.py", bare)
    ours: dict[str, object] = {}
    for target in ("one.jsonl", "suite"):
        found = heavy(target, load)
        ours[target] = "?" if found is None or bare_heavy is None else sorted(found - bare_heavy)
    importing = "import pytest; import pytest_promptsuite.plugin"
    timing = subprocess.run(
        [python, "-X", "importtime", "-c", importing], cwd=cwd, capture_output=True, text=True, env=ENV
    )
    plugin = next(
        (
            int(line.split("|")[1]) / 1000
            for line in timing.stderr.splitlines()
            if line.rstrip().endswith("| pytest_promptsuite.plugin")
        ),
        0.0,
    )
    print(
        f"  python -X importtime: pytest_promptsuite.plugin {plugin:.0f} ms (what pytest loads for every run); "
        f"heavy packages a one-case run imports (beyond bare's): {ours['one.jsonl']}, with a config: {ours['suite']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--autoload",
        action="store_true",
        help="let pytest autoload its plugins, as a user's pytest does (use with --python on "
        "a venv holding only the core install: then pytest also rewrites the plugin's asserts)",
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the interpreter of the venv to time (default: this one). What a user gets is a "
        "wheel install: python -m venv V && V/bin/pip install . && --python V/bin/python",
    )
    args = parser.parse_args()
    if args.autoload:
        del ENV["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]
    pytest = [args.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        folder = Path(tmp)
        (folder / "one.jsonl").write_text(CASE, encoding="utf-8")
        (folder / "test_one.py").write_text(TEST, encoding="utf-8")
        (folder / "floor_pydantic.py").write_text(FLOOR, encoding="utf-8")
        (folder / "suite").mkdir()
        (folder / "suite" / "one.jsonl").write_text(CASE, encoding="utf-8")
        (folder / "suite" / "promptsuite.toml").write_text(CONFIG, encoding="utf-8")
        # autoload: the plugins' entry points; else the plugins a core install autoloads, by name
        load = ["-p", "no:thirdparty_example"] if args.autoload else CORE_PLUGINS
        bare_load = ["-p", "no:promptsuite"] if args.autoload else ANYIO_PLUGIN
        plugin = [*pytest, *load]
        commands = {
            "bare pytest, one test (no plugin)": [*pytest, *bare_load, "test_one.py"],
            "bare + pydantic's import (floor with a config)": [
                *pytest,
                *bare_load,
                "-p",
                "floor_pydantic",
                "test_one.py",
            ],
            "plugin installed, one test, no case": [*plugin, "test_one.py"],
            "pytest --prompt-suite one.jsonl": [*plugin, "--prompt-suite", "one.jsonl"],
            "... suite/ (one case, a promptsuite.toml)": [*plugin, "--prompt-suite", "suite"],
        }
        times: dict[str, list[tuple[float, float]]] = {label: [] for label in commands}
        for command in commands.values():  # a warm-up round: the file cache, .pyc files
            timed(command, folder)
        for _ in range(args.runs):
            for label, command in commands.items():
                times[label].append(timed(command, folder))
        print(
            f"# bench_startup: medians of {args.runs}, in turn (wall; CPU = user + system, which a "
            "busy machine inflates less)"
        )
        for label, values in times.items():
            wall, cpu = [v[0] for v in values], [v[1] for v in values]
            print(
                f"  {label:<48} wall {statistics.median(wall):.3f} s [{min(wall):.3f}-{max(wall):.3f}]  "
                f"CPU {statistics.median(cpu):.3f} s"
            )
        medians = {
            label: (statistics.median(v[0] for v in values), statistics.median(v[1] for v in values))
            for label, values in times.items()
        }
        (bare, bare_cpu), (floor, floor_cpu), (installed, _), (suite, suite_cpu), (configured, configured_cpu) = (
            medians.values()
        )
        ok = suite <= bare + 0.3 and configured <= floor + 0.3
        print(f"  installed - bare = {installed - bare:+.3f} s; pydantic floor - bare = {floor - bare:+.3f} s")
        print(
            f"  plugin - bare = {suite - bare:+.3f} s wall, {suite_cpu - bare_cpu:+.3f} s CPU; plugin / bare = "
            f"{suite / bare:.2f}; with a config - floor = {configured - floor:+.3f} s wall, "
            f"{configured_cpu - floor_cpu:+.3f} s CPU"
        )
        print(f"  goals: plugin <= bare + 0.3 s, with a config <= floor + 0.3 s (wall): {'MET' if ok else 'NOT MET'}")
        import_report(folder, args.python, load, bare_load)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
