"""The embedded deterministic model: echo, or replies chosen by regex rules from a JSON file."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import ModelError
from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.models.base import ModelRequest
from pytest_promptsuite.models.base import Response
from pytest_promptsuite.models.base import prompt_text
from pytest_promptsuite.models.scoring import LabelScore
from pytest_promptsuite.models.scoring import fake_score
from pytest_promptsuite.models.scoring import score_text
from pytest_promptsuite.safety.deadline import BudgetExceeded
from pytest_promptsuite.safety.deadline import time_budget
from pytest_promptsuite.safety.deadline import user_regex
from pytest_promptsuite.safety.limits import REGEX_SECONDS


@dataclass(frozen=True)
class FakeRule:
    """Reply ``reply`` when ``pattern`` is found (``re.search``) in the prompt's text."""

    pattern: re.Pattern[str]
    reply: str


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
        try:
            data = decode(path.read_bytes().decode("utf-8-sig"))
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read the fake model's rules: {exc.strerror}") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{path}: the fake model's rules are not UTF-8 text: {exc.reason}") from exc
        except JsonError as exc:
            where = f"{path}:{exc.line}" if exc.line else str(path)
            raise ConfigError(f"{where}: the fake model's rules are not valid JSON: {exc.describe()}") from exc
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
        rules: list[FakeRule] = []
        for i, raw in enumerate(raw_rules):
            where = f"{path}: rules[{i}]"
            if not isinstance(raw, dict) or set(raw) != {"match", "reply"}:
                raise ConfigError(f"{where}: a rule is an object with exactly 'match' and 'reply'")
            if not isinstance(raw["match"], str) or not isinstance(raw["reply"], str):
                raise ConfigError(f"{where}: 'match' and 'reply' must be strings")
            try:
                pattern = user_regex(raw["match"])
            except (re.error, RecursionError, OverflowError) as exc:
                raise ConfigError(f"{where}: bad regex {raw['match']!r}: {exc}") from exc
            rules.append(FakeRule(pattern, raw["reply"]))
        return cls(rules, default, spec=spec or f"fake:{path}")

    def reply_to(self, request: ModelRequest) -> str:
        """Choose the reply for ``request``, as the class docstring says."""
        prompt = request.prompt
        if self.rules or self.default is not None:
            text = prompt_text(prompt)
            with time_budget(REGEX_SECONDS, f"a rule of {self.spec} on case {request.case_id or '?'}"):
                for rule in self.rules:
                    if rule.pattern.search(text):
                        return rule.reply
            if self.default is not None:
                return self.default
        if isinstance(prompt, str):
            return prompt
        for message in reversed(prompt):
            if message.get("role") == "user":
                return prompt_text([message])
        return ""

    def generate_sync(self, request: ModelRequest) -> Response:
        """Answer :meth:`reply_to` at once; a rule that outruns its time budget is a ModelError."""
        try:
            return Response(text=self.reply_to(request), finish_reason="stop")
        except BudgetExceeded as exc:
            raise ModelError(str(exc)) from exc

    async def generate(self, request: ModelRequest) -> Response:
        """Answer as :meth:`generate_sync` does, for callers that await."""
        return self.generate_sync(request)

    def score_sync(self, request: ModelRequest) -> LabelScore:
        """Score the prompt for the ppl mode, fixed by its tokens' text (:func:`.scoring.fake_score`)."""
        return fake_score(score_text(request.prompt))
