"""The ppl suite mode (``[template] inferencer = "ppl"``): one prompt per label, each scored by
token log-probabilities, the label of lowest perplexity checked against ``answer``; and the
``echo`` model."""

from __future__ import annotations

import pytest

from pytest_promptsuite.errors import EndpointError
from pytest_promptsuite.models.builtin_models import make_model
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.openai import OpenAIModel
from pytest_promptsuite.models.runner import ModelRunner
from pytest_promptsuite.models.scoring import LabelScore
from pytest_promptsuite.models.scoring import ScoringModel
from pytest_promptsuite.models.scoring import echo_logprobs
from pytest_promptsuite.models.scoring import fake_score
from pytest_promptsuite.models.scoring import predict_label
from tests.loopback import LoopbackServer
from tests.suite import Suite


SUITE = """\
[suite]
cases = ["cases.jsonl"]

[model]
spec = "{spec}"
endpoint = "completions"
{extra}

[template]
inferencer = "ppl"
output_column = "answer"
[template.prompt_template.template]
yes = "Q: {{input}} A: LIKELY yes"
no = "Q: {{input}} A: no"
"""


def test_fake_scores_are_fixed_by_the_tokens() -> None:
    assert fake_score("the cat sat") == fake_score("the cat sat")
    assert fake_score("the cat sat").tokens == 3
    assert fake_score("the cat sat") != fake_score("the cat ran")
    low, high = LabelScore(-1.0, 2), LabelScore(-6.0, 2)
    assert low.perplexity < high.perplexity
    assert predict_label([("a", high), ("b", low)]) == "b"
    assert predict_label([("a", low), ("b", low)]) == "a"  # the first of equals


def test_echo_logprobs_leave_out_the_first_and_generated_tokens() -> None:
    data = {
        "choices": [{"logprobs": {"token_logprobs": [None, -1.0, -2.0, -5.0], "text_offset": [0, 1, 3, 5]}}],
        "usage": {"prompt_tokens": 3},
    }
    assert echo_logprobs(data, "a bc") == LabelScore(-3.0, 2)
    del data["usage"]
    assert echo_logprobs(data, "a bc") == LabelScore(-3.0, 2)  # text_offset past the prompt: generated
    with pytest.raises(EndpointError, match="without choices\\[0\\].logprobs"):
        echo_logprobs({"choices": [{"text": "x"}]}, "x")


def test_openai_scores_through_completions_with_echo_and_logprobs(
    loopback: LoopbackServer, runner: ModelRunner
) -> None:
    model = OpenAIModel("vllm-model", base_url=loopback.base_url, endpoint="completions")
    try:
        response = runner.call(ScoringModel(model), ModelRequest("one LIKELY three"))
    finally:
        runner.run(model.aclose())
    assert LabelScore.from_text(response.text) == LabelScore(-2.1, 2)
    body = loopback.stats.log[-1]["body"]
    assert loopback.stats.log[-1]["path"] == "/v1/completions"
    assert (body["echo"], body["logprobs"], body["max_tokens"], body["prompt"]) == (True, 0, 1, "one LIKELY three")


def test_a_model_that_cannot_score_says_so() -> None:
    class Plain:
        spec = "plain"

        async def generate(self, request: ModelRequest) -> object:
            raise AssertionError

    with pytest.raises(Exception, match="plain cannot score prompts"):
        ScoringModel(Plain())  # type: ignore[arg-type]


def test_a_ppl_suite_against_an_endpoint(suite: Suite, loopback: LoopbackServer) -> None:
    suite.config(SUITE.format(spec="openai:vllm", extra=f'base_url = "{loopback.base_url}"'))
    suite.cases(
        [
            {"case_id": "c1", "input": "hi", "slice": "s", "answer": "yes"},
            {"case_id": "c2", "input": "ho", "slice": "s", "answer": "no"},
        ]
    )
    result = suite.run("--prompt-report", "report", "--prompt-no-cache", paths=["."])
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*c2*", "*ppl-label*predicted label 'yes' (lowest perplexity) is not the answer 'no'*"]
    )
    rows = suite.by_id()
    assert rows["c1"]["output"] == "yes" and rows["c1"]["prompt"] == "Q: hi A: LIKELY yes"
    prompts = sorted(e["body"]["prompt"] for e in loopback.stats.log if e["body"].get("echo"))
    assert prompts == ["Q: hi A: LIKELY yes", "Q: hi A: no", "Q: ho A: LIKELY yes", "Q: ho A: no"]


def test_a_ppl_suite_on_the_fake_model_is_deterministic(suite: Suite) -> None:
    suite.config(SUITE.format(spec="fake", extra=""))
    suite.cases([{"case_id": "c1", "input": "hi", "slice": "s", "answer": "yes"}])
    outputs = set()
    for _ in range(2):
        suite.run("--prompt-report", "report", paths=["."])
        row = suite.by_id()["c1"]
        outputs.add(row["output"])
    expected = predict_label(
        [(label, fake_score(f"Q: hi A: {text}")) for label, text in (("yes", "LIKELY yes"), ("no", "no"))]
    )
    assert outputs == {expected}


def test_echo_answers_what_promptfoo_echo_answers() -> None:
    model = make_model("echo")
    assert model.generate_sync(ModelRequest("Hello Ann!\n")).text == "Hello Ann!\n"  # type: ignore[attr-defined]
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": 'Hi é "x"\n'}]
    text = model.generate_sync(ModelRequest(messages)).text  # type: ignore[attr-defined]
    # JSON.stringify(messages, null, 2)
    assert text == (
        '[\n  {\n    "role": "system",\n    "content": "Be brief."\n  },\n'
        '  {\n    "role": "user",\n    "content": "Hi é \\"x\\"\\n"\n  }\n]'
    )
