"""Suites against a real OpenAI-compatible server on 127.0.0.1 (``tests/loopback.py``).

Faults, concurrency, the cache, record/replay, repeats, ``-x``, Ctrl-C and secrets, end to end
through pytest.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from tests.hostile.support import assert_secret_nowhere
from tests.loopback import LoopbackServer
from tests.suite import UNUSED_PLUGINS
from tests.suite import Suite
from tests.suite import default_sigint


SECRET = "sk-test-NEVER-WRITE-ME-7a3f9c"
DEAD_URL = "http://127.0.0.1:9/v1"  # the discard port: nothing listens, connections are refused


def test_a_suite_runs_against_the_endpoint(suite: Suite, loopback: LoopbackServer, plugin_args: list[str]) -> None:
    ids = suite.prompts(["alpha", "beta [[500]]", "gamma [[drop]]", "delta [[400]]", "epsilon", "zeta"])
    suite.config({"model": loopback.model(max_retries=1, params={"temperature": 0})})
    result = suite.run("--prompt-report", "report", *plugin_args)

    result.assert_outcomes(passed=5, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # an error never passes the gate
    rows = suite.by_id()
    assert sorted(rows) == ids
    error = rows["c-03"]
    assert error["outcome"] == "error"
    assert error["error"] == (f"HTTP 400 from {loopback.base_url}/chat/completions: error 400 (loopback_error)")
    ok = rows["c-00"]
    assert ok["outcome"] == "passed" and ok["output"] == "alpha"
    assert ok["latency_ms"] > 0
    assert ok["usage"] == {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    # every case called once (under -n 2 no worker called for another's case), two retried once
    assert loopback.stats.requests == 6 + 2
    assert all(e["body"]["temperature"] == 0 for e in loopback.stats.log)


def test_the_completions_endpoint(suite: Suite, loopback: LoopbackServer) -> None:
    suite.prompts(["one", "two"])
    suite.config({"model": loopback.model(endpoint="completions")})
    result = suite.run()

    result.assert_outcomes(passed=2)
    assert {e["path"] for e in loopback.stats.log} == {"/v1/completions"}
    assert sorted(e["body"]["prompt"] for e in loopback.stats.log) == ["one", "two"]


def test_the_base_url_option_beats_the_config(suite: Suite, loopback: LoopbackServer) -> None:
    suite.prompts(["one"])
    suite.config({"model": {"spec": "openai:loop-model", "base_url": DEAD_URL}})
    result = suite.run("--prompt-base-url", loopback.base_url)

    result.assert_outcomes(passed=1)
    assert loopback.stats.requests == 1


def test_the_base_url_from_the_environment(
    suite: Suite, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite.prompts(["one"])
    monkeypatch.setenv("OPENAI_BASE_URL", loopback.base_url)
    result = suite.run("--prompt-model", "openai:from-env")

    result.assert_outcomes(passed=1)
    assert loopback.stats.log[0]["body"]["model"] == "from-env"


@pytest.mark.parametrize(("option", "config", "expected"), [("12", None, 12), (None, 5, 5)])
def test_calls_run_concurrently_while_pytest_runs_items_one_by_one(
    suite: Suite, loopback: LoopbackServer, option: str | None, config: int | None, expected: int
) -> None:
    loopback.reset(latency_s=0.2, hold_until=expected)  # every call the bound lets out is in flight at once
    suite.prompts([f"case {i}" for i in range(3 * expected)])
    suite.config({"model": loopback.model(**({"concurrency": config} if config else {}))})
    result = suite.run(*(["--prompt-concurrency", option] if option else []))

    result.assert_outcomes(passed=3 * expected)
    assert loopback.stats.max_answering == expected


def test_seeded_faults_leave_every_case_accounted_for(suite: Suite, loopback: LoopbackServer) -> None:
    loopback.reset(fail_rate=0.3, fail_statuses=(429, 500), retry_after_ms=20, seed=3)
    ids = suite.prompts([f"case {i}" for i in range(60)])
    suite.config({"model": loopback.model()})
    result = suite.run("--prompt-report", "report", "--prompt-concurrency", "16")

    rows = suite.rows()
    assert sorted(row["case_id"] for row in rows) == ids  # none lost, none twice
    outcomes = {row["outcome"] for row in rows}
    assert outcomes <= {"passed", "error"}
    for row in rows:
        if row["outcome"] == "error":
            assert row["error"].startswith(("HTTP 429 from", "HTTP 500 from"))
            assert row["error"].endswith("(gave up after 4 attempts)")
    passed = sum(row["outcome"] == "passed" for row in rows)
    result.assert_outcomes(passed=passed, failed=60 - passed)
    assert loopback.stats.statuses[429] + loopback.stats.statuses[500] > 10  # faults happened


def test_a_wrong_base_url_stops_the_run_with_one_message(suite: Suite, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")  # pytest then prints its short summary untruncated: the most lines
    suite.prompts([f"case {i}" for i in range(20)])
    suite.config({"model": {"spec": "openai:loop-model", "base_url": DEAD_URL, "max_retries": 0}})
    result = suite.run("--prompt-report", "report")

    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(failed=1)
    cause = f"cannot connect to {DEAD_URL}/chat/completions: All connection attempts failed"
    result.stdout.fnmatch_lines(
        [
            f"cases.jsonl:1: c-00 [[]slice s[]] error: {cause} (gave up after 1 attempt)",
            "*promptsuite: pass rate by slice*",
            f"*the run stopped before every case ran (endpoint unusable, run stopped: {cause}*): 1 of 20 cases ran*",
            f"*Interrupted: promptsuite: endpoint unusable, run stopped: {cause}*",
        ]
    )
    assert len(suite.rows()) == 1
    assert sum("cannot connect" in line for line in result.outlines) <= 4


def test_a_wrong_base_url_under_xdist(suite: Suite) -> None:
    suite.prompts([f"case {i}" for i in range(40)])
    suite.config({"model": {"spec": "openai:loop-model", "base_url": DEAD_URL, "max_retries": 0}})
    result = suite.run("-n", "2")

    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*Interrupted: promptsuite: endpoint unusable, run stopped: *"])
    assert result.parseoutcomes()["failed"] <= 4  # each worker stops on its first case


def test_a_bad_key_stops_the_run_and_is_never_shown(
    suite: Suite, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    loopback.knobs.api_key = "sk-the-right-one"
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    suite.prompts([f"case {i}" for i in range(10)])
    suite.config({"model": loopback.model()})
    result = suite.run("--prompt-report", "report", "--junitxml", "junit.xml")

    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["*HTTP 401 from *: Incorrect API key provided: *** (invalid_api_key) (check the key in $OPENAI_API_KEY)*"]
    )
    assert loopback.stats.log[0]["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in result.stdout.str() + result.stderr.str()
    assert assert_secret_nowhere(suite.path, secret=SECRET) > 0


def test_secrets_reach_no_file_written(suite: Suite, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    loopback.knobs.api_key = SECRET
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    suite.prompts(["one", "two [[400]]", "three"])
    suite.config({"model": loopback.model()})
    result = suite.run(
        "--prompt-report", "report", "--prompt-record", "cassette.jsonl", "--junitxml", "junit.xml", "-n", "2"
    )

    result.assert_outcomes(passed=2, failed=1)
    assert [e["authorization"] for e in loopback.stats.log] == [f"Bearer {SECRET}"] * 3
    written = {p.relative_to(suite.path).parts[0] for p in suite.path.rglob("*") if p.is_file()}
    assert {".promptsuite_cache", "report", "cassette.jsonl", "junit.xml"} <= written
    assert SECRET not in result.stdout.str() + result.stderr.str()
    assert assert_secret_nowhere(suite.path, secret=SECRET) > 0


def test_the_second_run_is_answered_from_the_cache(suite: Suite, loopback: LoopbackServer) -> None:
    suite.prompts(["one", "two", "three [[empty]]"])
    suite.config({"model": loopback.model()})
    suite.run().assert_outcomes(passed=2, failed=1)
    assert loopback.stats.requests == 3

    result = suite.run("--prompt-report", "report")
    result.assert_outcomes(passed=3)  # the empty answer was not stored: asked again
    assert loopback.stats.requests == 4
    latencies = [row["latency_ms"] for row in suite.rows()]
    assert latencies[:2] == [None, None]  # cache hits report no latency
    assert latencies[2] > 0
    assert (suite.path / ".promptsuite_cache" / ".gitignore").is_file()

    suite.run("--prompt-no-cache").assert_outcomes(passed=3)
    assert loopback.stats.requests == 7
    suite.run("--prompt-cache", "elsewhere").assert_outcomes(passed=3)
    assert loopback.stats.requests == 10
    assert (suite.path / "elsewhere" / "v1").is_dir()


def test_record_then_replay_offline(suite: Suite, loopback: LoopbackServer, plugin_args: list[str]) -> None:
    ids = suite.prompts([f"case {i}" for i in range(8)])
    suite.config({"model": loopback.model()})
    suite.run("--prompt-record", "cassette.jsonl", "--prompt-no-cache", *plugin_args).assert_outcomes(passed=8)
    entries = [json.loads(line) for line in (suite.path / "cassette.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [e["case_id"] for e in entries] == ids

    loopback.reset(fail_rate=1.0, fail_statuses=(400,))  # the endpoint is "gone"
    result = suite.run("--prompt-replay", "cassette.jsonl", "--prompt-report", "report", *plugin_args)
    result.assert_outcomes(passed=8)
    assert loopback.stats.requests == 0
    assert {row["latency_ms"] for row in suite.rows()} == {None}


def test_a_replay_miss_is_an_error_naming_the_case(suite: Suite, loopback: LoopbackServer) -> None:
    suite.prompts(["one"])
    suite.config({"model": loopback.model()})
    suite.run("--prompt-record", "cassette.jsonl").assert_outcomes(passed=1)
    suite.prompts(["one", "two"])
    result = suite.run("--prompt-replay", "cassette.jsonl")

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*case c-01: no recorded response in the cassette *cassette.jsonl*"])
    assert loopback.stats.requests == 1  # the recording only


def test_record_and_replay_exclude_each_other(suite: Suite) -> None:
    suite.prompts(["one"])
    result = suite.run("--prompt-record", "a.jsonl", "--prompt-replay", "b.jsonl")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--prompt-record and --prompt-replay exclude each other*"])


def test_replay_of_a_missing_cassette_is_a_usage_error(suite: Suite) -> None:
    suite.prompts(["one"])
    result = suite.run("--prompt-replay", "nope.jsonl")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--prompt-replay *nope.jsonl: cannot read the cassette*"])


@pytest.mark.parametrize("plugin_args", [[], ["-n", "2"]], ids=["serial", "xdist_two"])
def test_repeat_runs_every_case_n_times(suite: Suite, loopback: LoopbackServer, plugin_args: list[str]) -> None:
    suite.prompts(["one", "two"])
    suite.config({"model": loopback.model()})
    result = suite.run("--prompt-repeat", "3", "--prompt-report", "report", "-v", *plugin_args)

    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines_random(
        [
            f"*PASSED*cases.jsonl::c-0{i}[[]repeat-{r}[]]*"
            if plugin_args == ["-n", "2"]
            else f"cases.jsonl::c-0{i}[[]repeat-{r}[]] PASSED*"
            for i in range(2)
            for r in range(3)
        ]
    )
    rows = suite.rows()
    assert sorted((row["case_id"], row["repeat"]) for row in rows) == [
        (c, r) for c in ("c-00", "c-01") for r in range(3)
    ]
    assert suite.summary()["totals"]["cases"] == 6
    assert loopback.stats.requests == 6  # the cache is keyed per repeat

    suite.run("--prompt-repeat", "3", *plugin_args).assert_outcomes(passed=6)
    assert loopback.stats.requests == 6  # now every repeat is a cache hit


def test_repeat_must_be_positive(suite: Suite) -> None:
    suite.prompts(["one"])
    result = suite.run("--prompt-repeat", "0")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--prompt-repeat: '0' must be at least 1*"])


def test_exitfirst_stops_issuing_calls(suite: Suite, loopback: LoopbackServer) -> None:
    loopback.knobs.latency_s = 0.05
    suite.prompts(["[[400]] fails", *[f"case {i}" for i in range(39)]])
    suite.config({"model": loopback.model()})
    result = suite.run("-x", "--prompt-concurrency", "2", "--prompt-report", "report")

    result.assert_outcomes(failed=1)
    assert len(suite.rows()) == 1
    assert loopback.stats.requests <= 8  # the prefetch window (4 x concurrency), not 40


SLOW_CASES = """
import json, time, urllib.request

