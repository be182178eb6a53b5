"""The embedded deterministic model: echo, or replies chosen by regex rules from a JSON file."""

from __future__ import annotations

import re
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import ModelError
from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.model_api import Response
from pytest_promptsuite.models.scoring import LabelScore
from pytest_promptsuite.models.scoring import fake_score
from pytest_promptsuite.models.scoring import score_text
from pytest_promptsuite.models.tool_calls import ToolCall
from pytest_promptsuite.prompts.core import Message
from pytest_promptsuite.prompts.core import prompt_text
from pytest_promptsuite.safety.deadline import BudgetExceeded
from pytest_promptsuite.safety.limits import REGEX_SECONDS
from pytest_promptsuite.safety.user_regex import Pattern
from pytest_promptsuite.safety.user_regex import RegexBudget
from pytest_promptsuite.safety.user_regex import user_regex


@dataclass(frozen=True)
class FakeRule:
    """Reply ``reply`` (and call ``tool_calls``) when ``pattern`` is found (a search) in the prompt's
    text; an ``on_tool`` rule reads only the ``tool`` messages that end the prompt (the results just sent)."""

    pattern: Pattern
    reply: str
    tool_calls: tuple[tuple[str, Any], ...] = ()
    on_tool: bool = False
    #: Only at this turn of a conversation (the prompt's user messages, counted from 1); None: any turn.
    turn: int | None = None


class FakeModel:
    """Deterministic and offline: replies chosen by rules, else the echo of the last user message.

    With rules, the first rule whose regex is found in the prompt text (a string prompt, or the messages'
    contents joined with ``"\
    "``) gives the reply; else ``default``; else the echo (the whole prompt when
    it is a string).
    """

    #: Its answers never vary: a baseline of it is compared by the ``delta`` rule under ``auto``.
    deterministic = True

    def __init__(self, rules: Sequence[FakeRule] = (), default: str | None = None, *, spec: str = "fake") -> None:
        self.spec = spec
        self.rules = tuple(rules)
        self.default = default

    @classmethod
    def from_rules_file(cls, path: Path, *, spec: str | None = None) -> FakeModel:
        """Load ``{"rules": [{"match": REGEX, "reply": TEXT}, ...], "default": TEXT}``."""
        data = _read_rules(path)
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: the fake model's rules must be a JSON object")
        unknown = sorted(set(data) - {"rules", "default"})
        if unknown:
            raise ConfigError(
                f"{path}: unknown key {unknown[0]!r} in the fake model's rules (known: 'rules', 'default')"
            )
        default = data.get("default")
        if default is not None and not isinstance(default, str):
            raise ConfigError(f"{path}: 'default' must be a string")
        raw_rules = data.get("rules", [])
        if not isinstance(raw_rules, list):
            raise ConfigError(f"{path}: 'rules' must be a list of {{'match', 'reply'}} objects")
        rules = [_rule(raw, f"{path}: rules[{i}]") for i, raw in enumerate(raw_rules)]
        return cls(rules, default, spec=spec or f"fake:{path}")

    def reply_to(self, request: ModelRequest) -> str:
        """Choose the reply for ``request``, as the class docstring says."""
        return self._answer(request, self.rule_for(request))

    def _answer(self, request: ModelRequest, rule: FakeRule | None) -> str:
        if rule is not None:
            return rule.reply
        prompt = request.prompt
        if self.default is not None:
            return self.default
        if isinstance(prompt, str):
            return prompt
        for message in reversed(prompt):
            if message.get("role") == "user":
                return prompt_text([message])
        return ""

    def rule_for(self, request: ModelRequest) -> FakeRule | None:
        """Return the first rule whose regex is found in the prompt's text (None: no rule matches).
        A prompt that ends in ``tool`` messages is matched by the ``on_tool`` rules only, against those messages."""
        if not self.rules:
            return None
        prompt = request.prompt
        results = [] if isinstance(prompt, str) else _tool_results(prompt)
        text = prompt_text(results) if results else prompt_text(prompt)
        budget = RegexBudget(REGEX_SECONDS, f"a rule of {self.spec} on case {request.case_id or '?'}")
        turn = turn_of(prompt)
        for rule in self.rules:
            if rule.turn not in (None, turn):
                continue
            if rule.on_tool == bool(results) and budget.search(rule.pattern, text):
                return rule
        return None

    def generate_sync(self, request: ModelRequest) -> Response:
        """Answer :meth:`reply_to` at once (with the rule's tool calls, their ids ``call_<step>_<i>``) at cost
        0 and the time it took, as echo reports them. A rule that outruns its time budget is a ModelError."""
        start = time.perf_counter()
        try:
            rule = self.rule_for(request)
            text = self._answer(request, rule)
        except BudgetExceeded as exc:
            raise ModelError(str(exc)) from exc
        if rule is None or not rule.tool_calls:
            return Response(text=text, finish_reason="stop", latency_ms=_elapsed_ms(start), cost_usd=0.0)
        prompt = request.prompt
        step = 0 if isinstance(prompt, str) else sum(1 for m in prompt if m.get("role") == "assistant")
        calls = tuple(
            ToolCall(f"call_{step}_{i}", name, arguments) for i, (name, arguments) in enumerate(rule.tool_calls)
        )
        latency = _elapsed_ms(start)
        return Response(text=text, finish_reason="tool_calls", tool_calls=calls, latency_ms=latency, cost_usd=0.0)

    async def generate(self, request: ModelRequest) -> Response:
        """Answer as :meth:`generate_sync` does, for callers that await."""
        return self.generate_sync(request)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed each text offline as its words counted into 256 buckets (lower-cased, by CRC-32): texts
        that share words are similar, so ``similar:cosine`` runs deterministically without a service."""
        vectors = []
        for text in texts:
            vector = [0.0] * _BUCKETS
            for word in _WORD.findall(text.lower()):
                vector[zlib.crc32(word.encode("utf-8")) % _BUCKETS] += 1.0
            vectors.append(vector)
        return vectors

    def score_sync(self, request: ModelRequest) -> LabelScore:
        """Score the prompt for the ppl mode, fixed by its tokens' text (:func:`.scoring.fake_score`)."""
        return fake_score(score_text(request.prompt))


