"""The hostile run of issue 17: a load run with mixed faults, and the attack campaign's table.

1. ``load``: N cases (default 2,000) at ``--concurrency`` (32) against ``tests/loopback.py``, a
   ``--faults`` share (25 %) of them scripted with 429, 500, 503, resets, truncated, mis-encoded
   (gzip header, not UTF-8) and dripped bodies, hangs, an echoed key and odd characters; pytest in
   its own process writes a report, junit.xml, a cassette, the cache and a DEBUG log. Printed:
   rows, lost, duplicated, mislabelled (outcome or output not what the case's script implies),
   files holding the key, wall time, requests and statuses.
2. ``campaign``: ``tests/hostile/campaign.py`` at ``--scale`` times its base size, as the table
   tried / clear error / accepted / traceback / hang / lost / leak.

    python benchmarks/bench_hostile.py [--cases 2000] [--concurrency 32] [--faults 0.25]
                                       [--workers 2] [--scale 10] [--seed 17]

Exit status 0 when nothing was lost, duplicated, mislabelled or leaked and no attack ended in a
traceback or a hang.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.hostile.campaign import campaign  # noqa: E402 (after the path)
from tests.hostile.campaign import table  # noqa: E402
from tests.hostile.load import run_load  # noqa: E402
from tests.loopback import serve  # noqa: E402


def main() -> int:
    """Run both parts and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--faults", type=float, default=0.25)
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (0: serial)")
    parser.add_argument("--scale", type=int, default=10)
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args()
    ok = True
    with serve() as server, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "load"
        folder.mkdir()
        load = run_load(
            server,
            folder,
            cases=args.cases,
            concurrency=args.concurrency,
            fault_share=args.faults,
            seed=args.seed,
            workers=args.workers,
        )
        print(
            f"# load: {args.cases} cases, concurrency {args.concurrency}, {args.faults:.0%} faulty, "
            f"{args.workers or 'no'} xdist workers"
        )
        print(
            f"rows {load.rows}, lost {len(load.lost)}, duplicated {len(load.duplicated)}, "
            f"mislabelled {len(load.mislabelled)}, files holding the key {len(load.leaks)} "
            f"(of {load.files_searched} searched, stdout and stderr included)"
        )
        print(f"outcomes {load.outcomes}, exit status {load.exit_status}, wall {load.seconds:.1f} s")
        print(f"server: {load.requests} requests, statuses {load.statuses}")
        ok &= not (load.lost or load.duplicated or load.mislabelled or load.leaks)
        start = time.monotonic()
        tallies = campaign(Path(tmp) / "campaign", server, scale=args.scale, seed=args.seed)
        print(f"\n# campaign (scale {args.scale}, {time.monotonic() - start:.0f} s)\n")
        print(table(tallies))
        ok &= all(t.traceback == t.hang == t.lost == t.leak == 0 for t in tallies)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
