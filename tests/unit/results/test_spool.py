"""Stage tests for ``results.spool``: the rows of a run spooled to a file as they arrive."""

from __future__ import annotations

import json
import uuid

from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.spool import RowSpool
from pytest_promptsuite.safety.scrub import REDACTED
from pytest_promptsuite.safety.scrub import register


def row(case_id: str, slice_: str, outcome: str, **kw: object) -> CaseResult:
    return CaseResult(case_id=case_id, slice=slice_, outcome=outcome, **kw)  # type: ignore[arg-type]


def test_a_row_spool_copies_its_lines_unless_a_secret_may_have_slipped_in() -> None:
    late, known = f"late-secret-{uuid.uuid4().hex}", f"known-secret-{uuid.uuid4().hex}"
    rows = [row(f"r{i}", "s", "passed", output=f"answer {i} {late if i == 1 else ''}") for i in range(3)]
    spool = RowSpool()
    assert [spool.add(spool.encode(r)) for r in rows] == spool.rows
    assert b"".join(spool.lines(spool.rows)).decode() == "".join(r.to_json() + "\n" for r in rows)
    register(late)  # registered after its row was spooled: the copy is scrubbed again
    text = b"".join(spool.lines(spool.rows)).decode()
    assert late not in text and REDACTED in b"".join(spool.lines(spool.rows[1:2])).decode()
    register(known)
    worker = RowSpool()  # a worker's line scrubbed without a secret this process knows
    worker.add(spool.encode(rows[0]))
    worker.add(json.dumps(row("w", "s", "passed", output=known).to_dict()))
    assert known not in b"".join(worker.lines(worker.rows)).decode()
    spool.close()
    worker.close()
