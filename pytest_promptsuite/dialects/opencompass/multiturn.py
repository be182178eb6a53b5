"""``MultiTurnPromptTemplate``: parallel ``question``/``answer`` lists into a conversation, and the
requests of an ``infer_mode`` (docs/templates.md, "Multi-turn")."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_promptsuite.dialects.opencompass.prompt_list import PromptList
from pytest_promptsuite.dialects.opencompass.prompt_list import is_marker
from pytest_promptsuite.dialects.opencompass.prompt_list import marker
from pytest_promptsuite.dialects.opencompass.template import encode_dialogue
from pytest_promptsuite.dialects.opencompass.template import fill
from pytest_promptsuite.dialects.opencompass.template import is_dialogue
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.prompts.fields import FieldRead
from pytest_promptsuite.prompts.fields import value_reads


INFER_MODES = ("every", "every_with_gt", "last")


@dataclass
class Conversation:
    """A filled conversation: ``left`` + ``turns`` + ``right``, and where the bot turns are."""

    left: PromptList
    turns: PromptList
    right: PromptList
    bot_turns: list[int]
    infer_mode: str

    @property
    def chat(self) -> PromptList:
        """The whole conversation with the ground-truth answers."""
        return PromptList([*self.left, *self.turns, *self.right])

    def request_turns(self) -> list[int]:
        """Return the bot-turn positions each request stops before, in request order."""
        if self.infer_mode == "last":
            if not self.bot_turns:
                raise TemplateError("infer_mode 'last' needs a bot turn, but no round item speaks as the bot role")
            return [self.bot_turns[-1]]
        return list(self.bot_turns)

    def request(self, position: int, replies: Sequence[str] = ()) -> PromptList:
        """Return the intermediate that stops before bot turn ``position``; in ``every`` the earlier
        bot turns carry ``replies`` (the model's own answers, inserted verbatim)."""
        turns = [dict(t) for t in self.turns[:position]]
        if self.infer_mode == "every":
            for reply, pos in zip(replies, self.bot_turns, strict=False):
                if pos < position:
                    turns[pos] = {**turns[pos], "prompt": reply}
        return PromptList([*self.left, *turns, *self.right])


def _check_turns(row: Mapping[str, Any]) -> None:
    """Refuse a multi-turn row without its ``question`` and ``answer`` arrays."""
    for field in ("question", "answer"):
        if field not in row:
            raise TemplateError(f"a multi-turn row needs the field {field!r} (an array of turns)")
        if not isinstance(row[field], list):
            raise TemplateError(
                f"field {field!r} of a multi-turn row must be an array of turns, got {type(row[field]).__name__}"
            )


class MultiTurnPromptTemplate:
    """A dialogue template whose ``round`` is repeated once per (question, answer) turn; every row
    field fills each turn, and the row's scalar fields fill ``begin`` and ``end``."""

    def __init__(self, template: Any, ice_token: Any = None, sep_token: Any = None, *, name: str = "template") -> None:
        if not is_dialogue(template):
            raise TemplateError(
                f"{name}: a MultiTurnPromptTemplate takes a dialogue object with 'round', got {template!r}"
            )
        self.name = name
        self.encoded = encode_dialogue(template, ice=False, where=name)
        for part in ("begin", "round", "end"):
            value = template.get(part, [])
            for item in value if isinstance(value, list) else [value]:
                if not isinstance(item, dict) or is_marker(item):
                    raise TemplateError(
                        f"{name}.{part}: item {item!r} in a multi-turn template; every item must be a role object"
                    )
        self._round_begin = self.encoded.index(marker("round", "begin"))
        self._round_end = self.encoded.index(marker("round", "end"))
        self.template = template

    def fields(self) -> list[FieldRead]:
        """Return the ``{name}`` fields the template's turns and ``begin``/``end`` read."""
        return value_reads(self.template)

    def conversation(self, row: Mapping[str, Any], *, infer_mode: str = "every", bot_role: str = "BOT") -> Conversation:
        """Fill the conversation of ``row`` (``question`` and ``answer`` lists) in ``infer_mode``."""
        if infer_mode not in INFER_MODES:
            raise TemplateError(f"infer_mode {infer_mode!r} is not one of {', '.join(INFER_MODES)}")
        _check_turns(row)
        scalars = {k: v for k, v in row.items() if not isinstance(v, list)}
        start, stop = self._round_begin, self._round_end
        left = fill(PromptList(self.encoded[: start + 1]), scalars)
        right = fill(PromptList(self.encoded[stop:]), scalars)
        round_items = self.encoded[start + 1 : stop]
        turns = PromptList()
        bot_turns: list[int] = []
        for question, answer in zip(row["question"], row["answer"], strict=False):  # zip-truncated
            turn_row = {**row, "question": question, "answer": answer}
            for item in fill(PromptList(round_items), turn_row):
                if not is_marker(item) and isinstance(item, dict) and item.get("role") == bot_role:
                    bot_turns.append(len(turns))
                turns.append(item)
        assert isinstance(left, PromptList) and isinstance(right, PromptList)
        return Conversation(left, turns, right, bot_turns, infer_mode)
