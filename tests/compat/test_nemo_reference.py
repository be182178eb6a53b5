"""Against the real ``nemoguardrails`` package (optional): every prompt of its library and of the
example config renders as written and equals NeMo's own rendering byte for byte, and our
selection picks what NeMo's ``get_prompt`` picks. Runs benchmarks/nemo_compat.py."""

from __future__ import annotations

import importlib.util
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
    done = subprocess.run([sys.executable, str(script), "--nemo-python", NEMO_PYTHON], capture_output=True,
                          text=True, check=True, timeout=600)
    counts = {m.group(1).strip(): (int(m.group(2)), int(m.group(3)))
              for m in re.finditer(r"^\s+(.+?):\s+(\d+) / (\d+)", done.stdout, re.MULTILINE)}
    assert counts["render as written (no conftest)"][1] >= 80, done.stdout
    for label, (got, total) in counts.items():
        assert got == total, f"{label}: {got} / {total}\n{done.stdout}"
