"""Baseline and shard files (wave 4, findings 9 and 10): a ``results.jsonl`` row or a ``summary.json`` ``run``
whose fields are not what we write is refused where it is read, as ``path:line: field: ...``, before any
call (``--prompt-baseline``, ``diff``, ``merge``); a (case, variant, repeat) twice is an error naming both lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.cli.main import main
from tests.hostile.support import assert_clean
from tests.hostile.support import case
from tests.hostile.support import endpoint
from tests.hostile.support import output
from tests.loopback import LoopbackServer
from tests.suite import Suite


#: name -> (what the second row's fields become; what the message says after ``results.jsonl:2: ``)
BAD_ROWS: dict[str, tuple[dict[str, Any], str]] = {
    "checks-string": ({"checks": "oops"}, "checks: Input should be a valid list"),
    "check-not-object": ({"checks": ["must_include"]}, "checks[0]: Input should be a valid dictionary"),
    "check-passed-string": (
        {"checks": [{"layer": "content", "name": "x", "passed": "yes", "message": ""}]},
        "checks[0].passed: Input should be a valid boolean",
    ),
    "check-unknown-key": (
        {"checks": [{"layer": "content", "name": "x", "passed": True, "message": "", "pased": True}]},
        "unknown key 'checks[0].pased' (did you mean 'passed'?)",
    ),
    "case-id-number": ({"case_id": 7}, "case_id: Input should be a valid string"),
    "case-id-null": ({"case_id": None}, "case_id: Input should be a valid string"),
    "case-id-empty": ({"case_id": ""}, "case_id: String should have at least 1 character"),
    "output-object": ({"output": {"text": "hi"}}, "output: Input should be a valid string"),
    "slice-list": ({"slice": ["s"]}, "slice: Input should be a valid string"),
    "variant-number": ({"variant": 2}, "variant: Input should be a valid string"),
    "repeat-string": ({"repeat": "1"}, "repeat: Input should be a valid integer"),
    "repeat-negative": ({"repeat": -1}, "repeat: Input should be greater than or equal to 0"),
    "outcome-other-word": ({"outcome": "PASS"}, "outcome: Input should be 'passed', 'failed', 'error'"),
    "tags-string": ({"tags": "leak"}, "tags: Input should be a valid list"),
    "metadata-list": ({"metadata": [1]}, "metadata: Input should be a valid dictionary"),
    "replies-number": ({"replies": 3}, "replies: Input should be a valid list"),
}

#: name -> (a change to summary.json, what the message says after ``summary.json: ``)
BAD_SUMMARIES: dict[str, tuple[dict[str, Any], str]] = {
    "params-string": ({"run": {"models": {"": {"params": "t=0"}}}}, 'run.models[""].params: Input should be a valid'),
    "spec-number": ({"run": {"models": {"v1": {"spec": 3}}}}, "run.models.v1.spec: Input should be a valid string"),
    "deterministic-string": (
        {"run": {"models": {"": {"deterministic": "yes"}}}},
        'run.models[""].deterministic: Input should be a valid boolean',
    ),
    "models-list": ({"run": {"models": ["fake"]}}, "run.models: Input should be a valid dictionary"),
    "run-string": ({"run": "fake"}, "run: Input should be a valid dictionary"),
    "policy-slice-above-one": ({"policy": {"slices": {"s": 90}}}, "policy.slices.s: Input should be less than"),
    "policy-default-string": ({"policy": {"config_default": "0.9"}}, "policy.config_default: Input should be a"),
}


def _baseline(suite: Suite) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run two cases on the fake model into ``base`` (a passes, b fails) and return its rows and summary."""
    suite.cases([case("a"), case("b", must_include=["zzz"])])
    assert suite.run("--prompt-model", "fake", "--prompt-report", "base").ret == 1
    return suite.rows("base"), json.loads((suite.path / "base" / "summary.json").read_text(encoding="utf-8"))


