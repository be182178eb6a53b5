"""Suites use the template engine: ``[template]`` + ``[model] meta_template`` decide what is sent."""

from __future__ import annotations

import json

import pytest

from pytest_promptsuite.cli.main import main
from tests.suite import Suite


def test_fewshot_math_example_passes_its_gate(suite: Suite) -> None:
    suite.pytester.copy_example("fewshot_math")
    result = suite.run("--prompt-report", "report", paths=["."])
    result.assert_outcomes(passed=6)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*arithmetic*4*4*PASS*", "*multi-turn*2*2*PASS*", "promptsuite gate: PASSED"])


CHAT_CONFIG = """\
[model]
spec = "fake"

[template.prompt_template.template]
begin = [{ role = "SYSTEM", prompt = "Be brief." }]
round = [{ role = "HUMAN", prompt = "{input} ({unit})" }, { role = "BOT", prompt = "{answer}" }]
"""


def test_a_role_the_meta_template_lacks_stops_collection_naming_it(suite: Suite) -> None:
    """A render that needs no model answer is done at collection: its failure is the suite's (as
    ``promptsuite validate`` says), not each case's error at run time."""
    suite.config(
        {
            "model": {"spec": "fake", "endpoint": "completions", "meta_template": "chatml"},
            "template": {"prompt_template": {"template": {"round": [{"role": "NARRATOR", "prompt": "{input}"}]}}},
        }
    )
    suite.cases([{"case_id": "c1", "input": "hi", "slice": "s"}])
    result = suite.run("--prompt-report", "report", paths=["."])
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error: nothing ran
    result.stdout.fnmatch_lines(["cases.jsonl:1: c1: role 'NARRATOR' is not in the meta template's round*"])
    assert not (suite.path / "report" / "results.jsonl").exists()


def test_render_command_shows_what_each_case_sends(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = pytester.copy_example("fewshot_math")
    assert main(["render", "--prompt-suite", str(folder), "--case-id", "mul-001", "--case-id", "mt-double"]) == 0
    shown = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [s["case_id"] for s in shown] == ["mul-001", "mt-double"]
    assert shown[0]["prompt"].endswith("<|im_start|>user\n7*6=?<|im_end|>\n<|im_start|>assistant\n")
    assert "42" not in shown[0]["prompt"]  # the answer is masked
    assert shown[1]["requests"] == [shown[1]["prompt"]]


RETRIEVER_CONFTEST = """
from pytest_promptsuite.dialects.opencompass.retrievers import Retriever


class LastK(Retriever):
    def __init__(self, k=1, **kwargs):
        super().__init__(**kwargs)
        self.k = k

    def retrieve(self, train, tests, *, output_column=None):
        return [list(range(len(train)))[-self.k:] for _ in tests]


def pytest_promptsuite_make_retriever(name, params):
    if name == "LastKRetriever":
        return LastK(**params)
"""


def test_a_plugin_retriever_picks_the_examples(suite: Suite) -> None:
    suite.pytester.makeconftest(RETRIEVER_CONFTEST)
    suite.config(
        {
            "suite": {"cases": ["cases.jsonl"], "train": "train.jsonl"},
            "model": {"endpoint": "completions"},
            "template": {
                "retriever": {"type": "LastKRetriever", "k": 2},
                "ice_template": {"template": "</E>{input} = {answer}", "ice_token": "</E>"},
            },
        }
    )
    suite.cases([{"input": f"{i}+{i}", "answer": str(2 * i)} for i in range(4)], "train.jsonl")
    suite.cases([{"case_id": "c1", "input": "5+5", "answer": "10", "slice": "s"}])
    result = suite.run("--prompt-report", "report", paths=["."])
    result.assert_outcomes(passed=1)
    assert suite.by_id()["c1"]["prompt"] == "2+2 = 4\n3+3 = 6\n5+5 = "


def test_an_unknown_retriever_stops_collection(suite: Suite) -> None:
    """A static prompt error: nothing runs (it used to end each case as an error)."""
    suite.config({"template": {"retriever": {"type": "NopeRetriever"}, "prompt_template": {"template": "{input}"}}})
    suite.cases([{"case_id": "c1", "input": "hi", "slice": "s"}])
    result = suite.run("--prompt-report", "report", paths=["."])
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*template.retriever.type: unknown retriever 'NopeRetriever'*"])
    assert not (suite.path / "report" / "results.jsonl").exists()
