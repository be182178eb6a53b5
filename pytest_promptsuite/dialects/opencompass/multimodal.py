"""``MMPromptTemplate``: role items whose ``prompt_mm`` parts are filled from the row's tagged content
(``<AIS_TEXT_START>...<AIS_CONTENT_TAG>``), in content order."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pytest_promptsuite.dialects.opencompass.prompt_list import PromptList
from pytest_promptsuite.dialects.opencompass.prompt_list import is_marker
from pytest_promptsuite.dialects.opencompass.template import encode_dialogue
from pytest_promptsuite.dialects.opencompass.template import is_dialogue
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.prompts.fields import FieldRead
from pytest_promptsuite.prompts.fields import value_reads
from pytest_promptsuite.prompts.files.substitute import substitute


CONTENT_TAG = "<AIS_CONTENT_TAG>"
START_TAGS = {
    "<AIS_TEXT_START>": "text",
    "<AIS_IMAGE_START>": "image",
    "<AIS_AUDIO_START>": "audio",
    "<AIS_VIDEO_START>": "video",
}


def find_content(row: Mapping[str, Any]) -> str:
    """Return the tagged text: the ``content`` field, else the first field holding a start tag."""
    if "content" in row:
        content = row["content"]
        if not isinstance(content, str):
            raise TemplateError(f"field 'content' must be a string of tagged text, got {content!r}")
        return content
    for value in row.values():
        if isinstance(value, str) and any(tag in value for tag in START_TAGS):
            return value
    raise TemplateError(
        "a multimodal row needs a 'content' field (or a field with <AIS_TEXT_START>/<AIS_IMAGE_START>/"
        "<AIS_AUDIO_START>/<AIS_VIDEO_START> tags)"
    )


def _part(parts: Mapping[str, Any], kind: str, role: Any) -> dict[str, Any]:
    if kind not in parts:
        raise TemplateError(f"role {role!r}: the content has a {kind!r} segment but prompt_mm has no {kind!r} part")
    part = parts[kind]
    if not isinstance(part, Mapping):
        raise TemplateError(f"role {role!r}: prompt_mm[{kind!r}] must be an object, got {part!r}")
    return copy.deepcopy(dict(part))


def _media(part: dict[str, Any], kind: str, segment: str, role: Any) -> dict[str, Any]:
    key = f"{kind}_url"
    value = part.get(key)
    row = {kind: segment}
    if isinstance(value, Mapping) and isinstance(value.get("url"), str):
        part[key] = {**value, "url": substitute(value["url"], row)}
    elif isinstance(value, str):
        part[key] = substitute(value, row)
    else:
        raise TemplateError(f"role {role!r}: prompt_mm[{kind!r}] needs {key!r} (a string or an object with 'url')")
    return part


def content_parts(parts: Any, row: Mapping[str, Any], fill_row: Mapping[str, Any], role: Any) -> list[Any]:
    """Fill the content parts of one ``prompt_mm`` item, in content order."""
    if not isinstance(parts, Mapping):
        raise TemplateError(f"role {role!r}: prompt_mm must be an object keyed by modality, got {parts!r}")
    out: list[Any] = []
    for segment in find_content(row).split(CONTENT_TAG):
        if segment.startswith("<AIS_TEXT_START>"):
            part = _part(parts, "text", role)
            if not isinstance(part.get("text"), str):
                raise TemplateError(f"role {role!r}: prompt_mm['text'] needs a 'text' string")
            text = segment.replace("<AIS_TEXT_START>", "")
            part["text"] = substitute(part["text"], {**fill_row, "question": text})
            out.append(part)
            continue
        for tag, kind in START_TAGS.items():
            if kind != "text" and segment.startswith(tag):
                out.append(_media(_part(parts, kind, role), kind, segment.replace(tag, ""), role))
                break
    return out


class MMPromptTemplate:
    """A dialogue template whose role items carry ``prompt_mm`` (gen mode only; no ICE)."""

    def __init__(self, template: Any, ice_token: Any = None, sep_token: Any = None, *, name: str = "template") -> None:
        if not is_dialogue(template):
            raise TemplateError(f"{name}: an MMPromptTemplate takes a dialogue object with 'round', got {template!r}")
        self.encoded = encode_dialogue(template, ice=False, where=name)
        self.name = name

    def fields(self) -> list[FieldRead]:
        """Return the ``{name}`` fields of its texts and content parts (the tagged ``content`` aside)."""
        return value_reads(list(self.encoded))

    def gen_prompt(
        self, row: Mapping[str, Any], *, output_column: str | None = None, replace_token: str = ""
    ) -> PromptList:
        """Render the intermediate of ``row``: text and content parts filled, the output column masked."""
        fill_row = dict(row)
        if output_column is not None:
            fill_row[output_column] = replace_token
        out = PromptList()
        for item in self.encoded:
            if isinstance(item, str):
                out.append(substitute(item, fill_row))
            elif is_marker(item) or "prompt_mm" not in item:
                out.append(dict(item))
            else:
                role = item.get("role")
                out.append({**item, "prompt_mm": content_parts(item["prompt_mm"], row, fill_row, role)})
        return out
