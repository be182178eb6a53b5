"""Stage tests for ``cli.diff_merge``: ``promptsuite merge`` of shard reports and ``promptsuite diff`` of two runs."""

from __future__ import annotations

import io
from pathlib import Path

from pytest_promptsuite.cases.shard import shard_index
from pytest_promptsuite.cli.diff_merge import run_diff
from pytest_promptsuite.cli.diff_merge import run_merge
from pytest_promptsuite.cli.main import main as cli_main
from pytest_promptsuite.config.settings import ThresholdPolicy
from pytest_promptsuite.config.settings import Thresholds
from pytest_promptsuite.report.writer import write_report
from pytest_promptsuite.results.summary import summarize
from tests.unit.report.support import row


def test_merge_of_shards_equals_the_unsharded_report(tmp_path: Path) -> None:
    rows = [row(f"c{i}", f"s{i % 3}", "passed" if i % 5 else "failed", i + 1, output=str(i)) for i in range(60)]
    policy = ThresholdPolicy(Thresholds(slices={"s1": 0.5}), option=0.7, max_regression_option=0.1)
    baseline = [row(f"c{i}", f"s{i % 3}", "passed", i + 1) for i in range(0, 70, 2)]
    base_dir = tmp_path / "base"
    write_report(base_dir, baseline, summarize(baseline))
    whole = summarize(rows, policy, baseline=baseline, baseline_source=str(base_dir))
    write_report(tmp_path / "whole", rows, whole, baseline=baseline)  # as a run with --prompt-baseline does
    shard_dirs = []
    for k in range(3):
        part = [r for r in rows if shard_index(r.case_id, 3) == k]
        write_report(tmp_path / f"shard{k}", part, summarize(part, policy))
        shard_dirs.append(tmp_path / f"shard{k}")
    out = io.StringIO()
    status = run_merge(shard_dirs, tmp_path / "merged", baseline=base_dir, out=out)
    assert status == (0 if whole.gate.passed else 1)
    for name in ("summary.json", "slices.csv", "results.jsonl", "summary.md", "dashboard.html"):
        assert (tmp_path / "merged" / name).read_text("utf-8") == (tmp_path / "whole" / name).read_text("utf-8"), name
    assert out.getvalue().splitlines()[-1] == f"promptsuite report: {tmp_path / 'merged'}"


def test_merge_refuses_overlapping_shards_and_unreadable_input(tmp_path: Path) -> None:
    rows = [row("a", "s", "passed")]
    write_report(tmp_path / "one", rows, summarize(rows))
    write_report(tmp_path / "two", rows, summarize(rows))
    err = io.StringIO()
    assert run_merge([tmp_path / "one", tmp_path / "two"], tmp_path / "m", err=err) == 2
    expected = f"{tmp_path / 'two'}: case 'a' (variant None, repeat 0) is also in {tmp_path / 'one'}"
    assert expected in err.getvalue()
    assert run_merge([tmp_path / "nope"], tmp_path / "m", err=io.StringIO()) == 2
    assert not (tmp_path / "m").exists()


def test_diff_prints_deltas_p_values_and_ids(tmp_path: Path) -> None:
    old = [row(f"c{i}", "s", "passed", i + 1) for i in range(10)] + [row("gone", "s", "failed", 20)]
    new = [row(f"c{i}", "s", "failed" if i < 6 else "passed", i + 1) for i in range(10)]
    new.append(row("fresh", "t", "passed", 30))
    write_report(tmp_path / "old", old, summarize(old))
    (tmp_path / "new.jsonl").write_text("".join(r.to_json() + "\n" for r in new), "utf-8")
    out = io.StringIO()
    # a bare results.jsonl: the paired rule; 6 regressions and no fixes are significant, so exit 1
    assert run_diff(tmp_path / "old", tmp_path / "new.jsonl", out=out) == 1
    text = out.getvalue().splitlines()
    slice_s, detail_s = [line for line in text if line.startswith("s ")][:2]  # the slice table, the baseline's
    # baseline 10/11, now 4/10; 6 regressions and no fixes: p = 2 / 2**6, one-sided 1 / 2**6
    assert slice_s.split()[-2:] == ["REGRESSED", "FAIL"]
    assert detail_s.split()[1:] == ["90.9%", "-50.9", "-6/+0", "0.0312", "0.0156", "50.0"]
    assert text[text.index("regressions (6):") + 1 : text.index("fixes (0):")] == [f"  c{i}" for i in range(6)]
    assert text[text.index("new (1):") + 1] == "  fresh"
    assert text[text.index("removed (1):") + 1] == "  gone"
    assert text[text.index("promptsuite diff: REGRESSED") + 1].startswith(
        "  - slice 's': pass rate dropped 60.0 points against the baseline over the 10 cases in both runs"
    )


def test_diff_exits_2_on_unreadable_input(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text("{oops\n", "utf-8")
    (tmp_path / "ok.jsonl").write_text(row("a", "s", "passed").to_json() + "\n", "utf-8")
    err = io.StringIO()
    assert run_diff(tmp_path / "bad.jsonl", tmp_path / "ok.jsonl", out=io.StringIO(), err=err) == 2
    assert "bad.jsonl:1: not a results.jsonl row" in err.getvalue()
    assert run_diff(tmp_path / "ok.jsonl", tmp_path / "missing", out=io.StringIO(), err=err) == 2
    assert cli_main(["diff", str(tmp_path / "ok.jsonl"), str(tmp_path / "bad.jsonl")]) == 2
    assert cli_main(["diff", str(tmp_path / "ok.jsonl"), str(tmp_path / "ok.jsonl")]) == 0
