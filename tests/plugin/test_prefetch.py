"""When calls start: at the end of collection, before pytest runs the first case; never under
``--collect-only`` or after a collection error."""

from __future__ import annotations

import pytest

from tests.loopback import LoopbackServer
from tests.plugin.test_endpoint import _cases
from tests.plugin.test_endpoint import _config
from tests.plugin.test_endpoint import _run


#: A conftest that asks the server, before pytest runs any item, how many calls it has seen.
CONFTEST = '''
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
'''


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def test_calls_start_before_the_first_case_runs(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    loopback.knobs.latency_s = 0.2
    _cases(pytester, [f"p{i}" for i in range(20)])
    _config(pytester, loopback.base_url)
    stats = loopback.base_url.removesuffix("/v1") + "/stats"
    pytester.makeconftest(CONFTEST.format(stats=stats, want=4))
    result = _run(pytester, "--prompt-no-cache", "--prompt-concurrency", "4")
    result.assert_outcomes(passed=20)
    result.stdout.fnmatch_lines(["calls before the first case: [[]4[]]"])  # the bound full at once
    assert loopback.stats.requests == 20


@pytest.mark.parametrize("args", [["--collect-only"], ["--deselect", "cases.jsonl::c-01"]],
                         ids=["collect-only", "deselected"])
def test_no_call_under_collect_only_or_for_a_deselected_case(
    pytester: pytest.Pytester, loopback: LoopbackServer, args: list[str]
) -> None:
    _cases(pytester, ["p0", "p1", "p2"])
    _config(pytester, loopback.base_url)
    _run(pytester, "--prompt-no-cache", *args)
    expected = [] if args == ["--collect-only"] else ["p0", "p2"]
    assert sorted(e["body"]["messages"][0]["content"] for e in loopback.stats.log) == expected


def test_no_call_after_a_collection_error(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    _cases(pytester, ["p0", "p1"])
    pytester.makefile(".jsonl", broken="{not json")
    _config(pytester, loopback.base_url)
    result = pytester.runpytest("--prompt-suite", "cases.jsonl", "--prompt-suite", "broken.jsonl",
                                "-p", "no:randomly", "--prompt-no-cache")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert loopback.stats.requests == 0
