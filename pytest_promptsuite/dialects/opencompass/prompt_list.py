"""The intermediate between templates and parsers: a string, or a :class:`PromptList` of strings, role
items and section markers."""

from __future__ import annotations

from typing import Any
from typing import Union

from pytest_promptsuite.errors import TemplateError


#: The four section names a marker may carry.
SECTIONS = ("begin", "round", "ice", "end")


class PromptList(list):  # type: ignore[type-arg]
    """A list of prompt items: strings, role items (dicts with ``role``) and section markers; a plain
    list subclass, so that its JSON form is the list."""

    def __repr__(self) -> str:
        return f"PromptList({list.__repr__(self)})"


#: What a template produces before a parser sees it.
Intermediate = Union[str, PromptList]


def marker(section: str, pos: str) -> dict[str, str]:
    """Make a section marker, e.g. ``{"section": "round", "pos": "begin"}``."""
    return {"section": section, "pos": pos}


def is_marker(item: Any) -> bool:
    """Tell a section marker: a dict with exactly the keys ``section`` and ``pos``."""
    return isinstance(item, dict) and set(item) == {"section", "pos"}


def check_item(item: Any, where: str) -> None:
    """Refuse an item that is neither a string nor an object (role item or marker)."""
    if isinstance(item, str):
        return
    if not isinstance(item, dict):
        raise TemplateError(f"{where}: an item must be a string or a role object, got {type(item).__name__} {item!r}")
    if is_marker(item):
        return
    if "prompt" in item and not isinstance(item["prompt"], str):
        raise TemplateError(
            f"{where}: the 'prompt' of role {item.get('role')!r} must be a string, got {type(item['prompt']).__name__}"
        )


def prompt_list_from_json(value: Any, *, key: str = "prompt_list") -> Intermediate:
    """Read a string or a PromptList from its JSON form; anything else is a TemplateError naming ``key``."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise TemplateError(f"{key} must be a string or an array of items, got {type(value).__name__}")
    for i, item in enumerate(value):
        check_item(item, f"{key}[{i}]")
    return PromptList(dict(item) if isinstance(item, dict) else item for item in value)


def to_json(value: Any) -> Any:
    """Return the JSON form of an intermediate (plain lists and dicts)."""
    if isinstance(value, list):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    return value
