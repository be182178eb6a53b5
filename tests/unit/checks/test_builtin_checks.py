"""Stage tests for ``checks.builtin_checks``: every built-in check type passes, fails and inverts (``not-``)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.builtin_checks import BUILTIN_TYPES
from pytest_promptsuite.checks.evaluator import Evaluator
from pytest_promptsuite.config.suite import Prices
from pytest_promptsuite.models.model_api import Response
from pytest_promptsuite.models.model_api import Usage
from pytest_promptsuite.models.tool_calls import Step
from pytest_promptsuite.models.tool_calls import ToolCall
from tests.unit.checks.support import ORDER
from tests.unit.checks.support import result_of


class Refund(BaseModel):
    """The pydantic model the ``pydantic`` check tests validate against."""

    order: str
    amount: float


def is_short(output: str, case: PromptCase) -> bool:
    """A ``python`` check function: outputs under 10 characters."""
    return len(output) < 10


def half(output: str, case: PromptCase) -> float:
    """A ``python`` check returning a score."""
    return 0.5


LOOKUP = ToolCall("call_0_0", "lookup_order", {"order_id": "A1234"})
REFUND_CALL = ToolCall("call_1_0", "issue_refund", {"order_id": "A1234", "amount": 10})
#: Looks the order up, then answers.
TWO_STEPS = [Step("", (LOOKUP,), ('{"status": "shipped"}',)), Step("Your order A1234 has shipped.")]
#: Looks the order up, refunds it (the injection worked), then answers.
INJECTED = [Step("", (LOOKUP,), ("{}",)), Step("", (REFUND_CALL,), ("ok",)), Step("Refunded.")]


#: A conversation: the order number given in turn 1, used in turn 2's reply.
CHAT = (
    {"turn": 1, "user": "My order is A1234", "reply": "Let me look."},
    {"turn": 2, "user": "Well?", "reply": "A1234 has shipped."},
)

REFUND = '{"order": "A-1", "amount": 12.5, "items": [{"sku": "x"}]}'
SCHEMA = {"type": "object", "required": ["order", "amount"], "properties": {"amount": {"type": "number"}}}

# (id, entry, output, passes, words the message must contain)
CASES: list[tuple[str, dict[str, Any], Any, bool, str]] = [
    # structure
    ("is-json", {"type": "is-json"}, REFUND, True, "expected valid JSON; found valid JSON"),
    ("is-json-bad", {"type": "is-json"}, "{'a': 1}", False, "not JSON: Expecting property name"),
    ("not-is-json", {"type": "not-is-json"}, "plain text", True, "expected not valid JSON"),
    ("is-json-schema", {"type": "is-json", "value": SCHEMA}, REFUND, True, "matching the schema"),
    (
        "is-json-schema-bad",
        {"type": "is-json", "value": SCHEMA},
        '{"order": "A-1", "amount": "12"}',
        False,
        "breaks the schema at $.amount: '12' is not of type 'number'",
    ),
    ("contains-json", {"type": "contains-json"}, 'Here: {"a": [1, 2]} done', True, '{"a":[1,2]}'),
    ("contains-json-none", {"type": "contains-json"}, "no json {here", False, "no JSON object or array"),
    ("not-contains-json", {"type": "not-contains-json"}, "just text", True, "expected not a JSON object"),
    (
        "contains-json-schema",
        {"type": "contains-json", "value": SCHEMA},
        'x {"b": 1} y {"order": "o", "amount": 1}',
        True,
        '{"order":"o","amount":1}',
    ),
    (
        "contains-json-schema-bad",
        {"type": "contains-json", "value": SCHEMA},
        'x {"b": 1}',
        False,
        "none matches; first: $: 'order' is a required property",
    ),
    ("pydantic", {"type": "pydantic", "value": f"{__name__}:Refund"}, REFUND, True, "a valid Refund"),
    (
        "pydantic-bad",
        {"type": "pydantic", "value": f"{__name__}.Refund"},
        '{"order": "A-1"}',
        False,
        "amount: Field required",
    ),
    ("not-pydantic", {"type": "not-pydantic", "value": f"{__name__}:Refund"}, "{}", True, "not valid Refund"),
    ("is-xml", {"type": "is-xml"}, "<a><b>1</b></a>", True, "XML with root <a>"),
    ("is-xml-bad", {"type": "is-xml"}, "<a><b>1</a>", False, "not XML: mismatched tag"),
    (
        "is-xml-required",
        {"type": "is-xml", "value": {"requiredElements": ["a.b", "a.c"]}},
        "<a><b>1</b></a>",
        False,
        "XML without a.c",
    ),
    ("not-is-xml", {"type": "not-is-xml"}, "plain", True, "expected not well-formed XML"),
    (
        "regex-fullmatch",
        {"type": "regex", "value": r"\d{3}-\d{4}", "fullmatch": True},
        "555-1234",
        True,
        "a full match of 8 chars",
    ),
    (
        "regex-fullmatch-partial",
        {"type": "regex", "value": r"\d{3}-\d{4}", "fullmatch": True},
        "call 555-1234 now",
        False,
        "only a partial match '555-1234' at offset 5",
    ),
    ("word-count", {"type": "word-count", "value": {"min": 2, "max": 3}}, "one two three", True, "3 words"),
    ("word-count-exact", {"type": "word-count", "value": 2}, "one two three", False, "exactly 2 words"),
    ("not-word-count", {"type": "not-word-count", "value": {"max": 1}}, "one two", True, "not at most 1 words"),
    ("char-count", {"type": "char-count", "value": {"max": 5}}, "abcdef", False, "found 6 chars"),
    ("char-count-ok", {"type": "char-count", "value": {"min": 1}}, "ab", True, "at least 1 chars"),
    (
        "finish-reason",
        {"type": "finish-reason", "value": "stop"},
        Response(text="x", finish_reason="STOP"),
        True,
        "finish reason 'stop'",
    ),
    (
        "finish-reason-bad",
        {"type": "finish-reason", "value": "stop"},
        Response(text="x", finish_reason="length"),
        False,
        "found 'length'",
    ),
    (
        "finish-reason-none",
        {"type": "finish-reason", "value": "stop"},
        Response(text="x"),
        False,
        "no finish reason reported",
    ),
    (
        "not-finish-reason",
        {"type": "not-finish-reason", "value": "length"},
        Response(text="x", finish_reason="stop"),
        True,
        "not finish reason 'length'",
    ),
    # content
    ("equals", {"type": "equals", "value": "Hello"}, "Hello", True, "an equal output"),
    ("equals-bad", {"type": "equals", "value": "Hello"}, "Help!", False, "first difference at offset 3"),
    ("not-equals", {"type": "not-equals", "value": "Hello"}, "Hi", True, "expected not equals 'Hello'"),
    ("equals-json", {"type": "equals", "value": {"a": [1, True]}}, '{"a": [1.0, true]}', True, '{"a":[1.0,true]}'),
    ("equals-json-type", {"type": "equals", "value": {"a": 1}}, '{"a": true}', False, '{"a":true}'),
    ("contains", {"type": "contains", "value": "fund"}, "refund issued", True, "'fund' at offset 2"),
    ("contains-bad", {"type": "contains", "value": "Refund"}, "refund issued", False, "no match in 13 chars"),
    ("contains-number", {"type": "contains", "value": 12}, "total 12 USD", True, "'12' at offset 6"),
    ("not-contains", {"type": "not-contains", "value": "sk-"}, "key sk-123", False, "'sk-' at offset 4"),
    ("icontains", {"type": "icontains", "value": "REFUND"}, "refund issued", True, "(ignoring case)"),
    ("not-icontains", {"type": "not-icontains", "value": "ERROR"}, "no problem", True, "not contains 'ERROR'"),
    ("contains-any", {"type": "contains-any", "value": ["x", "issued"]}, "refund issued", True, "'issued'"),
    ("contains-any-bad", {"type": "contains-any", "value": ["x", "y"]}, "abc", False, "none of them in 3 chars"),
    ("contains-all-ok", {"type": "contains-all", "value": ["re", "is"]}, "refund issued", True, "'is' at offset 7"),
    (
        "contains-all",
        {"type": "contains-all", "value": ["refund", "later"]},
        "refund issued",
        False,
        "'refund' at offset 0; missing 'later'",
    ),
    ("not-contains-any", {"type": "not-contains-any", "value": ["sk-", "pk-"]}, "clean", True, "not contains any"),
    ("icontains-any", {"type": "icontains-any", "value": ["REFUND"]}, "Refund", True, "'REFUND' at offset 0"),
    ("icontains-any-bad", {"type": "icontains-any", "value": ["Z", "Q"]}, "ab", False, "none of them"),
    ("icontains-all", {"type": "icontains-all", "value": ["A", "b"]}, "ab", True, "contains all of 'A', 'b'"),
    ("icontains-all-bad", {"type": "icontains-all", "value": ["A", "z"]}, "ab", False, "missing 'z'"),
    ("starts-with", {"type": "starts-with", "value": "Yes"}, "Yes, done", True, "starts with 'Yes'"),
    ("starts-with-bad", {"type": "starts-with", "value": "Yes"}, "No, sorry", False, "begins 'No, sorry'"),
    ("not-starts-with", {"type": "not-starts-with", "value": "As an AI"}, "Sure", True, "not starts with"),
    ("regex", {"type": "regex", "value": r"\d+ USD"}, "total 12 USD", True, "'12 USD' at offset 6"),
    ("regex-bad", {"type": "regex", "value": r"\d+ EUR"}, "total 12 USD", False, "no match in 12 chars"),
    ("not-regex", {"type": "not-regex", "value": r"sk-\w+"}, "key sk-1", False, "'sk-1' at offset 4"),
    ("levenshtein", {"type": "levenshtein", "value": "kitten", "threshold": 3}, "sitting", True, "distance 3"),
    ("levenshtein-bad", {"type": "levenshtein", "value": "kitten", "threshold": 2}, "sitting", False, "distance 3"),
    ("levenshtein-default", {"type": "levenshtein", "value": "abcdefgh"}, "a", False, "<= 5 from"),
    ("not-levenshtein", {"type": "not-levenshtein", "value": "abc", "threshold": 0}, "abd", True, "distance 1"),
    ("similar", {"type": "similar", "value": "refund issued"}, "refund isued", True, "similarity 0.96"),
    ("similar-bad", {"type": "similar", "value": "refund issued", "threshold": 0.9}, "no", False, "similarity 0."),
    (
        "similar-list",
        {"type": "similar", "value": ["abc", "refund issued"], "threshold": 0.9},
        "refund issued!",
        True,
        "one of 2 texts",
    ),
    ("not-similar", {"type": "not-similar", "value": "abc"}, "xyz", True, "not similarity >= 0.75"),
    ("rouge-n", {"type": "rouge-n", "value": "the cat sat"}, "The cat sat.", True, "ROUGE-N 0.86"),
    ("rouge-n-bad", {"type": "rouge-n", "value": "the cat sat", "threshold": 0.9}, "a dog", False, "ROUGE-N 0.00"),
    ("is-refusal", {"type": "is-refusal"}, "I'm sorry, but I can't help with that.", True, "refusal phrase"),
    ("is-refusal-zh", {"type": "is-refusal"}, "抱歉，我无法提供该信息。", True, "'抱歉' at offset 0"),
    ("is-refusal-empty", {"type": "is-refusal"}, "  ", True, "an empty output"),
    ("is-refusal-bad", {"type": "is-refusal"}, "Your refund is on its way.", False, "no refusal phrase"),
    ("not-is-refusal", {"type": "not-is-refusal"}, "Ich kann Ihnen nicht helfen.", False, "refusal phrase"),
    (
        "is-refusal-custom",
        {"type": "is-refusal", "value": ["out of scope"], "defaults": False},
        "I'm sorry, that is out of scope",
        True,
        "'out of scope' at offset 19",
    ),
    # review
    ("human-review", {"type": "human-review", "value": "tone"}, "x", True, "expected a human review; found tone"),
    # metric
    (
        "latency",
        {"type": "latency", "threshold": 500},
        Response(text="x", latency_ms=120.0),
        True,
        "expected latency <= 500 ms; found 120 ms",
    ),
    ("latency-bad", {"type": "latency", "threshold": 100}, Response(text="x", latency_ms=120.0), False, "found 120 ms"),
    (
        "not-latency",
        {"type": "not-latency", "threshold": 100},
        Response(text="x", latency_ms=120.0),
        True,
        "not latency <= 100 ms",
    ),
    (
        "tokens",
        {"type": "tokens", "threshold": 10, "field": "completion"},
        Response(text="x", usage=Usage(3, 12, 15)),
        False,
        "at most 10 completion tokens; found 12 tokens",
    ),
    ("tokens-ok", {"type": "tokens", "threshold": 20}, Response(text="x", usage=Usage(3, 12, 15)), True, "15"),
    (
        "cost",
        {"type": "cost", "threshold": 0.001, "prices": {"prompt": 1.0, "completion": 2.0}},
        Response(text="x", usage=Usage(1000, 1000, 2000)),
        False,
        "found $0.003000 (1000 prompt + 1000 completion tokens)",
    ),
    (
        "cost-ok",
        {"type": "cost", "threshold": 0.01, "prices": {"prompt": 1.0, "completion": 2.0}},
        Response(text="x", usage=Usage(1000, 1000, 2000)),
        True,
        "cost <= $0.01",
    ),
    # tools
    ("tools-call", {"type": "is-valid-openai-tools-call"}, Response("", tool_calls=(LOOKUP,)), True, "1 valid call"),
    (
        "tools-call-schema",
        {"type": "is-valid-openai-tools-call"},
        Response("", tool_calls=(ToolCall("c", "lookup_order", {"order_id": 5}),)),
        False,
        "step 1: lookup_order: arguments do not fit its parameters: $.order_id: 5 is not of type 'string'",
    ),
    (
        "tools-call-not-json",
        {"type": "is-valid-openai-tools-call"},
        Response("", tool_calls=(ToolCall("c", "lookup_order", None, '{"order_id": '),)),
        False,
        "arguments are not JSON",
    ),
    (
        "tools-call-undefined",
        {"type": "is-valid-openai-tools-call"},
        INJECTED[:1] + [Step("", (ToolCall("c", "delete_account", {}),))],
        False,
        "step 2: delete_account is not a defined tool (defined: issue_refund, lookup_order)",
    ),
    ("not-tools-call", {"type": "not-is-valid-openai-tools-call"}, "plain", True, "found no tool calls"),
    # promptfoo's is-valid-openai-function-call: the output {name, arguments} (or {function_call}), or the calls
    (
        "function-call",
        {"type": "is-valid-openai-function-call", "value": [{"name": "lookup_order", "parameters": ORDER}]},
        '{"function_call": {"name": "lookup_order", "arguments": "{\\"order_id\\": \\"A1\\"}"}}',
        True,
        'lookup_order({"order_id": "A1"})',
    ),
    (
        "function-call-schema",
        {"type": "is-valid-openai-function-call", "value": [{"name": "lookup_order", "parameters": ORDER}]},
        '{"name": "lookup_order", "arguments": "{\\"order_id\\": 5}"}',
        False,
        "lookup_order: arguments do not fit its parameters: $.order_id: 5 is not of type 'string'",
    ),
    (
        "function-call-unknown",
        {"type": "is-valid-openai-function-call", "value": [{"name": "lookup_order"}]},
        '{"name": "drop_tables", "arguments": "{}"}',
        False,
        "called 'drop_tables', but there is no function with that name",
    ),
    ("function-call-text", {"type": "is-valid-openai-function-call"}, "Say hi", False, "no function call: 'Say hi'"),
    (
        "function-call-tools",  # without value: the tools the request offered
        {"type": "is-valid-openai-function-call"},
        Response("", tool_calls=(ToolCall("c", "issue_refund", {"order_id": 7}),)),
        False,
        "issue_refund: arguments do not fit its parameters",
    ),
    ("f1", {"type": "tool-call-f1", "value": ["lookup_order"]}, TWO_STEPS, True, "F1 1.000"),
    (
        "f1-bad",
        {"type": "tool-call-f1", "value": "lookup_order, issue_refund"},
        TWO_STEPS,
        False,
        "F1 0.667 (precision 1.000, recall 0.500)",
    ),
    ("f1-threshold", {"type": "tool-call-f1", "value": "lookup_order, x", "threshold": 0.6}, TWO_STEPS, True, "0.667"),
    ("not-f1", {"type": "not-tool-call-f1", "value": ["issue_refund"]}, TWO_STEPS, True, "called [lookup_order]"),
    ("used", {"type": "trajectory:tool-used", "value": "lookup_order"}, TWO_STEPS, True, "step 1: lookup_order("),
    (
        "used-bad",
        {"type": "trajectory:tool-used", "value": ["lookup_order", "issue_refund"]},
        TWO_STEPS,
        False,
        "'issue_refund' not called",
    ),
    (
        "not-used",
        {"type": "not-trajectory:tool-used", "value": ["issue_refund", "delete_account"]},
        TWO_STEPS,
        True,
        "expected not any of 'issue_refund', 'delete_account' called",
    ),
    (
        "not-used-bad",
        {"type": "not-trajectory:tool-used", "value": "issue_refund"},
        INJECTED,
        False,
        'step 2: issue_refund({"order_id": "A1234", "amount": 10})',
    ),
    (
        "used-count",
        {"type": "trajectory:tool-used", "value": {"name": "lookup_order", "min": 2}},
        TWO_STEPS,
        False,
        "expected 'lookup_order' called at least 2 times; found 1 calls",
    ),
    (
        "used-max",
        {"type": "trajectory:tool-used", "value": {"name": "*_order", "max": 1}},
        TWO_STEPS,
        True,
        "called 1 to 1 times",
    ),
    (
        "sequence",
        {"type": "trajectory:tool-sequence", "value": ["lookup_order", "issue_refund"]},
        INJECTED,
        True,
        "in order",
    ),
    (
        "sequence-bad",
        {"type": "trajectory:tool-sequence", "value": ["issue_refund", "lookup_order"]},
        INJECTED,
        False,
        "lookup_order never called after issue_refund",
    ),
    (
        "sequence-exact",
        {"type": "trajectory:tool-sequence", "value": {"steps": ["lookup_order"], "mode": "exact"}},
        INJECTED,
        False,
        "an extra call 2 (step 2): issue_refund",
    ),
    (
        "not-sequence",
        {"type": "not-trajectory:tool-sequence", "value": ["issue_refund"]},
        TWO_STEPS,
        True,
        "issue_refund never called",
    ),
    (
        "args",
        {"type": "trajectory:tool-args-match", "value": {"name": "lookup_order", "args": {"order_id": "A1234"}}},
        TWO_STEPS,
        True,
        'step 1: lookup_order({"order_id": "A1234"})',
    ),
    (
        "args-bad",
        {
            "type": "trajectory:tool-args-match",
            "value": {"name": "issue_refund", "args": {"amount": 10}, "mode": "exact"},
        },
        INJECTED,
        False,
        "step 2: issue_refund(",
    ),
    (
        "args-schema",
        {
            "type": "trajectory:tool-args-match",
            "value": {"name": "issue_refund", "schema": {"properties": {"amount": {"maximum": 5}}}},
        },
        INJECTED,
        False,
        "step 2: $.amount: 10 is greater than the maximum of 5",
    ),
    (
        "not-args",
        {"type": "not-trajectory:tool-args-match", "value": {"name": "issue_refund", "args": {}}},
        TWO_STEPS,
        True,
        "issue_refund never called",
    ),
    ("steps", {"type": "trajectory:step-count", "value": 2}, TWO_STEPS, True, "expected 2 model steps; found 2 steps"),
    ("steps-bad", {"type": "trajectory:step-count", "value": {"max": 2}}, INJECTED, False, "found 3 steps"),
    ("not-steps", {"type": "not-trajectory:step-count", "value": {"min": 3}}, TWO_STEPS, True, "not at least 3"),
    ("turns", {"type": "conversation:turn-count", "value": 2}, CHAT, True, "found 2 turns"),
    ("turns-bad", {"type": "conversation:turn-count", "value": {"min": 3}}, CHAT, False, "found 2 turns"),
    ("keeps", {"type": "conversation:keeps", "value": "A1234"}, CHAT, True, "given in turn 1, used in turn 2"),
    ("keeps-bad", {"type": "conversation:keeps", "value": "A1234", "turn": 1}, CHAT, False, "turn 1: the reply"),
    ("python", {"type": "python", "value": f"{__name__}:is_short"}, "tiny", True, "found True"),
    ("python-bad", {"type": "python", "value": f"{__name__}:is_short"}, "far too long", False, "found False"),
    ("not-python", {"type": "not-python", "value": f"{__name__}:is_short"}, "far too long", True, "not "),
    ("python-score", {"type": "python", "value": f"{__name__}:half", "threshold": 0.6}, "x", False, "score 0.5"),
]


@pytest.mark.parametrize(("entry", "output", "passes", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_builtin_type(entry: dict[str, Any], output: Any, passes: bool, words: str) -> None:
    result = result_of(entry, output)
    assert (result.passed, result.skipped) == (passes, False), result.message
    assert words in result.message
    assert result.name == entry["type"]


def test_every_builtin_type_has_a_passing_and_a_failing_case() -> None:
    tested = {(c[1]["type"].removeprefix("not-"), c[3] != c[1]["type"].startswith("not-")) for c in CASES}
    for name in BUILTIN_TYPES:
        if name in ("human-review", "llm-rubric", "conversation:goal-met", "conversation:role-adherence") or (
            name.startswith("similar:")
        ):  # never fails / with a model below (the judged conversation checks: test_conversation_checks.py)
            continue
        assert (name, True) in tested and (name, False) in tested, name


def test_layers_follow_the_type() -> None:
    layers = {c[1]["type"]: result_of(c[1], c[2]).layer for c in CASES}
    assert result_of({"type": "regex", "value": "a", "fullmatch": True}, "a").layer == "structure"
    assert result_of({"type": "regex", "value": "a"}, "a").layer == "content"
    assert layers["is-json"] == "structure"
    assert layers["contains"] == "content"
    assert layers["human-review"] == "review"
    assert layers["latency"] == "metric"


def test_a_cached_response_has_no_latency_and_the_check_says_so() -> None:
    result = result_of({"type": "latency", "threshold": 1000}, Response(text="x", latency_ms=None, cached=True))
    assert (result.passed, result.skipped) == (False, True)
    assert "no latency: the response came from the cache" in result.message
    fake = result_of({"type": "latency", "threshold": 1000}, Response(text="x"))
    assert fake.skipped and "did not measure one" in fake.message


def test_usage_checks_skip_without_usage() -> None:
    assert result_of({"type": "tokens", "threshold": 1}, Response(text="x")).skipped
    assert result_of(
        {"type": "cost", "threshold": 1, "prices": {"prompt": 1, "completion": 1}}, Response(text="x")
    ).skipped


def test_cost_without_prices_of_its_own_reads_the_models_prices() -> None:
    """``[model] prices`` is the one place prices live: a ``cost`` check without ``prices`` uses
    them, its own win, and with neither it fails saying where prices go."""
    case = PromptCase(case_id="c", input="i", slice="s", assert_=[{"type": "cost", "threshold": 0.002}])
    answer = Response(text="x", usage=Usage(1000, 1000, 2000))
    evaluator = Evaluator()
    priced = [
        c for c in evaluator.evaluate(case, answer, prices=Prices(prompt=1.0, completion=2.0)) if c.name == "cost"
    ][0]
    assert not priced.passed and "$0.003000" in priced.message
    cheap = [
        c for c in evaluator.evaluate(case, answer, prices=Prices(prompt=0.5, completion=0.5)) if c.name == "cost"
    ][0]
    assert cheap.passed and "$0.001000" in cheap.message
    unpriced = [c for c in evaluator.evaluate(case, answer) if c.name == "cost"][0]
    assert not unpriced.passed and "[model] prices" in unpriced.message
    own = PromptCase(
        case_id="c",
        input="i",
        slice="s",
        assert_=[{"type": "cost", "threshold": 0.002, "prices": {"prompt": 0.5, "completion": 0.5}}],
    )
    mine = [c for c in evaluator.evaluate(own, answer, prices=Prices(prompt=9.0, completion=9.0)) if c.name == "cost"][
        0
    ]
    assert mine.passed and "$0.001000" in mine.message


def test_python_function_that_raises_fails_with_the_error() -> None:
    result = result_of({"type": "python", "value": "json:loads"}, "not json")
    assert not result.passed and "the function raised" in result.message