def _write_set(folder: Path, rows: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (folder / "summary.json").write_text(json.dumps(summary), encoding="utf-8")


def _refused_everywhere(
    suite: Suite, loopback: LoopbackServer, capsys: pytest.CaptureFixture[str], message: str
) -> None:
    """Assert that ``bad`` is refused with ``message`` by a run (before any call, no report), ``diff`` and
    ``merge`` (as a shard and as its baseline), each without a traceback and writing nothing."""
    suite.config(endpoint(loopback.base_url))
    result = suite.run("--prompt-baseline", "bad", "--prompt-report", "report")
    assert_clean(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output(result)
    assert f"--prompt-baseline: {message}" in output(result)
    assert loopback.stats.requests == 0  # refused before any call
    assert not (suite.path / "report").exists()

    bad, good = str(suite.path / "bad"), str(suite.path / "base")
    for args in (["diff", bad, good], ["diff", good, bad], ["merge", bad, "--out", str(suite.path / "m1")]):
        capsys.readouterr()
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert f"{suite.path}/{message}" in err and "Traceback" not in err, err
    capsys.readouterr()
    assert main(["merge", good, "--out", str(suite.path / "m2"), "--prompt-baseline", bad]) == 2
    assert f"{suite.path}/{message}" in capsys.readouterr().err
    assert not (suite.path / "m1").exists() and not (suite.path / "m2").exists()


@pytest.mark.parametrize("name", list(BAD_ROWS))
def test_a_baseline_row_not_as_we_write_it_is_refused_where_it_is_read(
    name: str, suite: Suite, loopback: LoopbackServer, capsys: pytest.CaptureFixture[str]
) -> None:
    change, said = BAD_ROWS[name]
    rows, summary = _baseline(suite)
    _write_set(suite.path / "bad", [rows[0], {**rows[1], **change}], summary)
    _refused_everywhere(suite, loopback, capsys, f"bad/results.jsonl:2: {said}")


@pytest.mark.parametrize("name", list(BAD_SUMMARIES))
def test_a_baseline_summary_run_not_as_we_write_it_is_refused_where_it_is_read(
    name: str, suite: Suite, loopback: LoopbackServer, capsys: pytest.CaptureFixture[str]
) -> None:
    change, said = BAD_SUMMARIES[name]
    rows, summary = _baseline(suite)
    _write_set(suite.path / "bad", rows, {**summary, **change})
    _refused_everywhere(suite, loopback, capsys, f"bad/summary.json: {said}")


def test_a_case_variant_and_repeat_twice_in_a_baseline_names_both_lines(
    suite: Suite, loopback: LoopbackServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fixed gate took the last row and the sequential gate the first: now neither runs."""
    rows, summary = _baseline(suite)
    _write_set(suite.path / "bad", [rows[1], rows[0], {**rows[1], "outcome": "passed"}], summary)
    said = "bad/results.jsonl:3: case 'b' (variant None, repeat 0) is also on line 1"
    _refused_everywhere(suite, loopback, capsys, said)
    result = suite.run("--prompt-baseline", "bad", "--prompt-sequential")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and said in output(result), output(result)


def test_every_field_of_a_baseline_we_write_passes_the_check(suite: Suite, capsys: pytest.CaptureFixture[str]) -> None:
    """A real report (variants, repeats, review, checks with details) reads back as a baseline and a shard."""
    suite.config({"variants": {"v1": {}, "v2": {}}})
    suite.cases([case("a"), case("b", must_include=["zzz"]), case("c", review="look")])
    assert suite.run("--prompt-repeat", "2", "--prompt-report", "base", "--prompt-min-pass-rate", "0").ret == 0
    result = suite.run("--prompt-repeat", "2", "--prompt-baseline", "base", "--prompt-min-pass-rate", "0")
    assert result.ret == 0, output(result)
    base = str(suite.path / "base")
    assert main(["diff", base, base]) == 0
    assert main(["merge", base, "--out", str(suite.path / "merged"), "--prompt-baseline", base]) == 0


def test_history_reads_its_summaries_through_the_same_reader(
    suite: Suite, loopback: LoopbackServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """An earlier run's summary.json whose ``run`` is not as we write it is refused as a baseline's is."""
    _, summary = _baseline(suite)
    change, said = BAD_SUMMARIES["params-string"]
    suite.write("history/run-1/summary.json", json.dumps({**summary, **change}))
    suite.config(endpoint(loopback.base_url))
    result = suite.run("--prompt-history", "history", "--prompt-report", "report")
    message = f"history/run-1/summary.json: {said}"
    assert result.ret == pytest.ExitCode.USAGE_ERROR and message in output(result), output(result)
    assert loopback.stats.requests == 0 and not (suite.path / "report").exists()
    capsys.readouterr()
    assert main(["history", str(suite.path / "history")]) == 1
    assert f"{suite.path}/{message}" in capsys.readouterr().err
