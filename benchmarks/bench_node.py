"""Benchmark: an imported promptfoo suite's ``javascript`` asserts, in the run's one Node.js process, against a
Node.js process started for each call (how they ran before), in the same go.

    python benchmarks/bench_node.py [--calls 50]

Prints the milliseconds a call of each and their ratio. Needs ``node`` on PATH.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.dialects.promptfoo.code_asserts import javascript


_ONE_SHOT = (
    "const d = JSON.parse(require('fs').readFileSync(0, 'utf8')); process.stdout.write(String(d.output.length > 0))"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    node = shutil.which("node")
    if node is None:
        sys.exit("needs node on PATH")
    case = PromptCase.from_dict({"case_id": "c", "input": "hi", "slice": "s"})
    javascript("true", "warm-up", case)  # the process starts once a run: not counted
    shared, each = [], []
    for i in range(args.calls):  # in turn, so that machine noise hits both
        start = time.perf_counter()
        assert javascript("output.length > 0", f"answer {i}", case) is True
        shared.append(time.perf_counter() - start)
        start = time.perf_counter()
        done = subprocess.run(
            [node, "-e", _ONE_SHOT],
            input=json.dumps({"output": f"answer {i}"}),
            capture_output=True,
            text=True,
            check=True,
        )
        assert done.stdout == "true"
        each.append(time.perf_counter() - start)
    a, b = statistics.median(shared) * 1000, statistics.median(each) * 1000
    print(
        f"{args.calls} javascript asserts, medians: one Node.js process {a:.1f} ms a call, "
        f"a process a call {b:.1f} ms ({b / a:.0f}x)"
    )


if __name__ == "__main__":
    main()
