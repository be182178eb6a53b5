"""The ``conversation:*`` checks: they read a conversation's transcript (a row's ``turns``), not one reply:
turn count, a fact kept, and, through the judge, the user's goal met and the bot's role kept."""

from __future__ import annotations

from typing import Any

from pytest_promptsuite.checks.check_api import Check
from pytest_promptsuite.checks.check_api import CheckContext
from pytest_promptsuite.checks.check_api import Params
from pytest_promptsuite.checks.check_api import Verdict
from pytest_promptsuite.checks.metric import LlmRubric
from pytest_promptsuite.checks.outcome import Layer
from pytest_promptsuite.errors import CheckError
from pytest_promptsuite.errors import describe_type
from pytest_promptsuite.safety.limits import REGEX_SECONDS
from pytest_promptsuite.safety.user_regex import RegexBudget
from pytest_promptsuite.safety.user_regex import user_regex


#: The verdict of a conversation check on a case that is no conversation.
NOT_A_CONVERSATION = "the case is no conversation (no turns, no user): nothing to check"


class _ConversationCheck(Check):
    """A check of the transcript (``path`` does not apply)."""

    layer = Layer.CONTENT
    reads_output = False


class TurnCount(_ConversationCheck):
    """``conversation:turn-count``: how many turns the conversation took (``value``, or ``{min, max}``)."""

    def __init__(self, low: int | None, high: int | None) -> None:
        self.low, self.high = low, high

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        count = len(ctx.transcript)
        expected = f"from {self.low or 0} to {self.high if self.high is not None else 'any number of'} turns"
        passed = (self.low is None or count >= self.low) and (self.high is None or count <= self.high)
        return Verdict(passed, expected, f"{count} turns")


class Keeps(_ConversationCheck):
    """``conversation:keeps``: a fact a user turn gave (text, or a regex with ``regex: true``) is used in the
    reply of that turn or a later one (``turn``: that turn's; default: the last)."""

    def __init__(self, fact: str, regex: bool, turn: int | None) -> None:
        self.fact, self.regex, self.turn = fact, regex, turn

    def _found(self, text: str) -> bool:
        if not self.regex:
            return self.fact in text
        budget = RegexBudget(REGEX_SECONDS, "conversation:keeps")
        return budget.search(user_regex(self.fact), text) is not None

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        turns = ctx.transcript
        if not turns:
            return Verdict.skipped(NOT_A_CONVERSATION)
        expected = f"the fact {self.fact!r} is kept"
        given = next((t["turn"] for t in turns if self._found(str(t.get("user", "")))), None)
        if given is None:
            return Verdict(False, expected, "no user turn gives it")
        target = self.turn or len(turns)
        if target < given or target > len(turns):
            return Verdict(False, expected, f"turn {target} comes before turn {given}, which gives it, or is no turn")
        if self._found(str(turns[target - 1].get("reply", ""))):
            return Verdict(True, expected, f"given in turn {given}, used in turn {target}")
        return Verdict(False, expected, f"turn {target}: the reply does not use it (given in turn {given})")


def transcript_text(turns: tuple[dict[str, Any], ...]) -> str:
    """Return a transcript as the judge reads it: ``User:`` and ``Assistant:`` lines, turn by turn."""
    return "\n".join(f"User: {t.get('user', '')}\nAssistant: {t.get('reply', '')}" for t in turns)


class GoalMet(LlmRubric):
    """``conversation:goal-met``: the judge reads the transcript and the goal (``value``, else the case's
    ``user.goal``) and says whether the assistant met it."""

    reads_output = False

    def __init__(self, goal: str | None, threshold: float | None) -> None:
        super().__init__(goal or "", threshold)
        self.goal = goal

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        if not ctx.transcript:
            return Verdict.skipped(NOT_A_CONVERSATION)
        goal = self.goal or (ctx.case.user or {}).get("goal")
        if not goal:
            return Verdict(False, "the user's goal is met", "no goal: give 'value' or the case's user.goal")
        self.rubric = f"The output is a conversation. Pass it if the assistant met the user's goal: {goal}"
        return super().evaluate(transcript_text(ctx.transcript), ctx)


class RoleAdherence(LlmRubric):
    """``conversation:role-adherence``: the judge checks each reply against the role in ``value``; the first
    reply out of role fails the check, named by its turn."""

    reads_output = False

    def __init__(self, role: str, threshold: float | None) -> None:
        super().__init__(
            f"The output is one reply of an assistant whose role is: {role}. Pass it if the reply stays in that role.",
            threshold,
        )

    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        if not ctx.transcript:
            return Verdict.skipped(NOT_A_CONVERSATION)
        verdict = Verdict(True)
        for turn in ctx.transcript:
            verdict = super().evaluate(str(turn.get("reply", "")), ctx)
            if not verdict.passed:
                return Verdict(
                    False,
                    verdict.expected,
                    f"turn {turn.get('turn')}: {verdict.found}",
                    verdict.score,
                    verdict.details,
                    verdict.skip,
                )
        return Verdict(True, verdict.expected, f"{len(ctx.transcript)} replies in role", verdict.score)


def _bound(value: Any, key: str, name: str) -> int | None:
    if value is None:
        return None
    if type(value) is not int or value < 0:
        raise CheckError(f"'{key}' of {name!r} must be a whole number >= 0, got {describe_type(value)}")
    return value


def make_turn_count(p: Params) -> Check:
    """Make ``conversation:turn-count``: ``value`` the number of turns, or ``{min, max}``."""
    value = p.raw("value", required=True, what="a number of turns or {min, max}")
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"min", "max"})
        if unknown:
            raise CheckError(f"'value' of {p.name!r}: unknown key {unknown[0]!r} (its keys: max, min)")
        low, high = _bound(value.get("min"), "min", p.name), _bound(value.get("max"), "max", p.name)
        if low is None and high is None:
            raise CheckError(f"'value' of {p.name!r} needs 'min' or 'max'")
        return TurnCount(low, high)
    exact = _bound(value, "value", p.name)
    return TurnCount(exact, exact)


def make_keeps(p: Params) -> Check:
    """Make ``conversation:keeps``: ``value`` the fact, ``regex`` (a regex), ``turn`` (the reply that uses it)."""
    fact = p.string("value", required=True, what="the fact (a text, or a regex with regex: true)")
    regex = p.flag("regex")
    turn = _bound(p.raw("turn"), "turn", p.name)
    assert fact is not None
    if not fact:
        raise CheckError(f"'value' of {p.name!r} is empty: write the fact")
    if regex:
        try:
            user_regex(fact)
        except Exception as exc:  # regex.error and its kin: a bad regex, said at collection
            raise CheckError(f"'value' of {p.name!r} is no regex: {exc}") from exc
    return Keeps(fact, regex, turn or None)


def make_goal_met(p: Params) -> Check:
    """Make ``conversation:goal-met``: ``value`` the goal (default: the case's ``user.goal``)."""
    goal = p.string("value")
    return GoalMet(goal, p.number("threshold", minimum=0, maximum=1, what="a score from 0 to 1"))


def make_role_adherence(p: Params) -> Check:
    """Make ``conversation:role-adherence``: ``value`` the bot's role."""
    role = p.string("value", required=True, what="the role the bot keeps")
    assert role is not None
    return RoleAdherence(role, p.number("threshold", minimum=0, maximum=1, what="a score from 0 to 1"))
