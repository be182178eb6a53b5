"""Results as DataFrames: ``read_results``'s columns and check columns, ``read_history``'s rows, and
``promptsuite history`` made from them, byte for byte as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import pytest_promptsuite
from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.cli.main import main as cli_main
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.frames import read_history
from pytest_promptsuite.results.frames import read_results


FIELDS = (
    "case_id slice variant repeat outcome output checks error prompt prompt_hash latency_ms prompt_tokens "
    "completion_tokens total_tokens location tags metadata replies cached"
).split()


def _check(name: str, passed: bool, *, skipped: bool = False, layer: str = "content") -> CheckResult:
    return CheckResult(layer, name, passed, f"{name} {'passed' if passed else 'failed'}", skipped=skipped)


def _write(folder: Path, rows: list[CaseResult]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.jsonl").write_text("".join(r.to_json() + "\n" for r in rows), "utf-8")
    return folder


def test_the_public_names_are_the_readers() -> None:
    assert pytest_promptsuite.read_results is read_results
    assert pytest_promptsuite.read_history is read_history


def test_read_results_gives_each_field_a_column_and_usage_its_token_counts(tmp_path: Path) -> None:
    usage = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    rows = [
        CaseResult(
            "a",
            "退款",
            "passed",
            location="cases.jsonl:1",
            variant="v1",
            output="ok",
            prompt="Q: a",
            prompt_hash="h1",
            latency_ms=12.5,
            usage=usage,
            tags=("zh", "refund"),
            metadata={"k": [1]},
        ),
        CaseResult(
            "a",
            "退款",
            "error",
            location="cases.jsonl:1",
            variant="v2",
            repeat=1,
            error="HTTP 500: down",
            prompt=[{"role": "user", "content": "a"}],
            replies=("one", "two"),
            cached=True,
            usage={"prompt_tokens": 7},
        ),
    ]
    frame = read_results(_write(tmp_path, rows))
    assert list(frame.columns) == FIELDS
    first, second = frame.to_dict("records")
    assert first["case_id"] == "a" and first["slice"] == "退款" and first["variant"] == "v1"
    assert (first["repeat"], first["outcome"], first["output"], first["prompt"]) == (0, "passed", "ok", "Q: a")
    assert (first["prompt_hash"], first["latency_ms"], first["location"]) == ("h1", 12.5, "cases.jsonl:1")
    assert (first["prompt_tokens"], first["completion_tokens"], first["total_tokens"]) == (12, 3, 15)
    assert (first["tags"], first["metadata"], first["replies"], first["cached"]) == (
        ("zh", "refund"),
        {"k": [1]},
        (),
        False,
    )
    assert (second["variant"], second["repeat"], second["outcome"], second["error"]) == (
        "v2",
        1,
        "error",
        "HTTP 500: down",
    )
    assert second["prompt"] == [{"role": "user", "content": "a"}] and second["replies"] == ("one", "two")
    assert pd.isna(second["output"]) and pd.isna(second["latency_ms"]) and second["cached"]
    assert second["prompt_tokens"] == 7 and pd.isna(second["completion_tokens"]) and pd.isna(second["total_tokens"])
    types = frame.dtypes.astype(str).to_dict()
    assert (types["repeat"], types["latency_ms"], types["cached"]) == ("int64", "float64", "bool")
    assert {types[name] for name in ("prompt_tokens", "completion_tokens", "total_tokens")} == {"Int64"}
    assert frame["latency_ms"].mean() == 12.5  # numbers as numbers, missing ones left out


def test_a_check_column_per_name_failed_over_passed_over_skipped(tmp_path: Path) -> None:
    rows = [
        CaseResult(
            "a",
            "s",
            "passed",
            checks=(_check("must_include", True), _check("must_not_include", True), _check("must_not_include", True)),
        ),
        CaseResult(
            "b",
            "s",
            "failed",
            checks=(
                _check("must_not_include", True),
                _check("must_not_include", False),
                _check("must_include", True),
                _check("equals", False, skipped=True),
                _check("is-json", False, layer="structure"),
            ),
        ),
        CaseResult(
            "c",
            "s",
            "passed",
            checks=(_check("equals", False, skipped=True), _check("equals", True), _check("output", True)),
        ),
        CaseResult("d", "s", "passed"),
    ]
    frame = read_results(_write(tmp_path, rows))
    checks = [c for c in frame.columns if c.startswith("check:")]
    assert list(frame.columns) == [*FIELDS, *checks]  # after the fields, in the order first seen
    assert checks == ["check:must_include", "check:must_not_include", "check:equals", "check:is-json", "check:output"]
    table = {r["case_id"]: {c: None if pd.isna(r[c]) else r[c] for c in checks} for r in frame.to_dict("records")}
    expected = {  # per check of ``checks``, in that order (None: the case has no such check)
        "a": ("passed", "passed", None, None, None),
        "b": ("passed", "failed", "skipped", "failed", None),
        "c": (None, None, "passed", None, "passed"),
        "d": (None, None, None, None, None),
    }
    assert table == {case: dict(zip(checks, outcomes, strict=True)) for case, outcomes in expected.items()}
    assert frame.loc[frame["case_id"] == "c", "output"].isna().all()  # a check named "output" is no field
    assert frame.loc[1, "checks"] == [c.to_dict() for c in rows[1].checks]  # every check, messages included


def test_an_empty_results_file_gives_the_columns_and_no_row(tmp_path: Path) -> None:
    frame = read_results(_write(tmp_path, []))
    assert list(frame.columns) == FIELDS and len(frame) == 0


def test_read_results_refuses_what_load_results_refuses(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.jsonl: cannot read results"):
        read_results(tmp_path / "missing.jsonl")
    with pytest.raises(ConfigError, match=r"results\.jsonl: cannot read results"):
        read_results(tmp_path)  # a folder without a results.jsonl
    newer = {**CaseResult("a", "s", "passed").to_dict(), "format_version": 2}
    (tmp_path / "results.jsonl").write_text(json.dumps(newer) + "\n", "utf-8")
    with pytest.raises(
        ConfigError,
        match=r"results\.jsonl:1: not a results\.jsonl row \(format_version 2 is newer "
        r"than this pytest-promptsuite reads \(1\); upgrade it\)",
    ):
        read_results(tmp_path)
    (tmp_path / "results.jsonl").write_text(CaseResult("a", "s", "passed").to_json() + "\n{not json\n", "utf-8")
    with pytest.raises(ConfigError, match=r"results\.jsonl:2: not a results\.jsonl row"):
        read_results(tmp_path / "results.jsonl")


def _slice(
    name: str, cases: int, passed: int, rate: Any, low: Any, high: Any, gate: Any = "pass", **extra: int
) -> dict[str, Any]:
    counts = {"failed": cases - passed - extra.get("review", 0), "error": 0, "review": 0, "skipped": 0}
    return {
        "slice": name,
        "cases": cases,
        "passed": passed,
        **counts,
        "pass_rate": rate,
        "ci_low": low,
        "ci_high": high,
        "gate": gate,
        **extra,
    }


#: Earlier runs as hand-written ``summary.json`` files: numbered names, a run with no slice, no or
#: an odd gate, a slice without an interval, with no counted case, with a comma in its name.
HISTORY = {
    "1.json": {
        "slices": [_slice("退款", 10, 10, 1.0, 0.72, 1.0), _slice("a,b", 4, 2, 0.5, 0.15, 0.85, "fail")],
        "gate": {"passed": True},
    },
    "2.json": {"slices": [], "gate": {"passed": False}},
    "9/summary.json": {
        "slices": [_slice("退款", 10, 9, 0.9, 0.6, 0.98), _slice("a,b", 4, 4, 1.0, 0.51, 1.0)],
        "gate": {"passed": "yes"},
    },
    "10/summary.json": {
        "slices": [_slice("退款", 10, 8, 0.8, 0.49, 0.94), _slice("only-here", 2, 0, None, None, None, review=2)]
    },
    "11/x/summary.json": {
        "slices": [_slice("退款", 10, 9, 0.9, None, None, gate=None), _slice("提示词注入", 3, 3, 1, 0.44, 1)],
        "gate": {"passed": True},
    },
    "12/summary.json": {
        "slices": [_slice("退款", 10, 9, 0.9004, 0.6, 0.98), _slice("提示词注入", 4, 3, 1.0, 0.44, 1.0, skipped=1)],
        "gate": {"passed": True},
    },
}


@pytest.fixture
def history(tmp_path: Path) -> Path:
    for name, document in HISTORY.items():
        file = tmp_path / "h" / name
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(json.dumps(document, ensure_ascii=False), "utf-8")
    return tmp_path / "h"


#: What ``promptsuite history`` printed for :data:`HISTORY` before it was made from a DataFrame
#: (the code of commit a8b1053), for each of these arguments.
PRINTED = {
    ("{h}",): """\
