"""The case line as a pydantic model, ``CaseLine``: the JSON schema of a case file's line (for an
editor and the docs), bounded as the case loader checks it."""

from __future__ import annotations

import dataclasses
from typing import Annotated
from typing import Any
from typing import Union
from typing import get_args

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import create_model

from pytest_promptsuite.cases.prompt_case import LINE_FIELDS


#: Some text (and no line break), anchored: JSON Schema searches, pydantic 2.6's python-re matches from the start.
_OneLine = Annotated[str, Field(pattern=r"^(?![\s\S]*[\r\n])[\s\S]*\S")]
_Text = Annotated[str, Field(pattern=r"^[\s\S]*\S")]
_NonEmpty = Annotated[str, Field(min_length=1)]
_Turns = Annotated[list[_Text], Field(min_length=1)]
_Share = Annotated[float, Field(ge=0, le=1)]
_STRICT = ConfigDict(strict=True, extra="forbid", regex_engine="python-re")


def _drop_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def _absent(description: str) -> Any:
    """Return a field that may be absent, never null."""
    return Field(default=None, description=description, json_schema_extra=_drop_default)


class Turn(BaseModel):
    """One user turn of a conversation and the checks of the reply to it."""

    model_config = _STRICT
    input: _Text = _absent("The user's message (the first turn may leave it out: the case's input).")
    must_include: list[_NonEmpty] = Field(default_factory=list, description="Texts the reply must contain.")
    must_not_include: list[_NonEmpty] = Field(default_factory=list, description="Texts the reply must not contain.")
    assert_: list[dict[str, Any]] = Field(default_factory=list, alias="assert", description="Checks of the reply.")


class SimulatedUser(BaseModel):
    """The user a model plays: who, what they want, how they open and when they stop."""

    model_config = _STRICT
    persona: _Text = _absent("Who the user is (their manner, what they know).")
    goal: _Text = _absent("What the user wants from the conversation.")
    first: _Text = _absent("The user's opening message (default: the case's input).")
    max_turns: Annotated[int, Field(ge=1)] = _absent("The most user turns (default: [template] max_turns, else 6).")
    stop: _Text = _absent("A text or regex in a reply that ends the conversation.")


#: Each field's type (the loader's rules, ``shape_problems``, as pydantic types) and description.
_FIELDS: dict[str, tuple[Any, str]] = {
    "case_id": (_OneLine, "Unique across every file of the run; the pytest item's name."),
    "input": (Union[_Text, _Turns], "The user input; a list of turns for a multi-turn case."),
    "slice": (_OneLine, "The group whose pass rate is gated."),
    "must_include": (list[_NonEmpty], "Texts the output must contain (case-sensitive); every one gates."),
    "must_not_include": (list[_NonEmpty], "Texts the output must not contain; every one gates."),
    "vars": (dict[str, Any], "Extra template fields, each at the top level of the row."),
    "answer": (Union[str, list[Any], None], "Ground truth: the template's output column."),
    "assert_": (list[dict[str, Any]], "Extra checks (promptfoo's vocabulary)."),
    "threshold": (_Share, "Weighted share of the assert checks that must pass (default: all)."),
    "review": (Union[bool, str], "The output needs a human look (a string gives the reason)."),
    "tags": (list[_NonEmpty], "Free labels; each is a pytest keyword."),
    "metadata": (dict[str, Any], "Carried into results untouched."),
    "tools": (list[dict[str, Any]], "OpenAI function tools sent with the request, besides the suite's."),
    "tool_choice": (Union[str, dict[str, Any]], "auto, none, required, or the function the model must call."),
    "tool_results": (dict[str, Any], "Each tool's output (by name, or a list by arguments): a multi-step run."),
    "turns": (list[Turn], "A conversation: each user turn and the checks of the reply to it."),
    "user": (SimulatedUser, "A simulated user (played by [models.user]) who converses with the model."),
}


def _field(spec: dataclasses.Field[Any]) -> Any:
    value, description = _FIELDS[spec.name]
    options: dict[str, Any] = {"alias": spec.metadata.get("key", spec.name), "description": description}
    if spec.default_factory is not dataclasses.MISSING:
        options["default_factory"] = spec.default_factory
    elif spec.default is not dataclasses.MISSING:
        options["default"] = spec.default
        if spec.default is None and type(None) not in get_args(value):
            options["json_schema_extra"] = _drop_default  # absent, never null
    return value, Field(**options)


CaseLine: type[BaseModel] = create_model(
    "CaseLine",
    __config__=ConfigDict(strict=True, extra="forbid", regex_engine="python-re", title="Case line"),
    __doc__="One line of a case file (JSONL): a case to run, what to check, and the slice it counts in.",
    **{spec.name: _field(spec) for spec in LINE_FIELDS},
)


def json_schema() -> dict[str, Any]:
    """Return the JSON Schema of one case line (an object of a case file), for editors and the docs."""
    from pytest_promptsuite.config.config_schema import JSON_SCHEMA_DIALECT

    return {"$schema": JSON_SCHEMA_DIALECT, **CaseLine.model_json_schema()}