def pytest_runtest_setup(item):
    if item.name < "c-06":  # the first cases run slower than their calls return
        time.sleep(0.1)
    if item.name == "c-05":
        with urllib.request.urlopen("{stats}") as reply:
            seen = json.loads(reply.read())["requests"]
        with open("seen.txt", "w") as out:
            out.write(str(seen))
"""


@pytest.mark.parametrize(("option", "most"), [(None, 40), ("-x", 5 + 8)])
def test_calls_run_ahead_of_cases_that_run_slower_than_calls_return(
    suite: Suite, loopback: LoopbackServer, option: str | None, most: int
) -> None:
    suite.prompts([f"case {i}" for i in range(40)])
    suite.config({"model": loopback.model()})
    suite.pytester.makeconftest(SLOW_CASES.format(stats=loopback.base_url.removesuffix("/v1") + "/stats"))
    result = suite.run("--prompt-concurrency", "2", *([option] if option else []))

    result.assert_outcomes(passed=40)
    seen = int((suite.path / "seen.txt").read_text())
    if option is None:  # more than the window (4 x concurrency) past the running case
        assert seen > 5 + 8
    else:  # -x: a call ahead is a call the run may never use: the window only
        assert seen <= most


def test_ctrl_c_cancels_calls_and_keeps_finished_results(suite: Suite, loopback: LoopbackServer) -> None:
    loopback.knobs.hang_s = 60
    suite.prompts(["one", "two", "three", "four [[hang]]", "five", "six"])
    suite.config({"model": loopback.model(timeout_s=120)})
    process = suite.pytester.popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "--prompt-suite",
            "cases.jsonl",
            "-p",
            "no:randomly",
            *UNUSED_PLUGINS,
            "--prompt-concurrency",
            "1",
            "--prompt-report",
            "report",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        preexec_fn=default_sigint,
    )
    try:
        loopback.wait_for(lambda: any("four" in str(e["body"]) for e in loopback.stats.log))
        time.sleep(0.5)  # pytest reaches the hanging case and waits for it
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
    finally:
        process.kill()

    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    assert b"KeyboardInterrupt" in output
    rows = suite.rows()
    assert [(row["case_id"], row["outcome"]) for row in rows] == [
        ("c-00", "passed"),
        ("c-01", "passed"),
        ("c-02", "passed"),
    ]
    sent = json.dumps([e["body"] for e in loopback.stats.log])
    assert "five" not in sent and "six" not in sent  # one call at a time, and it never ended


def test_xdist_workers_share_the_concurrency_bound(suite: Suite, loopback: LoopbackServer) -> None:
    # no answer before 5 calls came: more than one worker's 4 in flight at once, at any speed (8, the most both
    # workers may have, is not held for: at the lowest versions CI installs they reached 7, and the held calls
    # timed out and were retried)
    loopback.reset(latency_s=0.2, hold_until=5)
    suite.prompts([f"case {i}" for i in range(48)])
    suite.config({"model": loopback.model()})
    result = suite.run("-n", "2", "--prompt-concurrency", "8")

    result.assert_outcomes(passed=48)
    assert 4 < loopback.stats.max_answering <= 8  # both workers at once, never past the shared bound
    assert loopback.stats.requests == 48


def test_an_lm_meta_template_stops_completions_at_the_end_of_the_model_turn(
    suite: Suite, loopback: LoopbackServer
) -> None:
    """ChatML on /v1/completions: the request stops at ``<|im_end|>``, unless the config says
    otherwise (the model's params win over what the meta template implies)."""
    suite.prompts(["one"])
    suite.config({"model": loopback.model(endpoint="completions", meta_template="chatml")})
    suite.run("--prompt-no-cache").assert_outcomes(passed=1)
    [entry] = loopback.stats.log
    assert entry["body"]["stop"] == ["<|im_end|>"]
    assert entry["body"]["prompt"] == "<|im_start|>user\none<|im_end|>\n<|im_start|>assistant\n"

    loopback.reset()
    suite.config({"model": loopback.model(endpoint="completions", meta_template="chatml", params={"stop": ["###"]})})
    suite.run("--prompt-no-cache").assert_outcomes(passed=1)
    [entry] = loopback.stats.log
    assert entry["body"]["stop"] == ["###"]

    loopback.reset()  # chat endpoints apply the chat template themselves: no stop is added
    suite.config({"model": loopback.model(endpoint="chat")})
    suite.run("--prompt-no-cache").assert_outcomes(passed=1)
    [entry] = loopback.stats.log
    assert "stop" not in entry["body"]
