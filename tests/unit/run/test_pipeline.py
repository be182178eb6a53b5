"""Stage tests for ``run.pipeline``: what a case sends (few-shot prompts, multi-turn requests fed the model's own
replies, OpenAI messages) and what its row records, run through ``PromptSession`` (``tests/session.py``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.models.tool_calls import ToolCall
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.run.pipeline import REQUIRED_IGNORED
from pytest_promptsuite.run.pipeline import required_ignored_hint
from tests.session import collect


EXAMPLES = Path(__file__).parents[3] / "example_suites"


def _fewshot_math(folder: Path) -> Path:
    """The few-shot example suite, copied into ``folder``."""
    shutil.copytree(EXAMPLES / "fewshot_math", folder, dirs_exist_ok=True)
    return folder


def test_results_record_the_exact_prompt_and_every_reply(tmp_path: Path) -> None:
    with collect(_fewshot_math(tmp_path), "--prompt-suite", ".", "--prompt-report", "report") as run:
        assert [row.outcome for row in run.run()] == [Outcome.PASSED] * 6
        run.finish()
    rows = run.report_rows()
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


def test_a_wrong_first_reply_feeds_the_next_turn(tmp_path: Path) -> None:
    _fewshot_math(tmp_path)
    rules = json.loads((tmp_path / "rules.json").read_text(encoding="utf-8"))
    for rule in rules["rules"]:
        if rule["reply"] == "7":
            rule["reply"] = "8"  # the second request now shows 8, which no rule expects
    (tmp_path / "rules.json").write_text(json.dumps(rules), encoding="utf-8")
    with collect(tmp_path, "--prompt-suite", ".", "--prompt-report", "report") as run:
        outcomes = [row.outcome for row in run.run()]
        run.finish()
    assert (outcomes.count(Outcome.PASSED), outcomes.count(Outcome.FAILED), len(outcomes)) == (5, 1, 6)
    assert run.report_rows()["mt-double"]["replies"] == ["8", "I don't know."]


def test_changing_the_shots_changes_the_prompt_hash(tmp_path: Path) -> None:
    _fewshot_math(tmp_path)
    with collect(tmp_path, "--prompt-suite", ".", "--prompt-report", "before") as run:
        run.run()
        run.finish()
    config = tmp_path / "promptsuite.toml"
    config.write_text(
        config.read_text(encoding="utf-8").replace("fix_id_list = [0, 1]", "fix_id_list = [2, 3]"), encoding="utf-8"
    )
    with collect(tmp_path, "--prompt-suite", ".", "--prompt-report", "after") as run:
        run.run()
        run.finish()
    before, after = run.report_rows("before"), run.report_rows("after")
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


def test_chat_endpoint_gets_openai_messages(tmp_path: Path) -> None:
    (tmp_path / "promptsuite.toml").write_text(CHAT_CONFIG, encoding="utf-8")
    case = {
        "case_id": "c1",
        "input": "How far?",
        "slice": "s",
        "vars": {"unit": "km"},
        "answer": "SECRET",
        "must_include": ["How far? (km)"],
        "must_not_include": ["SECRET"],
    }
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    with collect(tmp_path, "--prompt-suite", ".", "--prompt-report", "report") as run:
        assert [row.outcome for row in run.run()] == [Outcome.PASSED]
        run.finish()
    assert run.report_rows()["c1"]["prompt"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "How far? (km)"},
    ]


def test_a_python_check_that_takes_a_context_reads_the_prompt_sent(tmp_path: Path) -> None:
    (tmp_path / "promptsuite.toml").write_text(
        '[suite]\ncases = ["cases.jsonl"]\n[template]\ntemplate = "Ask: {{ input }}"\nrenderer = "jinja"\n',
        encoding="utf-8",
    )
    (tmp_path / "sent.py").write_text(
        "def asked(output, case, context):\n    return context.prompt == 'Ask: ' + case.input\n"
        "def two(output, case):\n    return True\n",
        encoding="utf-8",
    )
    check = [{"type": "python", "value": "file://sent.py:asked"}, {"type": "python", "value": "file://sent.py:two"}]
    case = {"case_id": "a", "input": "where?", "slice": "s", "assert": check}
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    with collect(tmp_path, "--prompt-suite", ".") as run:
        [row] = run.run()
    assert row.outcome == Outcome.PASSED
    assert [c.passed for c in row.checks] == [True, True]


def test_variants_of_a_template_file(tmp_path: Path) -> None:
    """Variants that each point at a template file with the delimiters renderer."""
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "v1.txt").write_text('Answer as JSON {"q": "<input>"}', encoding="utf-8")
    (tmp_path / "prompts" / "v2.txt").write_text('Say hi. {"q": "<input>"}', encoding="utf-8")
    (tmp_path / "promptsuite.toml").write_text(
        '[template]\nrenderer = { type = "delimiters", start = "<", end = ">" }\n'
        '[variants.v1]\ntemplate_file = "prompts/v1.txt"\n[variants.v2]\ntemplate_file = "prompts/v2.txt"\n',
        encoding="utf-8",
    )
    case = {"case_id": "a", "input": "x", "slice": "s", "must_include": ["JSON"]}
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    with collect(tmp_path, "--prompt-suite", "cases.jsonl") as run:
        rows = run.run()
    assert sorted((row.variant, row.outcome) for row in rows) == [("v1", Outcome.PASSED), ("v2", Outcome.FAILED)]
    assert {row.variant: row.prompt for row in rows} == {"v1": 'Answer as JSON {"q": "x"}', "v2": 'Say hi. {"q": "x"}'}


def test_the_required_hint_is_said_only_when_no_answer_of_the_run_called_a_tool() -> None:
    ignored = CaseResult("a", "s", Outcome.PASSED, output="x", tool_stop=REQUIRED_IGNORED)
    called = CaseResult("b", "s", Outcome.PASSED, output="", tool_calls=(ToolCall("call_1", "lookup", {}),))
    hint = required_ignored_hint([ignored])
    assert hint is not None and hint.startswith('hint: tool_choice "required" was sent with 1 case and no answer')
    assert required_ignored_hint([ignored, called]) is None  # the endpoint honours it: the row says the rest
    assert required_ignored_hint([called]) is None
