"""The simulated user: the model of ``[models.user]`` playing a case's ``user`` (persona, goal), its prompt
template, and the request that asks it for the user's next message."""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from pytest_promptsuite.models.model_api import Model
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.prompts.core import Message
from pytest_promptsuite.prompts.files.substitute import substitute


#: What the simulated user writes to end the conversation (its goal met, or nothing more to say).
STOP_MARKER = "###STOP###"
#: The most user turns of a simulated conversation when neither the case nor ``[template] max_turns`` says.
DEFAULT_MAX_TURNS = 6
#: The user model's system prompt (``[template] user_prompt`` replaces it): ``{persona}``, ``{goal}``,
#: ``{stop_marker}`` and the case's ``vars`` are filled in.
DEFAULT_USER_PROMPT = (
    "You are role-playing a user who is talking to an assistant. Stay in character.\n"
    "Persona: {persona}\n"
    "Your goal: {goal}\n"
    "Write only the user's next message, short and natural. Do not answer for the assistant.\n"
    "When your goal is met, or the assistant cannot help any further, write only {stop_marker}."
)


@dataclass(frozen=True)
class SimulatedUser:
    """The model that plays the user, its request params, and the system prompt template it is given."""

    model: Model
    params: Mapping[str, Any] = field(default_factory=dict)
    template: str = DEFAULT_USER_PROMPT

    def system_prompt(self, user: Mapping[str, Any], row: Mapping[str, Any]) -> str:
        """Fill the template for a case's ``user`` (its persona and goal) and its ``vars`` (``row``)."""
        fields = {
            **row,
            "persona": user.get("persona", "a customer"),
            "goal": user.get("goal", "get help"),
            "stop_marker": STOP_MARKER,
        }
        return substitute(self.template, fields)

    def request(self, system: str, history: Sequence[Message], *, case_id: str, repeat: int) -> ModelRequest:
        """Return the request for the user's next message: the system prompt, then the conversation seen from
        the user's side (the assistant's replies as ``user`` messages, the user's own as ``assistant``).
        A ``seed`` fixed by the case and repeat is sent unless the params set one."""
        messages: list[Message] = [{"role": "system", "content": system}]
        messages += [flipped(m) for m in history if m.get("role") in ("user", "assistant")]
        params = dict(self.params)
        params.setdefault("seed", user_seed(case_id, repeat))
        return ModelRequest(prompt=messages, params=params, repeat=repeat, case_id=case_id)


def flipped(message: Message) -> Message:
    """Return a message with its role swapped (user <-> assistant), its text only (tool calls dropped)."""
    role = "assistant" if message.get("role") == "user" else "user"
    content = message.get("content")
    return {"role": role, "content": content if isinstance(content, str) else ""}


def user_seed(case_id: str, repeat: int) -> int:
    """Return the seed of a case's simulated user: fixed by its id and repeat, so a run repeats."""
    return (zlib.crc32(case_id.encode("utf-8")) + repeat) % (2**31)


def ends(text: str) -> bool:
    """Tell whether the simulated user's message ends the conversation (it holds :data:`STOP_MARKER`, or is
    empty)."""
    return not text.strip() or STOP_MARKER in text
