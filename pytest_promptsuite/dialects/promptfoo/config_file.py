"""A promptfoo config as the importer reads it: its YAML (YAML 1.2 scalars), the line of each value, and the
files its ``file://`` entries name, read only inside its folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pytest_promptsuite.config.suite import confine
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.imported_suite import inside
from pytest_promptsuite.formats.yamlio import load_yaml


class ConfigFile:
    """The config file, its YAML node tree (for line numbers) and the folder its files lie in."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.root = path.resolve().parent
        text = self.read_text(path.name, None)
        data, self.node = load_yaml(text, str(path), core=True)
        if not isinstance(data, dict):
            raise ConfigError(f"{path}:1: a promptfoo config is a mapping (prompts, providers, tests)")
        self.data: dict[str, Any] = data
        self.notes: list[str] = []

    def where(self, *keys: Any) -> str:
        """Return ``path:line`` of the value at ``keys`` (the nearest line the node tree has)."""
        node = self.node
        for key in keys:
            if isinstance(node, yaml.MappingNode):
                found = [v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key]
                if not found:
                    break
                node = found[0]
            elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
                node = node.value[key]
            else:
                break
        line = int(node.start_mark.line) + 1 if node is not None else 1
        return f"{self.path}:{line}"

    def file(self, relative: str, where: str | None) -> Path:
        """Resolve a file the config names, inside its folder both as written (``..`` taken as promptfoo
        takes it) and with links followed."""
        normal = inside(relative)
        target = confine(self.root, normal) if normal is not None else None
        if target is None:
            raise ConfigError(f"{where or self.path}: file://{relative} lies outside the config's folder")
        if target.is_dir():
            raise ConfigError(f"{where or self.path}: file://{relative} is a folder: name its files with a glob")
        if not target.is_file():
            raise ConfigError(f"{where or self.path}: file://{relative}: no such file")
        return target

    def read_text(self, relative: str, where: str | None) -> str:
        """Read the UTF-8 text of a file inside the config's folder."""
        path = self.file(relative, where)
        try:
            return path.read_bytes().decode("utf-8-sig")
        except OSError as exc:
            raise ConfigError(f"{where or path}: cannot read {path}: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{where or path}: {path} is not UTF-8 text: {exc.reason}") from None
