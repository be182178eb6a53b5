"""The object of the ``suite`` fixture: a prompt suite written into pytester's folder, run, read back."""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


Row = dict[str, Any]

#: Eight cases in three slices on the fake (echo) model: "ok" all pass, "facts" 3 of 4 pass, "injection" 1 of 2.
THREE_SLICES: list[dict[str, Any]] = [
    {"case_id": "ok-1", "input": "hello", "slice": "ok", "must_include": ["hello"]},
    {"case_id": "ok-2", "input": "world", "slice": "ok", "must_include": ["world"]},
    {"case_id": "facts-1", "input": "未提供", "slice": "facts", "must_include": ["未提供"]},
    {"case_id": "facts-2", "input": "未提供 A", "slice": "facts", "must_include": ["A"]},
    {"case_id": "facts-3", "input": "未提供 B", "slice": "facts", "must_include": ["B"]},
    {
        "case_id": "facts-4",
        "input": "nothing",
        "slice": "facts",
        "must_include": ["未提供", "X"],
        "must_not_include": ["nothing", "no"],
    },
    {"case_id": "inject-1", "input": "refuse", "slice": "injection", "must_not_include": ["sk-"]},
    {"case_id": "inject-2", "input": "sk-123", "slice": "injection", "must_not_include": ["sk-"], "tags": ["leak"]},
]

#: The installed pytest plugins no suite run uses, left out of each run: every process a run starts (each
#: ``-n 2`` worker, a subprocess) would import them first, Hypothesis alone about 0.8 s of CPU.
UNUSED_PLUGINS = ("-p", "no:hypothesispytest", "-p", "no:anyio")


@dataclass
class Suite:
    """Write a suite's cases and config, run pytest on it in-process, and read the report it wrote."""

    pytester: pytest.Pytester

    @property
    def path(self) -> Path:
        """The folder the suite is written in and pytest runs in."""
        return self.pytester.path

    def write(self, name: str, text: str) -> Path:
        """Write a file of the suite as UTF-8, exactly as given (folders made as needed)."""
        path = self.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def cases(self, cases: Iterable[Mapping[str, Any]] | str, name: str = "cases.jsonl") -> Path:
        """Write a case file: a JSON line per case (non-ASCII as is), or JSONL text as given."""
        if not isinstance(cases, str):
            cases = "".join(json.dumps(case, ensure_ascii=False) + "\n" for case in cases)
        return self.write(name, cases)

    def prompts(self, prompts: Sequence[str], name: str = "cases.jsonl") -> list[str]:
        """Write a case per prompt (ids ``c-00``.., slice ``s``) that passes when its answer holds the prompt."""
        ids = [f"c-{i:02d}" for i in range(len(prompts))]
        cases = zip(ids, prompts, strict=True)
        self.cases(({"case_id": id_, "input": text, "slice": "s", "must_include": [text]} for id_, text in cases), name)
        return ids

    def config(self, config: str | Mapping[str, Mapping[str, Any]], name: str = "promptsuite.toml") -> Path:
        """Write the suite's config: TOML text as given, or tables (``{"model": {"spec": "fake"}}``)."""
        if not isinstance(config, str):
            config = "".join(f"[{table}]\n" + _keys(keys) for table, keys in config.items())
        return self.write(name, config)

    def run(self, *args: str, paths: Sequence[str] = ("cases.jsonl",)) -> pytest.RunResult:
        """Run pytest with ``--prompt-suite`` for each of ``paths``, in the file's order, and ``args``."""
        suites = [arg for path in paths for arg in ("--prompt-suite", path)]
        return self.pytester.runpytest(*suites, "-p", "no:randomly", *UNUSED_PLUGINS, *args)

    def rows(self, report: str | Path = "report", name: str = "results.jsonl") -> list[Row]:
        """Read the rows of a report's ``results.jsonl`` (or ``name``), each a line ended by ``\\n`` only."""
        lines = (self.path / report / name).read_text(encoding="utf-8").split("\n")
        assert lines.pop() == "", f"{name} does not end with a line end"
        return [json.loads(line) for line in lines]

    def by_id(self, report: str | Path = "report") -> dict[str, Row]:
        """Read the rows of a report by case id (a report with one row per case)."""
        rows = self.rows(report)
        by_id = {row["case_id"]: row for row in rows}
        assert len(by_id) == len(rows), f"case ids repeat in {report}: {sorted(row['case_id'] for row in rows)}"
        return by_id

    def summary(self, report: str | Path = "report") -> dict[str, Any]:
        """Read a report's ``summary.json``."""
        summary: dict[str, Any] = json.loads((self.path / report / "summary.json").read_text(encoding="utf-8"))
        return summary


def _keys(keys: Mapping[str, Any]) -> str:
    return "".join(f"{_key(key)} = {_value(value)}\n" for key, value in keys.items())


def _key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(key)} = {_value(item)}" for key, item in value.items()) + " }"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    return json.dumps(value, ensure_ascii=False)  # a string, number or boolean is written the same in TOML


#: The keys of what a run measures in wall time: a row's latency, a usage group's p50 and p95.
LATENCY_KEYS = frozenset({"latency_ms", "latency_p50_ms", "latency_p95_ms"})
#: Those numbers as report files write them: a JSON key (results, summary, the dashboard's data), and the
#: ``N ms`` of the text and markdown reports' ``p95 latency N ms`` and latency cells.
_MEASURED = re.compile(
    rb'(?P<key>"latency(?:_p50|_p95)?_ms"\s*:\s*)-?\d[\d.eE+-]*|(?P<said>p95 latency |\| )\d[\d,]* ms\b'
)


def timeless(value: Any) -> Any:
    """Return a row or summary with each measured latency (a number) as ``"measured"``, a missing one left
    None: the models measure their answers' wall time, which is all two runs of one suite may differ in."""
    if isinstance(value, dict):
        return {
            key: "measured" if key in LATENCY_KEYS and isinstance(item, int | float) else timeless(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [timeless(item) for item in value]
    return value


def timeless_bytes(data: bytes) -> bytes:
    """Return a report file's bytes with each measured latency as ``measured``, as :func:`timeless` does."""
    return _MEASURED.sub(lambda m: (m["key"] or m["said"]) + b"measured" + (b"" if m["key"] else b" ms"), data)


def default_sigint() -> None:
    """Give a child process Ctrl-C's default action (``preexec_fn``): a shell's background job, and so a CI
    step run that way, starts with SIGINT ignored, and a child would inherit that and never stop."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