slice       1                2  9                10             11/x             12               change
a,b         50% (15%-85%)    -  100% (51%-100%)  -              -                -                +50.0 pts over 2 runs
only-here   -                -  -                -              -                -
提示词注入  -                -  -                -              100% (44%-100%)  100% (44%-100%)  flat
退款        100% (72%-100%)  -  90% (60%-98%)    80% (49%-94%)  90%              90% (60%-98%)    -10.0 pts over 5 runs, 2 drops
gate: 1 PASSED  2 FAILED  9 ?  10 ?  11/x PASSED  12 PASSED
""",  # noqa: E501
    ("--last", "3", "{h}"): """\
slice       10             11/x             12               change
only-here   -              -                -
提示词注入  -              100% (44%-100%)  100% (44%-100%)  flat
退款        80% (49%-94%)  90%              90% (60%-98%)    +10.0 pts over 3 runs
gate: 10 ?  11/x PASSED  12 PASSED
""",
    ("--last", "0", "{h}"): """\
no earlier runs found (a history folder holds report folders or summary.json files)
""",
    ("{h}/10/summary.json", "{h}/1.json"): """\
slice      summary        1                change
a,b        -              50% (15%-85%)
only-here  -              -
退款       80% (49%-94%)  100% (72%-100%)  +20.0 pts over 2 runs
gate: summary ?  1 PASSED
""",
    ("{h}/2.json",): """\
