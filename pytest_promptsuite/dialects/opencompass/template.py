"""``PromptTemplate``: string, dialogue and label-map templates, the in-context examples inserted
verbatim at ``ice_token`` and the answer masked (docs/templates.md, "Prompt templates")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from typing import Union

from pytest_promptsuite.dialects.opencompass.prompt_list import Intermediate
from pytest_promptsuite.dialects.opencompass.prompt_list import PromptList
from pytest_promptsuite.dialects.opencompass.prompt_list import check_item
from pytest_promptsuite.dialects.opencompass.prompt_list import is_marker
from pytest_promptsuite.dialects.opencompass.prompt_list import marker
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.prompts.fields import FieldRead
from pytest_promptsuite.prompts.fields import value_reads
from pytest_promptsuite.prompts.files.substitute import substitute


DIALOGUE_KEYS = frozenset({"begin", "round", "end"})
#: A string template, a dialogue object, or a label map.
TemplateValue = Union[str, dict[str, Any]]


def is_dialogue(value: Any) -> bool:
    """Tell a dialogue object: a dict whose every key is ``begin``, ``round`` or ``end``."""
    return isinstance(value, dict) and set(value) <= DIALOGUE_KEYS


def _check_dialogue(value: dict[str, Any], where: str) -> None:
    if "round" not in value:
        raise TemplateError(
            f"{where}: a dialogue template needs a 'round' (got keys {sorted(value)!r}); "
            "an empty template is not allowed"
        )


def _splice(out: PromptList, value: Any, where: str) -> None:
    items = value if isinstance(value, list) else [value]
    for i, item in enumerate(items):
        check_item(item, f"{where}[{i}]" if isinstance(value, list) else where)
        out.append(dict(item) if isinstance(item, dict) else item)


def encode_dialogue(template: dict[str, Any], *, ice: bool, where: str = "template") -> PromptList:
    """Encode a dialogue template as a PromptList; an ICE gets only its round, in ``ice`` markers."""
    _check_dialogue(template, where)
    out = PromptList()
    if "begin" in template and not ice:
        out.append(marker("begin", "begin"))
        _splice(out, template["begin"], f"{where}.begin")
        out.append(marker("begin", "end"))
    section = "ice" if ice else "round"
    out.append(marker(section, "begin"))
    _splice(out, template["round"], f"{where}.round")
    out.append(marker(section, "end"))
    if "end" in template and not ice:
        out.append(marker("end", "begin"))  # docs/templates.md D3: the reference writes {end, end} twice
        _splice(out, template["end"], f"{where}.end")
        out.append(marker("end", "end"))
    return out


def _remove(value: Intermediate, token: str | None) -> Intermediate:
    if not token:
        return value
    if isinstance(value, str):
        return value.replace(token, "")
    out = PromptList()
    for item in value:
        if isinstance(item, str):
            out.append(item.replace(token, ""))
        elif isinstance(item, dict) and not is_marker(item) and isinstance(item.get("prompt"), str):
            out.append({**item, "prompt": item["prompt"].replace(token, "")})
        else:
            out.append(item)
    return out


def _fill_text(text: str, row: Mapping[str, Any], ice_token: str | None, ice: str | None) -> str:
    if ice_token and ice is not None and ice_token in text:
        return ice.join(substitute(piece, row) for piece in text.split(ice_token))
    return substitute(text, row)


def fill(
    template: Intermediate, row: Mapping[str, Any], *, ice_token: str | None = None, ice: Intermediate | None = None
) -> Intermediate:
    """Fill ``template`` with ``row`` and insert ``ice`` verbatim at each ``ice_token``."""
    if isinstance(template, str):
        return _fill_string(template, row, ice_token, ice)
    text_ice = ice if isinstance(ice, str) else None
    out = PromptList()
    for item in template:
        if isinstance(item, str) and ice_token and ice is not None and not isinstance(ice, str):
            _splice_ice(out, item, row, ice_token, ice)
        elif isinstance(item, str):
            out.append(_fill_text(item, row, ice_token, text_ice))
        elif is_marker(item):
            out.append(dict(item))
        else:
            out.append(_fill_role(item, row, ice_token, ice))
    return out


def _fill_string(template: str, row: Mapping[str, Any], ice_token: str | None, ice: Intermediate | None) -> str:
    if ice_token and ice is not None and ice_token in template and not isinstance(ice, str):
        raise TemplateError(
            f"cannot insert a dialogue ICE at ice_token {ice_token!r} of a string template; "
            "use a string ice_template or put the ice_token in a dialogue's begin"
        )
    return _fill_text(template, row, ice_token, ice if isinstance(ice, str) else None)


def _splice_ice(out: PromptList, item: str, row: Mapping[str, Any], ice_token: str, ice: PromptList) -> None:
    """Fill a string item, a dialogue ICE inserted at each ``ice_token`` (an empty piece disappears, as in the
    reference)."""
    pieces = item.split(ice_token)
    for i, piece in enumerate(pieces):
        if piece:
            out.append(substitute(piece, row))
        if i < len(pieces) - 1:
            out.extend(dict(x) if isinstance(x, dict) else x for x in ice)


def _fill_role(
    item: dict[str, Any], row: Mapping[str, Any], ice_token: str | None, ice: Intermediate | None
) -> dict[str, Any]:
    """Fill a role item's ``prompt`` (a dialogue ICE cannot go inside one)."""
    new = dict(item)
    prompt = item.get("prompt")
    if isinstance(prompt, str):
        if ice_token and ice is not None and ice_token in prompt and not isinstance(ice, str):
            raise TemplateError(
                f"role {item.get('role')!r}: cannot insert a dialogue ICE at ice_token "
                f"{ice_token!r} inside a 'prompt'; put the ice_token in a raw string of begin"
            )
        new["prompt"] = _fill_text(prompt, row, ice_token, ice if isinstance(ice, str) else None)
    return new


