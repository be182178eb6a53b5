"""When calls start: at the end of collection, before pytest runs the first case; never under
``--collect-only`` or after a collection error."""

from __future__ import annotations

import pytest

from tests.loopback import LoopbackServer
from tests.suite import Suite


#: A conftest that asks the server, before pytest runs any item, how many calls it has seen.
CONFTEST = """
import json, time, urllib.request

import pytest

SEEN = []


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    deadline = time.monotonic() + 10
    while True:
        with urllib.request.urlopen("{stats}") as reply:
            seen = json.loads(reply.read())["requests"]
        if seen >= {want} or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    SEEN.append(seen)


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"calls before the first case: {{SEEN}}")
"""


def test_calls_start_before_the_first_case_runs(suite: Suite, loopback: LoopbackServer) -> None:
    loopback.knobs.latency_s = 0.2
    suite.prompts([f"p{i}" for i in range(20)])
    suite.config({"model": loopback.model()})
    stats = loopback.base_url.removesuffix("/v1") + "/stats"
    suite.pytester.makeconftest(CONFTEST.format(stats=stats, want=4))
    result = suite.run("--prompt-no-cache", "--prompt-concurrency", "4")
    result.assert_outcomes(passed=20)
    result.stdout.fnmatch_lines(["calls before the first case: [[]4[]]"])  # the bound full at once
    assert loopback.stats.requests == 20


@pytest.mark.parametrize(
    "args", [["--collect-only"], ["--deselect", "cases.jsonl::c-01"]], ids=["collect-only", "deselected"]
)
def test_no_call_under_collect_only_or_for_a_deselected_case(
    suite: Suite, loopback: LoopbackServer, args: list[str]
) -> None:
    suite.prompts(["p0", "p1", "p2"])
    suite.config({"model": loopback.model()})
    suite.run("--prompt-no-cache", *args)
    expected = [] if args == ["--collect-only"] else ["p0", "p2"]
    assert sorted(e["body"]["messages"][0]["content"] for e in loopback.stats.log) == expected


def test_no_call_after_a_collection_error(suite: Suite, loopback: LoopbackServer) -> None:
    suite.prompts(["p0", "p1"])
    suite.cases("{not json", "broken.jsonl")
    suite.config({"model": loopback.model()})
    result = suite.run("--prompt-no-cache", paths=["cases.jsonl", "broken.jsonl"])
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert loopback.stats.requests == 0
