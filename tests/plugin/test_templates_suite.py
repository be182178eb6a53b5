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


def test_results_record_the_exact_prompt_and_every_reply(suite: Suite) -> None:
    suite.pytester.copy_example("fewshot_math")
    suite.run("--prompt-report", "report", paths=["."]).assert_outcomes(passed=6)
    rows = suite.by_id()
    assert rows["add-001"]["prompt"] == (
        "<|im_start|>system\nSolve the following questions. Answer with the number only.<|im_end|>\n"
        "<|im_start|>user\n2+2=?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n"
        "<|im_start|>user\n3*5=?<|im_end|>\n<|im_start|>assistant\n15<|im_end|>\n"
        "<|im_start|>user\n12+30=?<|im_end|>\n<|im_start|>assistant\n"
    )
    assert len(rows["add-001"]["prompt_hash"]) == 12
    assert "replies" not in rows["add-001"]
    square = rows["mt-square"]
    assert square["replies"] == ["3", "9", "10"]
    assert square["output"] == "10"
    # the last request carries the model's own earlier replies
    assert square["prompt"].endswith(
        "assistant\n3<|im_end|>\n<|im_start|>user\nSquare that.<|im_end|>\n"
        "<|im_start|>assistant\n9<|im_end|>\n<|im_start|>user\nAdd one.<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_a_wrong_first_reply_feeds_the_next_turn(suite: Suite) -> None:
    suite.pytester.copy_example("fewshot_math")
    rules = json.loads((suite.path / "rules.json").read_text(encoding="utf-8"))
    for rule in rules["rules"]:
        if rule["reply"] == "7":
            rule["reply"] = "8"  # the second request now shows 8, which no rule expects
    (suite.path / "rules.json").write_text(json.dumps(rules), encoding="utf-8")
    result = suite.run("--prompt-report", "report", paths=["."])
    result.assert_outcomes(passed=5, failed=1)
    assert suite.by_id()["mt-double"]["replies"] == ["8", "I don't know."]


def test_changing_the_shots_changes_the_prompt_hash(suite: Suite) -> None:
    suite.pytester.copy_example("fewshot_math")
    suite.run("--prompt-report", "before", paths=["."])
    config = suite.path / "promptsuite.toml"
    config.write_text(
        config.read_text(encoding="utf-8").replace("fix_id_list = [0, 1]", "fix_id_list = [2, 3]"), encoding="utf-8"
    )
    suite.run("--prompt-report", "after", paths=["."])
    before, after = suite.by_id("before"), suite.by_id("after")
    assert before["add-001"]["prompt_hash"] != after["add-001"]["prompt_hash"]
    assert before["mt-double"]["prompt_hash"] == after["mt-double"]["prompt_hash"]
    assert after["add-001"]["outcome"] == "failed"  # the rule expects the original shots


CHAT_CONFIG = """\
[model]
spec = "fake"

[template.prompt_template.template]
begin = [{ role = "SYSTEM", prompt = "Be brief." }]
round = [{ role = "HUMAN", prompt = "{input} ({unit})" }, { role = "BOT", prompt = "{answer}" }]
"""


def test_chat_endpoint_gets_openai_messages(suite: Suite) -> None:
    suite.config(CHAT_CONFIG)
    suite.cases(
        [
            {
                "case_id": "c1",
                "input": "How far?",
                "slice": "s",
                "vars": {"unit": "km"},
                "answer": "SECRET",
                "must_include": ["How far? (km)"],
                "must_not_include": ["SECRET"],
            }
        ]
    )
    result = suite.run("--prompt-report", "report", paths=["."])
    result.assert_outcomes(passed=1)
    assert suite.by_id()["c1"]["prompt"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "How far? (km)"},
    ]


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
