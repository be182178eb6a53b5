"""Reading YAML files (``prompts.yml``), bounded, parsed once."""

from __future__ import annotations

import re
from typing import Any

import yaml

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.safety.limits import DEPTH
from pytest_promptsuite.safety.limits import YAML_NODES


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


class _Measure:
    """One walk of a node tree: expanded size, depth, cycles and repeated keys."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.sizes: dict[int, tuple[int, int]] = {}
        self.active: set[int] = set()

    def error(self, node: yaml.Node, problem: str) -> ConfigError:
        return ConfigError(f"{self.where}:{_line(node)}: {problem}")

    def children(self, node: yaml.Node) -> list[yaml.Node]:
        if isinstance(node, yaml.SequenceNode):
            return list(node.value)
        if not isinstance(node, yaml.MappingNode):
            return []
        seen: dict[tuple[str, str], yaml.Node] = {}
        for key, _ in node.value:
            if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                first = seen.setdefault((key.tag, key.value), key)
                if first is not key:
                    raise self.error(
                        key, f"duplicate key {key.value!r} (first at line {_line(first)}); a key may appear once"
                    )
        return [part for pair in node.value for part in pair]

    def visit(self, node: yaml.Node) -> tuple[int, int]:
        """Return (nodes once aliases are expanded, nesting depth) of ``node``."""
        key = id(node)
        known = self.sizes.get(key)
        if known is not None:
            return known
        if key in self.active:
            raise self.error(node, "a YAML alias that contains itself")
        self.active.add(key)
        size, depth = 1, 0
        for child in self.children(node):
            child_size, child_depth = self.visit(child)
            size, depth = size + child_size, max(depth, child_depth)
            if size > YAML_NODES.value:
                raise self.error(node, f"YAML aliases expand to more than {YAML_NODES}")
        if isinstance(node, yaml.CollectionNode):
            depth += 1
            if depth > DEPTH.value:
                raise self.error(node, f"nested deeper than {DEPTH}")
        self.active.discard(key)
        self.sizes[key] = (size, depth)
        return size, depth


def _invalid(where: str, exc: yaml.YAMLError) -> ConfigError:
    """Make the ``where:line: invalid YAML: ...`` error, with the line the parser stopped at when it says."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is None:
        return ConfigError(f"{where}: invalid YAML: {exc}")
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context, start = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    started = f"; {context} that starts at line {int(start.line) + 1}" if context and start is not None else ""
    at = f"{where}:{int(mark.line) + 1}"
    return ConfigError(f"{at}: invalid YAML: {problem} (column {int(mark.column) + 1}{started})")


class CoreLoader(yaml.SafeLoader):
    """Read plain scalars by YAML 1.2's core schema, as js-yaml does (promptfoo's files): ``Yes``, ``on``
    and ``012``'s octal are YAML 1.1's, so ``Yes`` stays a string and ``012`` is twelve."""

    def construct_core_int(self, node: yaml.ScalarNode) -> int:
        """Construct a 1.2 integer: decimal, ``0o`` octal or ``0x`` hexadecimal."""
        text = str(self.construct_scalar(node))
        sign, digits = (-1, text[1:]) if text[:1] == "-" else (1, text.lstrip("+"))
        if digits[:2] in ("0o", "0x"):
            return sign * int(digits[2:], 8 if digits[1] == "o" else 16)
        return sign * int(digits)


CoreLoader.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag.rsplit(":", 1)[-1] not in ("bool", "int", "float", "null")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
for _tag, _pattern, _first in (
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
    ("null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
):
    CoreLoader.add_implicit_resolver(f"tag:yaml.org,2002:{_tag}", re.compile(_pattern), list(_first))
CoreLoader.add_constructor("tag:yaml.org,2002:int", CoreLoader.construct_core_int)


def load_yaml(text: str, where: str, *, core: bool = False) -> tuple[Any, yaml.Node | None]:
    """Return the value of a YAML document and its node tree (None for an empty document); ``core``
    reads it by YAML 1.2's core schema (:class:`CoreLoader`), as promptfoo reads its files.

    The tree is composed once and refused (a ConfigError naming ``where`` and the line) when it expands past
    :data:`~.limits.YAML_NODES`, nests deeper than :data:`~.limits.DEPTH`, contains itself or repeats a key.
    """
    try:
        loader = (CoreLoader if core else yaml.SafeLoader)(text)  # its reader refuses control characters at once
    except yaml.YAMLError as exc:
        raise _invalid(where, exc) from exc
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            mark = loader.get_mark()
            raise ConfigError(f"{where}:{int(mark.line) + 1}: nested deeper than {DEPTH}") from None
        except yaml.YAMLError as exc:
            raise _invalid(where, exc) from exc
        if node is None:
            return None, None
        try:
            _Measure(where).visit(node)
        except RecursionError:
            raise ConfigError(f"{where}:{_line(node)}: nested deeper than {DEPTH}") from None
        try:
            return loader.construct_document(node), node
        except yaml.YAMLError as exc:
            raise _invalid(where, exc) from exc
    finally:
        loader.dispose()