def _check_token(token: Any, where: str) -> None:
    if token is not None and not isinstance(token, str):
        raise TemplateError(f"{where} must be a string or null, got {token!r}")
    if token == "":
        raise TemplateError(f"{where} must not be empty")


def _check_entry(key: Any, value: Any, name: str, ice_token: str | None) -> None:
    """Refuse a dialogue's or label map's entry whose key is no string or whose value no template."""
    if not isinstance(key, str):
        raise TemplateError(f"{name}: key {key!r} must be a string")
    if not isinstance(value, (str, list, dict)):
        raise TemplateError(
            f"{name}[{key!r}]: expected a string, array or object, got {type(value).__name__} {value!r}"
        )
    if isinstance(value, str) and ice_token and ice_token not in value:
        raise TemplateError(f"{name}[{key!r}]: ice_token {ice_token!r} is not in {value!r}")


class PromptTemplate:
    """A prompt (or ice) template as OpenCompass's ``infer_cfg`` writes it.

    ``template`` is a string, a dialogue ``{"begin", "round", "end"}`` or a label map
    ``{label: template}``. Errors (TemplateError) are raised here, where the template is written.
    """

    def __init__(self, template: Any, ice_token: Any = None, sep_token: Any = None, *, name: str = "template") -> None:
        self.name = name
        if not isinstance(template, (str, dict)):
            raise TemplateError(
                f"{name}: a template must be a string or an object, got {type(template).__name__} {template!r}"
            )
        for key, token in (("ice_token", ice_token), ("sep_token", sep_token)):
            _check_token(token, f"{name}.{key}")
        self.template: TemplateValue = template
        self.ice_token: str | None = ice_token
        self.sep_token: str | None = sep_token
        if isinstance(template, str):
            self.kind = "string"
            if ice_token and ice_token not in template:
                raise TemplateError(f"{name}: ice_token {ice_token!r} is not in the template {template!r}")
            return
        self.kind = "dialogue" if is_dialogue(template) else "labels"
        if self.kind == "dialogue":
            _check_dialogue(template, name)
        for key, value in template.items():
            _check_entry(key, value, name, ice_token)

    def fields(self) -> list[FieldRead]:
        """Return the ``{name}`` fields this template's texts read (every label's, for a label map)."""
        return value_reads(self.template)

    @property
    def is_dialogue(self) -> bool:
        """Whether the template (for a label map, its values) produces PromptLists."""
        if self.kind == "dialogue":
            return True
        if self.kind == "labels":
            first = next(iter(self.template.values()))  # type: ignore[union-attr]
            return isinstance(first, dict)
        return False

    def choose(self, label: Any = None, *, first: bool = False) -> TemplateValue:
        """Return the template for ``label``, or with ``first`` a label map's first (gen mode)."""
        if self.kind != "labels":
            return self.template
        assert isinstance(self.template, dict)
        if first:
            label = next(iter(self.template))
        elif not isinstance(label, str) or label not in self.template:
            raise TemplateError(
                f"{self.name}: label {label!r} is not a key of the label map (labels: {list(self.template)!r})"
            )
        value = self.template[label]
        if isinstance(value, str):
            return value
        if isinstance(value, dict) and is_dialogue(value):
            _check_dialogue(value, f"{self.name}[{label!r}]")
            return value
        raise TemplateError(
            f"{self.name}: the template of label {label!r} must be a string or a dialogue "
            f"object, got {type(value).__name__}"
        )

    def encode(self, label: Any = None, *, first: bool = False, ice: bool = False) -> Intermediate:
        """Encode the template chosen for ``label``: a string, or a dialogue as a PromptList."""
        chosen = self.choose(label, first=first)
        if isinstance(chosen, str):
            return chosen
        where = self.name if self.kind == "dialogue" else f"{self.name}[{label!r}]"
        return encode_dialogue(chosen, ice=ice, where=where)

    def ice_item(self, row: Mapping[str, Any], label: Any) -> Intermediate:
        """Render one in-context example from train row ``row``: sep_token kept, ice_token removed."""
        encoded = self.encode(label, ice=True)
        encoded = _remove(encoded, self.ice_token)
        return fill(encoded, row)

    def gen_prompt(
        self,
        row: Mapping[str, Any],
        ice: Intermediate = "",
        *,
        output_column: str | None = None,
        replace_token: str = "",
    ) -> Intermediate:
        """Render the generation prompt: the first template, sep removed, answer masked, ICE inserted."""
        encoded = self.encode(first=True)
        encoded = _remove(encoded, self.sep_token)
        ice = _remove(ice, self.sep_token)
        fill_row = dict(row)
        if output_column is not None:
            fill_row[output_column] = replace_token
        return fill(encoded, fill_row, ice_token=self.ice_token, ice=ice)

    def label_prompt(self, row: Mapping[str, Any], label: Any, ice: Intermediate = "") -> Intermediate:
        """Render the scored prompt of ``label``: sep removed from the template only, row unmasked."""
        encoded = self.encode(label)
        encoded = _remove(encoded, self.sep_token)
        return fill(encoded, row, ice_token=self.ice_token, ice=ice)
