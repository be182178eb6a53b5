"""Where the response cache lives, end to end: the invocation folder, whatever pytest's rootdir, said by the run."""

from __future__ import annotations

import pytest

from tests.loopback import LoopbackServer
from tests.suite import Suite


PROMPTS = [f"case {i}" for i in range(8)]


def test_the_cache_stays_in_the_invocation_folder_whatever_the_rootdir(
    suite: Suite, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--prompt-report ../reports/one`` (space form) once that folder exists makes pytest take it for a test
    path and its rootdir the parent folder: the cache stays where the run was invoked, and the run says where."""
    suite.prompts(PROMPTS, name="proj/cases.jsonl")
    suite.config({"model": loopback.model(params={"max_tokens": 16})}, name="proj/promptsuite.toml")
    (suite.path / "reports" / "one").mkdir(parents=True)
    monkeypatch.chdir(suite.path / "proj")
    first = suite.run("--prompt-report", "../reports/one")
    first.assert_outcomes(passed=len(PROMPTS))
    assert loopback.stats.requests == len(PROMPTS)

    second = suite.run("--prompt-report=../reports/two")
    second.assert_outcomes(passed=len(PROMPTS))
    assert loopback.stats.requests == len(PROMPTS)  # every answer from the cache the first run filled
    first.stdout.fnmatch_lines(["totals: 8 calls, 0 cache hits in .promptsuite_cache, *"])
    first.stdout.fnmatch_lines(["*pytest took '../reports/one' (the value of --prompt-report) for a test path*"])
    second.stdout.fnmatch_lines(["totals: 0 calls, 8 cache hits in .promptsuite_cache, *"])
    assert "cache hits (no cache: --prompt-no-cache)," in suite.run("--prompt-no-cache").stdout.str()
    suite.run("--prompt-record", "cassette.jsonl").assert_outcomes(passed=len(PROMPTS))
    assert "cache hits (no cache: --prompt-replay)," in suite.run("--prompt-replay", "cassette.jsonl").stdout.str()
    assert "for a test path" not in second.stdout.str()
    assert (suite.path / "proj" / ".promptsuite_cache").is_dir()
    assert not (suite.path / ".promptsuite_cache").exists()
