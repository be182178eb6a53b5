"""``read_results`` and ``read_history`` on reports a run wrote, and a run without ``--prompt-report``
that never imports pandas (with ``--prompt-history`` and ``--prompt-baseline``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pytest_promptsuite import read_history
from pytest_promptsuite import read_results
from tests.suite import Suite


def _case(case_id: str, slice_: str, text: str, **fields: object) -> dict[str, object]:
    return {"case_id": case_id, "input": text, "slice": slice_, **fields}


#: The fake model echoes the prompt: ``Q: `` under the variant ``asked`` is no JSON.
CASES = [
    _case("r1", "退款", "refund please", must_include=["refund"], must_not_include=["sorry", "no"], tags=["zh"]),
    _case("r2", "退款", "no money back", must_include=["refund"], must_not_include=["no", "sorry"]),
    _case(
        "j1",
        "json",
        '{"a": 1}',
        metadata={"source": "manual"},
        **{"assert": [{"type": "is-json"}, {"type": "equals", "path": "$.a", "value": 1}]},
    ),
    _case("j2", "json", "not json", **{"assert": [{"type": "is-json"}, {"type": "equals", "path": "$.a", "value": 1}]}),
]
CONFIG = (
    '[template]\nprompt_template = "{input}"\n[variants.plain]\nprompt_template = "{input}"\n'
    '[variants.asked]\nprompt_template = "Q: {input}"\n'
)


def test_read_results_holds_the_rows_of_a_report(suite: Suite) -> None:
    suite.cases(CASES)
    suite.config(CONFIG)
    result = suite.run("--prompt-repeat", "2", "--prompt-report", "rep", paths=["."])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    rows = suite.rows("rep")
    frame = read_results(suite.path / "rep")
    assert len(rows) == len(frame) == 4 * 2 * 2  # a row per case, variant and repeat
    pd.testing.assert_frame_equal(frame, read_results(suite.path / "rep" / "results.jsonl"))
    for row, got in zip(rows, frame.to_dict("records"), strict=True):
        for name in (
            "case_id",
            "slice",
            "variant",
            "repeat",
            "outcome",
            "output",
            "prompt",
            "prompt_hash",
            "location",
            "metadata",
        ):
            assert got[name] == row[name], name
        assert got["checks"] == row["checks"] and got["tags"] == tuple(row["tags"])
        assert pd.isna(got["error"]) and pd.isna(got["prompt_tokens"])
        assert got["latency_ms"] == row["latency_ms"] >= 0  # the fake model's measured wall time
        for check in {c["name"] for c in row["checks"]}:
            same = [c for c in row["checks"] if c["name"] == check]
            expected = (
                "failed"
                if any(not c["passed"] and not c["skipped"] for c in same)
                else ("passed" if any(c["passed"] for c in same) else "skipped")
            )
            assert got[f"check:{check}"] == expected, (row["case_id"], check)
        absent = {c for c in frame.columns if c.startswith("check:")} - {f"check:{c['name']}" for c in row["checks"]}
        assert all(pd.isna(got[c]) for c in absent)
    keyed = frame.set_index(["case_id", "variant", "repeat"])
    assert keyed.loc[("r2", "plain", 1), "check:must_not_include"] == "failed"  # "no" found, "sorry" absent
    assert keyed.loc[("r1", "asked", 0), "check:must_not_include"] == "passed"
    assert keyed.loc[("j2", "plain", 0), ["check:is-json", "check:equals"]].tolist() == ["failed", "skipped"]
    assert keyed.loc[("j1", "asked", 1), ["check:is-json", "outcome"]].tolist() == ["failed", "failed"]
    rates = frame.groupby(["slice", "variant"])["outcome"].apply(lambda o: (o == "passed").mean())
    assert rates.to_dict() == {
        ("json", "asked"): 0.0,
        ("json", "plain"): 0.5,
        ("退款", "asked"): 0.5,
        ("退款", "plain"): 0.5,
    }


def test_read_history_over_report_folders(suite: Suite) -> None:
    """Three runs, the third case of 退款 and a new slice changing between them: the pass rates
    read back are those of each run's summary."""
    for run, texts in enumerate(
        (["refund a", "refund b", "refund c"], ["refund a", "no b", "refund c"], ["refund a", "no b", "no c"])
    ):
        lines = [_case(f"r{i}", "退款", text, must_include=["refund"]) for i, text in enumerate(texts)]
        if run:
            lines.append(_case("n1", "new", "ok", must_include=["ok"]))
        suite.cases(lines)
        suite.run("--prompt-min-pass-rate", "0.5", "--prompt-report", f"history/build-{run + 9}")
    frame = read_history(suite.path / "history")
    assert frame.drop_duplicates("run")["label"].tolist() == ["build-9", "build-10", "build-11"]
    assert frame["run_passed"].tolist() == [True, True, True, False, False]
    refund = frame[frame["slice"] == "退款"]
    assert refund["pass_rate"].tolist() == pytest.approx([1.0, 2 / 3, 1 / 3])
    assert (refund["passed"].tolist(), refund["cases"].tolist()) == ([3, 2, 1], [3, 3, 3])
    assert refund["gate"].tolist() == ["pass", "pass", "fail"]
    summary = suite.summary("history/build-11")
    last = refund.iloc[-1]
    assert (last["ci_low"], last["ci_high"]) == (summary["slices"][1]["ci_low"], summary["slices"][1]["ci_high"])
    assert frame[frame["slice"] == "new"]["run"].tolist() == [1, 2]
    assert read_history([suite.path / "history" / "build-9", suite.path / "history" / "build-11"])[
        "pass_rate"
    ].tolist() == pytest.approx([1.0, 1.0, 1 / 3])


def _modules(folder: Path, *args: str) -> set[str]:
    """The top-level packages a ``pytest ARGS`` run in ``folder`` imported, in a fresh interpreter."""
    script = (
        "import json, sys, pytest\n"
        f"pytest.main({['-q', '-p', 'no:cacheprovider', '-p', 'pytest_promptsuite.plugin', *args]!r})\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=folder, capture_output=True, text=True, env=env, check=True
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_only_a_run_with_a_report_imports_pandas(tmp_path: Path) -> None:
    case = _case("c1", "s", "refund", must_include=["refund"])
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n", "utf-8")
    assert "pandas" in _modules(tmp_path, "--prompt-suite", "cases.jsonl", "--prompt-report", "history/1")
    assert (tmp_path / "history" / "1" / "summary.json").is_file()
    plain = _modules(
        tmp_path,
        "--prompt-suite",
        "cases.jsonl",
        "--prompt-history",
        "history",
        "--prompt-baseline",
        "history/1",
        "--prompt-max-regression",
        "0.5",
    )
    assert {"pytest_promptsuite", "pandas", "numpy"} & plain == {"pytest_promptsuite"}
