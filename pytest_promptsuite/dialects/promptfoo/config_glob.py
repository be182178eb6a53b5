"""The globs of a promptfoo config, walked as promptfoo's glob library (node-glob) walks them by default, never
listing a folder outside the config's folder and never past a bound on the paths visited."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

from pytest_promptsuite.errors import ConfigError


#: The most folder entries one glob may visit (a narrower glob names the files).
MAX_VISITED = 100_000

#: A listed entry: its name, whether it is a folder (links followed), whether it is a symbolic link.
_Entry = tuple[str, bool, bool]


def is_glob(path: str) -> bool:
    """Tell whether a config's path is a glob (has a ``*``, ``?``, ``[`` or ``{``)."""
    return any(ch in path for ch in "*?[{")


def expand(root: Path, pattern: str, where: str) -> list[str]:
    """Return the paths under ``root`` that ``pattern`` (relative, normalized, ``/``-separated) matches, sorted;
    ConfigError at ``where`` when the walk visits more than :data:`MAX_VISITED` entries."""
    return _Walk(root, pattern, where).run()


def _magic(part: str) -> bool:
    return any(ch in part for ch in "*?[")


def _shown(name: str, part: str) -> bool:
    """Tell whether a wildcard may match ``name``: a dot file only when the pattern's part starts with a dot."""
    return not name.startswith(".") or part.startswith(".")


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


class _Walk:
    """One glob's walk: segment by segment from the config's folder, each folder listed once and counted.

    As node-glob's defaults: wildcards match no dot file unless written with the dot; a ``**`` descends into
    real folders only, except that a ``**`` after the first segment may go through one symbolic link, which
    ends it (the rest of the pattern matches inside the link's folder). A folder whose real path lies
    outside the config's folder is never listed."""

    def __init__(self, root: Path, pattern: str, where: str) -> None:
        self.root = root.resolve()
        self.pattern = pattern
        self.parts = tuple(pattern.split("/"))
        self.where = where
        self.visited = 0
        self.found: set[str] = set()
        self._listed: dict[str, list[_Entry]] = {}
        self._seen: set[tuple[str, int]] = set()

    def run(self) -> list[str]:
        """Walk the whole pattern; return what it matched."""
        self._match("", 0)
        return sorted(found for found in self.found if found)

    def _match(self, folder: str, i: int) -> None:
        """Match the pattern's parts from ``i`` on, inside ``folder`` (relative to the root)."""
        if (folder, i) in self._seen:
            return
        self._seen.add((folder, i))
        if i == len(self.parts):
            self.found.add(folder)
        elif self.parts[i] == "**":
            self._globstar(folder, i)
        elif _magic(self.parts[i]):
            self._wildcard(folder, i)
        elif os.path.lexists(self.root / folder / self.parts[i]):
            self._match(_join(folder, self.parts[i]), i + 1)

    def _wildcard(self, folder: str, i: int) -> None:
        part = self.parts[i]
        for name, _, _ in self._entries(folder):
            if _shown(name, part) and fnmatch.fnmatchcase(name, part):
                self._match(_join(folder, name), i + 1)

    def _globstar(self, folder: str, i: int) -> None:
        self._match(folder, i + 1)  # ** matches no folder too
        for name, is_folder, link in self._entries(folder):
            if not is_folder or name.startswith("."):
                continue
            if not link:
                self._match(_join(folder, name), i)
            elif i > 0:  # a link ends a ** that is not the pattern's first part; a first ** follows none
                self._match(_join(folder, name), i + 1)

    def _entries(self, folder: str) -> list[_Entry]:
        """List ``folder`` once, counting its entries against the bound; nothing for a folder outside the root."""
        if folder not in self._listed:
            self._listed[folder] = self._list(self.root / folder)
            self.visited += len(self._listed[folder]) + 1
            if self.visited > MAX_VISITED:
                raise ConfigError(
                    f"{self.where}: file://{self.pattern}: the glob visited more than {MAX_VISITED:,} paths; "
                    "name the files with a narrower glob"
                )
        return self._listed[folder]

    def _list(self, path: Path) -> list[_Entry]:
        try:
            if not path.resolve().is_relative_to(self.root) or not path.is_dir():
                return []
            with os.scandir(path) as entries:
                return [_entry(e) for e in entries]
        except (OSError, RuntimeError):  # unreadable, or a loop of links
            return []


def _entry(entry: os.DirEntry[str]) -> _Entry:
    """Describe a listed entry; one whose links loop or lead nowhere is no folder (its folder still lists)."""
    try:
        is_folder = entry.is_dir()
    except OSError:
        is_folder = False
    return entry.name, is_folder, entry.is_symlink()