def turn_of(prompt: str | list[Message]) -> int:
    """Return which turn of a conversation a prompt asks for: its user messages (a string prompt: turn 1)."""
    if isinstance(prompt, str):
        return 1
    return sum(1 for message in prompt if message.get("role") == "user")


def _tool_results(messages: list[Message]) -> list[Message]:
    """Return the ``tool`` messages a conversation ends in, in order."""
    results: list[Message] = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        results.insert(0, message)
    return results


def _elapsed_ms(start: float) -> float:
    """Return the milliseconds since ``start`` (``perf_counter``), to the microsecond."""
    return round((time.perf_counter() - start) * 1e6) / 1e3


_BUCKETS = 256
_WORD = re.compile(r"\w+")
_RULE_KEYS = frozenset({"match", "reply", "tool_calls", "on_tool", "turn"})


def _read_rules(path: Path) -> Any:
    """Read a rules file's JSON; ConfigError naming the file (and line) when it cannot be read."""
    try:
        return decode(path.read_bytes().decode("utf-8-sig"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the fake model's rules: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: the fake model's rules are not UTF-8 text: {exc.reason}") from exc
    except JsonError as exc:
        where = f"{path}:{exc.line}" if exc.line else str(path)
        raise ConfigError(f"{where}: the fake model's rules are not valid JSON: {exc.describe()}") from exc


def _rule_call(call: Any, where: str) -> tuple[str, Any]:
    """Read one of a rule's ``tool_calls``: its name and arguments."""
    if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
        raise ConfigError(f"{where}: a call is {{'name': TOOL, 'arguments': {{...}}}}")
    if not set(call) <= {"name", "arguments"}:
        raise ConfigError(f"{where}: a call has only 'name' and 'arguments'")
    return call["name"], call.get("arguments", {})


def _check_rule_keys(raw: Any, where: str) -> None:
    if not isinstance(raw, dict) or not ("match" in raw or "turn" in raw) or not set(raw) <= _RULE_KEYS:
        raise ConfigError(
            f"{where}: a rule is an object with 'match' and 'reply' (or 'tool_calls'), and optionally 'on_tool' and "
            "'turn' (with 'turn', 'match' may be left out)"
        )
    turn = raw.get("turn", 1)
    if type(turn) is not int or turn < 1:
        raise ConfigError(f"{where}: 'turn' must be a whole number from 1 (the conversation's turn), got {turn!r}")
    if "reply" not in raw and "tool_calls" not in raw:
        raise ConfigError(f"{where}: a rule needs 'reply' or 'tool_calls'")


def _rule(raw: Any, where: str) -> FakeRule:
    """Read one rule: ``match``, and ``reply`` or ``tool_calls`` (both may be given), ``on_tool`` optional."""
    _check_rule_keys(raw, where)
    reply = raw.get("reply", "")
    if not isinstance(raw.get("match", ""), str) or not isinstance(reply, str):
        raise ConfigError(f"{where}: 'match' and 'reply' must be strings")
    on_tool = raw.get("on_tool", False)
    if not isinstance(on_tool, bool):
        raise ConfigError(f"{where}: 'on_tool' must be true or false")
    calls = raw.get("tool_calls", [])
    if not isinstance(calls, list):
        raise ConfigError(f"{where}: 'tool_calls' must be a list of {{'name', 'arguments'}} objects")
    parsed = [_rule_call(call, f"{where}.tool_calls[{j}]") for j, call in enumerate(calls)]
    try:
        pattern = user_regex(raw.get("match", ""))
    except (re.error, RecursionError, OverflowError) as exc:
        raise ConfigError(f"{where}: bad regex {raw['match']!r}: {exc}") from exc
    return FakeRule(pattern, reply, tuple(parsed), on_tool, raw.get("turn"))
