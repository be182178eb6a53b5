"""Against the real ``nemoguardrails`` package (optional): every prompt of its library and of the
example config renders as written and equals NeMo's own rendering byte for byte, our selection
picks what NeMo's ``get_prompt`` picks (benchmarks/nemo_compat.py), and Colang turns count as
NeMo's ``first_turns`` / ``last_turns`` count them."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest


def _nemo_python() -> str | None:
    given = os.environ.get("PROMPTSUITE_NEMO_PYTHON")
    if given:
        return given
    return sys.executable if importlib.util.find_spec("nemoguardrails") is not None else None


NEMO_PYTHON = _nemo_python()


@pytest.mark.skipif(
    NEMO_PYTHON is None,
    reason="nemoguardrails is not installed (install it, or set PROMPTSUITE_NEMO_PYTHON to a Python that has it; "
    ".ci/run does not: its install takes about 4 minutes)",
)
def test_library_and_example_config_equal_nemo() -> None:
    assert NEMO_PYTHON is not None
    script = Path(__file__).parents[2] / "benchmarks" / "nemo_compat.py"
    done = subprocess.run(
        [sys.executable, str(script), "--nemo-python", NEMO_PYTHON],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    counts = {
        m.group(1).strip(): (int(m.group(2)), int(m.group(3)))
        for m in re.finditer(r"^\s+(.+?):\s+(\d+) / (\d+)", done.stdout, re.MULTILINE)
    }
    assert counts["render as written (no conftest)"][1] >= 80, done.stdout
    for label, (got, total) in counts.items():
        assert got == total, f"{label}: {got} / {total}\n{done.stdout}"


TURN_TEXTS = [
    'user "hi"\n  express greeting\nbot express greeting\n  "Hello!"\nuser "bye"\n  express goodbye',
    'user action: user said "hi"\nuser intent: user expressed greeting\nbot intent: bot express greeting\n'
    'bot action: bot say "Hello"\n\nuser action: user said "bye"\n',
    'user "a"\n  x\nuser action: user said "b"\nbot y\nuser "c"\n  z',
    "",
]
TURNS = r"""
import json, sys
from nemoguardrails.llm.filters import first_turns, last_turns
texts = json.load(sys.stdin)
json.dump([[f(t, n) for f in (first_turns, last_turns) for n in range(-1, 5)] for t in texts], sys.stdout)
"""


@pytest.mark.skipif(NEMO_PYTHON is None, reason="nemoguardrails is not installed (see above)")
def test_colang_turns_count_as_nemo_counts_them() -> None:
    from pytest_promptsuite.dialects.nemo.nemo_filters import NEMO_FILTERS
    from pytest_promptsuite.prompts.files.history_filters import first_turns
    from pytest_promptsuite.prompts.files.history_filters import last_turns

    assert NEMO_PYTHON is not None
    done = subprocess.run(
        [NEMO_PYTHON, "-c", TURNS],
        input=json.dumps(TURN_TEXTS),
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    theirs = json.loads(done.stdout)
    for filters in ((first_turns, last_turns), (NEMO_FILTERS["first_turns"], NEMO_FILTERS["last_turns"])):
        ours = [[f(t, n) for f in filters for n in range(-1, 5)] for t in TURN_TEXTS]
        assert ours == theirs