slice  2  change
gate: 2 FAILED
""",
}


@pytest.mark.parametrize("args", list(PRINTED), ids=lambda args: " ".join(args))
def test_promptsuite_history_prints_what_it_printed_before(
    history: Path, args: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["history", *(a.format(h=history) for a in args)]) == 0
    assert capsys.readouterr().out == PRINTED[args]


def test_read_history_gives_a_row_per_run_and_slice(history: Path) -> None:
    frame = read_history(history)
    assert list(frame.columns) == [
        "run",
        "label",
        "run_passed",
        "slice",
        "cases",
        "counted",
        "passed",
        "pass_rate",
        "ci_low",
        "ci_high",
        "gate",
    ]
    runs = frame.drop_duplicates("run")
    assert runs["run"].tolist() == [0, 1, 2, 3, 4, 5]
    assert runs["label"].tolist() == ["1", "2", "9", "10", "11/x", "12"]
    assert runs["run_passed"].tolist() == [True, False, pd.NA, pd.NA, True, True]
    assert frame[frame["label"] == "2"]["slice"].isna().all()  # the run without slices: one row
    refund = frame[frame["slice"] == "退款"]
    assert refund["label"].tolist() == ["1", "9", "10", "11/x", "12"]
    assert refund["pass_rate"].tolist() == [1.0, 0.9, 0.8, 0.9, 0.9004]
    assert refund["passed"].tolist() == [10, 9, 8, 9, 9] and refund["cases"].tolist() == [10] * 5
    assert refund["ci_low"].isna().tolist() == [False, False, False, True, False]
    injection = frame[frame["slice"] == "提示词注入"]
    assert (injection["cases"].tolist(), injection["counted"].tolist()) == ([3, 4], [3, 3])  # skipped not counted
    only = frame[frame["slice"] == "only-here"].iloc[0]
    assert (only["cases"], only["counted"], only["gate"]) == (2, 0, "pass") and pd.isna(only["pass_rate"])
    types = frame.dtypes.astype(str).to_dict()
    assert [types[c] for c in ("run", "run_passed", "cases", "counted", "passed", "pass_rate", "ci_low")] == [
        "int64",
        "boolean",
        "Int64",
        "Int64",
        "Int64",
        "float64",
        "float64",
    ]
    wide = frame.dropna(subset=["slice"]).pivot(index="slice", columns="run", values="pass_rate")
    assert list(wide.index) == ["a,b", "only-here", "提示词注入", "退款"] and list(wide.columns) == [0, 2, 3, 4, 5]
    assert wide.loc["a,b", 0] == 0.5 and wide.loc["a,b", 2] == 1.0 and wide.loc["a,b"].isna().sum() == 3


def test_read_history_takes_a_path_or_several_and_the_latest_runs(history: Path) -> None:
    both = read_history([history / "1.json", str(history / "9")])
    assert both.drop_duplicates("run")["label"].tolist() == ["1", "9"]
    assert read_history(history, last=2).drop_duplicates("run")["label"].tolist() == ["11/x", "12"]
    assert len(read_history(history, last=0)) == 0
    assert read_history(history / "2.json")["run_passed"].tolist() == [False]
    with pytest.raises(ConfigError, match="no such file or folder"):
        read_history(history / "missing")


def test_history_refuses_a_rate_that_is_no_number(history: Path) -> None:
    (history / "run-99.json").write_text(json.dumps({"slices": [_slice("s", 1, 1, "100%", 0.2, 1.0)]}), "utf-8")
    with pytest.raises(ConfigError, match=r"run-99\.json: slices\[0\]\.pass_rate: Input should be a valid number"):
        read_history(history)
