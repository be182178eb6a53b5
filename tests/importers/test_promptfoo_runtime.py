"""The Node.js side of imported promptfoo suites: one process serves the run's ``javascript`` asserts and
transforms (a round trip a call, not a Node start), and what the code logs or does to that process stays apart."""

from __future__ import annotations

import shutil

import pytest

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.dialects.promptfoo.code_asserts import javascript
from pytest_promptsuite.errors import CheckError


pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
CASE = PromptCase.from_dict({"case_id": "c-1", "input": "hi", "slice": "s", "vars": {"x": "hi"}})


def test_javascript_asserts_share_one_node_process() -> None:
    first = javascript("process.pid", "out", CASE).score  # a number is the assert's score
    assert isinstance(first, float) and first > 0
    assert javascript("process.pid", "other", CASE).score == first
    assert javascript("output === 'out' && context.vars.x === 'hi'", "out", CASE).passed is True


def test_what_an_assert_logs_does_not_garble_its_answer() -> None:
    assert javascript("console.log('noise', 1);\nreturn output.length === 3", "out", CASE).passed is True


def test_an_assert_that_ends_node_fails_and_the_next_one_runs() -> None:
    with pytest.raises(CheckError, match=r"javascript: Node\.js gave no answer .* or ended"):
        javascript("process.exit(3)", "out", CASE)
    assert javascript("1 + 1 === 2", "out", CASE).passed is True


def test_a_throwing_assert_names_its_error() -> None:
    with pytest.raises(CheckError, match=r"javascript: the JavaScript raised: Error: no way"):
        javascript("(() => { throw new Error('no way'); })()", "out", CASE)
