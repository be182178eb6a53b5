"""``llm-rubric`` with a judge behind a real HTTP endpoint, and the review queue in the report."""

from __future__ import annotations

import json

import pytest

from tests.loopback import LoopbackServer
from tests.suite import Suite


def test_llm_rubric_with_a_judge_on_the_loopback_endpoint(suite: Suite, loopback: LoopbackServer) -> None:
    """The answered model is the fake one (it echoes the input); the judge is ``openai:`` on the
    loopback server, which echoes the judge's prompt. The prompt quotes the output, so an output that
    is a verdict object is what the judge answers: the verdict travels over real HTTP."""
    suite.config({"models.judge": {"spec": "openai:judge-model", "base_url": loopback.base_url, "max_retries": 0}})
    rubric = [{"type": "llm-rubric", "value": "The reply is polite"}]
    cases = [
        {
            "case_id": "good",
            "input": '{"reason": "Polite.", "pass": true, "score": 0.9}',
            "slice": "s",
            "assert": rubric,
        },
        {"case_id": "bad", "input": '{"reason": "Curt.", "pass": false, "score": 0.2}', "slice": "s", "assert": rubric},
        {"case_id": "down", "input": "judge fails [[400]]", "slice": "s", "assert": rubric},
    ]
    suite.cases(cases)
    result = suite.run("--prompt-report", "report", "--prompt-no-cache")
    result.assert_outcomes(passed=1, failed=2)
    rows = suite.by_id()
    [good] = [c for c in rows["good"]["checks"] if c["name"] == "llm-rubric"]
    assert good["passed"] is True and good["score"] == 0.9
    assert good["details"]["reason"] == "Polite."
    [bad] = [c for c in rows["bad"]["checks"] if c["name"] == "llm-rubric"]
    assert bad["passed"] is False and bad["score"] == 0.2
    [down] = [c for c in rows["down"]["checks"] if c["name"] == "llm-rubric"]
    assert down["passed"] is False
    assert "the judge call failed: HTTP 400" in down["message"]
    # one judge request per case, each carrying the rubric and the output under judgement
    assert loopback.stats.requests == 3
    bodies = [json.dumps(entry["body"], ensure_ascii=False) for entry in loopback.stats.log]
    assert all("The reply is polite" in body for body in bodies)
    assert all(entry["body"]["model"] == "judge-model" for entry in loopback.stats.log)


def test_review_queue_in_the_report(suite: Suite) -> None:
    cases = [
        {"case_id": "r-1", "input": "refund approved", "slice": "s", "review": "legal wording"},
        {"case_id": "r-2", "input": "x", "slice": "s", "assert": [{"type": "human-review", "value": "tone check"}]},
        {"case_id": "ok", "input": "y", "slice": "s"},
    ]
    suite.cases(cases)
    result = suite.run("--prompt-report", "report")
    assert result.ret == pytest.ExitCode.OK  # review is not a failure
    queue = suite.rows(name="review.jsonl")
    assert [(q["case_id"], q["reasons"], q["output"]) for q in queue] == [
        ("r-1", ["legal wording"], "refund approved"),
        ("r-2", ["tone check"], "x"),
    ]
    summary_md = (suite.path / "report" / "summary.md").read_text(encoding="utf-8")
    assert "### Review queue (for a human; see review.jsonl) (2)" in summary_md
    assert "- r-1 \\[s\\]: legal wording" in summary_md  # markdown-escaped brackets


def test_similar_cosine_embeds_with_models_embedding(suite: Suite) -> None:
    """``[models.embedding]`` gives ``similar:cosine`` its embeddings (the fake model's word counts here;
    a plugin's model with ``embed``); without one the check fails saying how to add one."""
    similar = [{"type": "similar:cosine", "value": "your refund was issued"}]
    suite.cases(
        [
            {"case_id": "close", "input": "Your refund was issued today", "slice": "s", "assert": similar},
            {"case_id": "far", "input": "The weather is nice", "slice": "s", "assert": similar},
        ]
    )
    suite.config({"models.embedding": {"spec": "fake"}})
    suite.run("--prompt-report", "report")
    rows = suite.by_id()
    assert (rows["close"]["outcome"], rows["far"]["outcome"]) == ("passed", "failed")
    assert "similarity 0.89" in rows["close"]["checks"][0]["message"]
    suite.config({"suite": {"cases": ["cases.jsonl"]}})
    suite.run("--prompt-report", "bare")
    message = suite.by_id("bare")["close"]["checks"][0]["message"]
    assert "no embedding model: add [models.embedding] to the suite config" in message


def test_an_embedding_model_that_cannot_embed_is_a_usage_error(suite: Suite) -> None:
    """``echo`` has no ``embed`` and no endpoint (an ``openai:`` model has: test_embedding_endpoint.py)."""
    suite.cases([{"case_id": "a", "input": "x", "slice": "s", "assert": [{"type": "similar:cosine", "value": "x"}]}])
    suite.config({"models.embedding": {"spec": "echo"}})
    result = suite.run()
    assert result.ret != 0
    assert "models.embedding.spec = 'echo' does not embed texts" in result.stdout.str() + result.stderr.str()
