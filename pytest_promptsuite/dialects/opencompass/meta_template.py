"""Meta templates (a model's chat format) and the parsers that apply them: the LM parser makes one
string for completion models, the API parser messages for chat models (docs/templates.md, "Meta templates")."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pytest_promptsuite.dialects.opencompass.prompt_list import SECTIONS
from pytest_promptsuite.dialects.opencompass.prompt_list import Intermediate
from pytest_promptsuite.dialects.opencompass.prompt_list import is_marker
from pytest_promptsuite.errors import TemplateError


#: API roles to OpenAI chat roles; other roles pass through.
ROLE_MAP = {"HUMAN": "user", "BOT": "assistant", "SYSTEM": "system", "TOOL": "tool"}


class MetaTemplate:
    """A validated meta template: ``round`` roles, ``reserved_roles``, top-level ``begin``/``end``."""

    def __init__(self, spec: Any, *, key: str = "meta_template") -> None:
        self.key = key
        if isinstance(spec, list):
            raise TemplateError(
                f"{key}: a meta template given as an array (OpenCompass's list form) is not "
                "supported; write an object with 'round'"
            )
        if not isinstance(spec, Mapping):
            raise TemplateError(f"{key} must be an object, got {type(spec).__name__}")
        if "round" not in spec:
            raise TemplateError(f"{key}: a meta template needs 'round' (an array of roles)")
        self.round: list[Any] = self._roles(spec["round"], f"{key}.round")
        self.reserved: list[Any] = self._roles(spec.get("reserved_roles", []), f"{key}.reserved_roles")
        self.roles = self._by_name(self.round + self.reserved)
        self.round_roles = [r["role"] for r in self.round if not isinstance(r, str)]
        self.begin: Any = spec.get("begin", "")
        self.end: Any = spec.get("end", "")
        self.eos_token_id: Any = spec.get("eos_token_id")
        gen = [r["role"] for r in self.round if not isinstance(r, str) and r.get("generate")]
        #: The first role of ``round`` with ``generate: true`` (None without one).
        self.generate_role: str | None = gen[0] if gen else None

    def _by_name(self, items: list[Any]) -> dict[str, dict[str, Any]]:
        """Return each role's config by name (a role defined twice is refused)."""
        roles: dict[str, dict[str, Any]] = {}
        for item in items:
            if isinstance(item, str):
                continue
            name = item["role"]
            if name in roles:
                raise TemplateError(f"{self.key}: role {name!r} is defined twice")
            roles[name] = dict(item)
        return roles

    def _roles(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise TemplateError(f"{where} must be an array of roles, got {type(value).__name__}")
        return [item if isinstance(item, str) else _role(item, f"{where}[{i}]") for i, item in enumerate(value)]

    def resolve(self, item: Mapping[str, Any], *, round_only: bool) -> str:
        """Return the meta role an item speaks as: its ``role``, else its ``fallback_role``."""
        known = self.round_roles if round_only else list(self.roles)
        role = item.get("role")
        if role in known:
            return str(role)
        fallback = item.get("fallback_role")
        if fallback in known:
            return str(fallback)
        where = "the meta template's round" if round_only else "the meta template"
        extra = f" nor its fallback_role {fallback!r}" if fallback is not None else " and the item has no fallback_role"
        if role is None:
            raise TemplateError(f"a role item without 'role' ({dict(item)!r}) cannot be placed in {where}")
        raise TemplateError(f"role {role!r} is not in {where}{extra} (roles: {', '.join(known)})")

    def merged(self, updates: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
        """Return a copy of every role's config with the template items' keys (``prompt``...) over it."""
        roles = copy.deepcopy(self.roles)
        for name, item in updates.items():
            roles[name].update(item)
        return roles


def _role(item: Any, where: str) -> dict[str, Any]:
    """Check one role of a meta template: an object with a ``role`` string, its ``begin`` and ``end`` strings."""
    if not isinstance(item, Mapping) or not isinstance(item.get("role"), str):
        raise TemplateError(f"{where}: a role must be an object with a 'role' string")
    for part in ("begin", "end"):
        if part in item and not isinstance(item[part], str):
            raise TemplateError(
                f"{where}: role {item['role']!r}: {part!r} must be a string "
                f"(token ids are not supported), got {item[part]!r}"
            )
    return dict(item)


def _text(value: Any, role: str, part: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TemplateError(f"role {role!r}: {part!r} must be a string, got {type(value).__name__}")
    return value


def join_no_meta(prompt: list[Any]) -> str:
    """Join a prompt without a meta template: its non-empty texts, ``"\\n"`` after every item."""
    out = ""
    sep = ""
    for item in prompt:
        if is_marker(item):
            continue
        if isinstance(item, str):
            if item:
                out += sep + item
        elif isinstance(item, Mapping):
            text = item.get("prompt")
            if text:
                out += sep + _text(text, str(item.get("role")), "prompt")
        else:
            raise TemplateError(f"prompt item {item!r} is neither a string nor an object")
        sep = "\n"
    return out


def _close(item: Mapping[str, Any], name: str, stack: list[tuple[str, int]]) -> int:
    """Close the open section ``name`` at an end marker; return where its items start."""
    if not stack:
        raise TemplateError(f"section marker {dict(item)!r} closes a section that is not open")
    open_name, start = stack.pop()
    if open_name != name:
        raise TemplateError(f"section marker {dict(item)!r} closes section {name!r} but {open_name!r} is open")
    return start


class _Walker:
    """The walk over the sections of an intermediate that both parsers share."""

    def __init__(self, meta: MetaTemplate | None) -> None:
        self.meta = meta

    @property
    def _meta(self) -> MetaTemplate:
        """The meta template, once ``parse`` has checked there is one."""
        assert self.meta is not None
        return self.meta

    def split_rounds(self, dialogue: list[Any], section: str) -> list[list[dict[str, Any]]]:
        """Group the role items of a ``round`` / ``ice`` section into rounds of the meta template."""
        rounds: list[list[dict[str, Any]]] = [[]]
        last = -1
        for item in dialogue:
            if isinstance(item, str):
                continue
            if is_marker(item):
                raise TemplateError(
                    f"a section marker {item!r} is nested in a {section!r} section; a dialogue ICE "
                    "cannot be inserted inside a round"
                )
            if not isinstance(item, Mapping):
                raise TemplateError(f"prompt item {item!r} is neither a string nor an object")
            name = self._meta.resolve(item, round_only=True)
            pos = self._meta.round_roles.index(name)
            if pos <= last and rounds[-1]:
                rounds.append([])
            rounds[-1].append({"_as": name, **item})
            last = pos
        return rounds

    def walk(self, prompt: list[Any], mode: str) -> None:
        """Walk the sections of ``prompt``, emitting strings, single items and rounds in order."""
        stack: list[tuple[str, int]] = []
        self.generating = True
        for i, item in enumerate(prompt):
            if not self.generating:
                return
            if isinstance(item, str):
                self.on_string(item)
            elif isinstance(item, Mapping) and "section" in item and "role" not in item:
                self._on_marker(item, i, stack, prompt, mode)
            elif isinstance(item, Mapping):
                self._on_item(item, stack)
            else:
                raise TemplateError(f"prompt item {item!r} is neither a string nor an object")
        if stack:
            raise TemplateError(f"section {stack[-1][0]!r} is opened but never closed")

    def _on_marker(
        self, item: Mapping[str, Any], i: int, stack: list[tuple[str, int]], prompt: list[Any], mode: str
    ) -> None:
        """Open or close a section at marker ``i``; a closed ``round`` / ``ice`` section emits its rounds."""
        if not is_marker(item):
            raise TemplateError(f"bad section marker {dict(item)!r}: it takes exactly 'section' and 'pos'")
        name, pos = item["section"], item["pos"]
        if pos == "begin":
            if name not in SECTIONS:
                raise TemplateError(f"unknown section {name!r} (sections: {', '.join(SECTIONS)})")
            stack.append((name, i + 1))
        elif pos == "end":
            start = _close(item, name, stack)
            if name in ("round", "ice"):
                self._close_rounds(prompt[start:i], name, mode)
        else:
            raise TemplateError(f"section marker {dict(item)!r}: 'pos' must be 'begin' or 'end'")

    def _on_item(self, item: Mapping[str, Any], stack: list[tuple[str, int]]) -> None:
        """Emit a role item of a ``begin`` / ``end`` section (round / ice items are emitted when it closes)."""
        if not stack:
            raise TemplateError(
                f"role item {dict(item)!r} is outside any section: a PromptList given to a meta "
                "template needs section markers"
            )
        if stack[-1][0] in ("begin", "end"):
            name = self._meta.resolve(item, round_only=False)
            self.on_single(name, item)

    def _close_rounds(self, dialogue: list[Any], name: str, mode: str) -> None:
        """Emit the rounds of a closed ``round`` / ``ice`` section, up to the model's turn in gen mode."""
        rounds = self.split_rounds(dialogue, name)
        for k, rnd in enumerate(rounds):
            last = mode == "gen" and name == "round" and k == len(rounds) - 1
            self.on_round(rnd, for_gen=last)
            if not self.generating:
                break

    def on_string(self, item: str) -> None:
        """Emit a bare string of the intermediate."""
        raise NotImplementedError

    def on_single(self, name: str, item: Mapping[str, Any]) -> None:
        """Emit one role item of a ``begin`` / ``end`` section as role ``name``."""
        raise NotImplementedError

    def on_round(self, rnd: list[dict[str, Any]], *, for_gen: bool) -> None:
        """Emit one round in the meta template's role order; ``for_gen`` stops at the model's turn."""
        raise NotImplementedError

    def round_configs(self, rnd: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Return every role's config with the round's items over it."""
        updates: dict[str, dict[str, Any]] = {}
        for item in rnd:
            name = item["_as"]
            updates[name] = {k: v for k, v in item.items() if k != "_as"}
        return self._meta.merged(updates)


class LMTemplateParser(_Walker):
    """An intermediate into one string, for completion models."""

    def __init__(self, meta: MetaTemplate | None) -> None:
        super().__init__(meta)
        if meta is not None:
            for part in ("begin", "end"):
                if not isinstance(getattr(meta, part), str):
                    raise TemplateError(f"{meta.key}.{part} must be a string for completion models")

    def parse(self, prompt: Intermediate, mode: str = "gen") -> str:
        """Return the one string a completion model is sent for ``prompt`` (``gen`` or ``ppl`` mode)."""
        if isinstance(prompt, str):
            return prompt
        if self.meta is None:
            return join_no_meta(prompt)
        self.text = ""
        self.walk(list(prompt), mode)
        out: str = self._meta.begin + self.text
        if self.generating:
            out += self._meta.end
        return out

    def _emit(self, cfg: Mapping[str, Any], name: str, *, for_gen: bool) -> bool:
        begin = _text(cfg.get("begin", ""), name, "begin")
        if for_gen and cfg.get("generate"):
            self.text += begin
            return False
        prompt = cfg.get("prompt", "")
        if prompt is not None and not isinstance(prompt, str):
            prompt = str(prompt)
        self.text += begin + (prompt or "") + _text(cfg.get("end", ""), name, "end")
        return True

    def on_string(self, item: str) -> None:
        self.text += item

    def on_single(self, name: str, item: Mapping[str, Any]) -> None:
        cfg = self._meta.merged({name: dict(item)})[name]
        self._emit(cfg, name, for_gen=False)

    def on_round(self, rnd: list[dict[str, Any]], *, for_gen: bool) -> None:
        roles = self.round_configs(rnd)
        for entry in self._meta.round:
            if isinstance(entry, str):
                self.text += entry
                continue
            name = entry["role"]
            if not self._emit(roles[name], name, for_gen=for_gen):
                self.generating = False
                return


class APITemplateParser(_Walker):
    """An intermediate into ``{"role": <api_role>, "prompt": ...}`` messages, for chat models."""

    def __init__(self, meta: MetaTemplate | None) -> None:
        super().__init__(meta)
        if meta is not None:
            for i, entry in enumerate(meta.round):
                if isinstance(entry, str):
                    raise TemplateError(
                        f"{meta.key}.round[{i}]: a string ({entry!r}) in the round of an API meta "
                        "template; chat models take roles only"
                    )

    def parse(self, prompt: Intermediate, mode: str = "gen") -> Any:
        """Return the ``{"role", "prompt"}`` messages a chat model is sent for ``prompt`` (a string stays one)."""
        if isinstance(prompt, str):
            return prompt
        if self.meta is None:
            return _without_meta(prompt)
        self.messages: list[dict[str, Any]] = []
        self.walk(list(prompt), mode)
        merged = _merged(self.messages)
        if not merged:
            raise TemplateError("the conversation is empty: the template produced no message to send")
        out: list[Any] = list(merged)
        if self._meta.begin:
            out.insert(0, self._meta.begin)
        return out

    def _human_role(self) -> str:
        human = self._meta.roles.get("HUMAN")
        if human is not None and isinstance(human.get("api_role"), str):
            return str(human["api_role"])
        return "HUMAN"

    def _message(self, cfg: Mapping[str, Any], name: str) -> dict[str, Any]:
        api_role = cfg.get("api_role")
        if not isinstance(api_role, str):
            raise TemplateError(f"role {name!r} of the meta template has no 'api_role' (needed for chat models)")
        begin = _text(cfg.get("begin", ""), name, "begin")
        end = _text(cfg.get("end", ""), name, "end")
        if "prompt" not in cfg and "prompt_mm" in cfg:
            return {"role": api_role, "prompt": cfg["prompt_mm"]}
        prompt = cfg.get("prompt", "")
        if prompt is not None and not isinstance(prompt, str):
            prompt = str(prompt)
        return {"role": api_role, "prompt": begin + (prompt or "") + end}

    def on_string(self, item: str) -> None:
        if item.strip():
            self.messages.append({"role": self._human_role(), "prompt": item})

    def on_single(self, name: str, item: Mapping[str, Any]) -> None:
        cfg = self._meta.merged({name: dict(item)})[name]
        self.messages.append(self._message(cfg, name))

    def on_round(self, rnd: list[dict[str, Any]], *, for_gen: bool) -> None:
        roles = self.round_configs(rnd)
        for entry in self._meta.round:
            name = entry["role"]
            cfg = roles[name]
            if for_gen and cfg.get("generate"):
                self.generating = False
                return
            self.messages.append(self._message(cfg, name))


def _without_meta(prompt: list[Any]) -> Any:
    """Return a prompt without a meta template: its joined text, else its items' content parts."""
    text = join_no_meta(prompt)
    if text:
        return text
    parts: list[Any] = []
    for item in prompt:
        if isinstance(item, Mapping) and not is_marker(item) and isinstance(item.get("prompt_mm"), list):
            parts.extend(item["prompt_mm"])
    return parts


def _merged(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge consecutive messages of one role, their texts joined by a line end."""
    merged: list[dict[str, Any]] = []
    for msg in messages:
        if merged and merged[-1]["role"] == msg["role"]:
            prev = merged[-1]
            if not isinstance(prev["prompt"], str) or not isinstance(msg["prompt"], str):
                raise TemplateError(
                    f"two consecutive {msg['role']!r} messages cannot be merged because one of them "
                    "is a list of content parts (multimodal)"
                )
            prev["prompt"] = prev["prompt"] + "\n" + msg["prompt"]
        else:
            merged.append(dict(msg))
    return merged


def make_meta(spec: Any, *, key: str = "meta_template") -> MetaTemplate | None:
    """Make a MetaTemplate, or None for ``null`` / ``{}`` (no meta template)."""
    if spec is None or (isinstance(spec, Mapping) and not spec):
        return None
    return MetaTemplate(spec, key=key)


def parse(prompt: Intermediate, *, parser: str | None, meta: MetaTemplate | None, mode: str) -> Any:
    """Apply ``parser`` (``"lm"``, ``"api"`` or None: the intermediate itself)."""
    if parser is None:
        return prompt
    if parser == "lm":
        return LMTemplateParser(meta).parse(prompt, mode)
    if parser == "api":
        return APITemplateParser(meta).parse(prompt, mode)
    raise TemplateError(f"parser must be 'lm', 'api' or null, got {parser!r}")


def to_openai_messages(prompt: Any) -> Any:
    """Turn API-parser output into OpenAI messages ``{"role", "content"}`` (a string stays one); the
    meta template's ``begin`` becomes a system message."""
    if isinstance(prompt, str):
        return prompt
    if all(isinstance(p, Mapping) and "type" in p and "role" not in p for p in prompt):
        return [{"role": "user", "content": list(prompt)}]  # content parts, no meta template
    return [_chat_message(item) for item in prompt]


def _chat_message(item: Any) -> dict[str, Any]:
    """Return one item of API-parser output as an OpenAI message."""
    if isinstance(item, Mapping) and "prompt" in item and "role" in item:
        role = str(item["role"])
        return {"role": ROLE_MAP.get(role, role), "content": item["prompt"]}
    if isinstance(item, Mapping) and "content" in item:
        role = str(item.get("role", "system"))
        return {"role": ROLE_MAP.get(role, role), "content": item["content"]}
    if isinstance(item, str):
        return {"role": "system", "content": item}
    raise TemplateError(f"cannot send {item!r} as a chat message")
