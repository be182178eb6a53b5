"""The case line as a pydantic model, ``CaseLine``: the JSON schema of a case file's line (for an
editor and the docs), built from ``PromptCase``'s fields and bounded as the case loader checks them."""

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

from pytest_promptsuite.cases.case import LINE_FIELDS


__all__ = ["CaseLine"]

#: Some text and no line break (a search, as JSON Schema's ``pattern`` and pydantic's are).
_ONE_LINE = r"^(?![\s\S]*[\r\n])[\s\S]*\S"
_OneLine = Annotated[str, Field(pattern=_ONE_LINE)]
_Text = Annotated[str, Field(pattern=r"\S")]
_NonEmpty = Annotated[str, Field(min_length=1)]

#: What each field's value may be: the loader's rules (``shape_problems``) as pydantic types.
_VALUES: dict[str, Any] = {
    "case_id": _OneLine,
    "input": Union[_Text, Annotated[list[_Text], Field(min_length=1)]],
    "slice": _OneLine,
    "must_include": list[_NonEmpty],
    "must_not_include": list[_NonEmpty],
    "vars": dict[str, Any],
    "answer": Union[str, list[Any], None],
    "assert_": list[dict[str, Any]],
    "threshold": Annotated[float, Field(ge=0, le=1)],
    "review": Union[bool, str],
    "tags": list[_NonEmpty],
    "metadata": dict[str, Any],
}


def _drop_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def _field(spec: dataclasses.Field[Any]) -> Any:
    """The pydantic field of one of ``PromptCase``'s: its JSON key, default and description."""
    value = _VALUES[spec.name]
    options: dict[str, Any] = {"alias": spec.metadata.get("key", spec.name), "description": spec.metadata["doc"]}
    if spec.default_factory is not dataclasses.MISSING:
        options["default_factory"] = spec.default_factory
    elif spec.default is not dataclasses.MISSING:
        options["default"] = spec.default
        if spec.default is None and type(None) not in get_args(value):
            options["json_schema_extra"] = _drop_default  # absent, never null
    return value, Field(**options)


_FIELDS: dict[str, Any] = {spec.name: _field(spec) for spec in LINE_FIELDS}
CaseLine: type[BaseModel] = create_model(
    "CaseLine",
    __config__=ConfigDict(strict=True, extra="forbid", regex_engine="python-re", title="Case line"),
    __doc__="One line of a case file (JSONL): a case to run, what to check, and the slice it counts in.",
    **_FIELDS,
)
