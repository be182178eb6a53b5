"""What an importer produces, and writing it all or nothing (every file through the scrubber)."""

from __future__ import annotations

import json
import os
import posixpath
import shutil
import tempfile
from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from pytest_promptsuite.config.suite import confine
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.formats.tomlio import check_values
from pytest_promptsuite.formats.tomlio import parse_toml
from pytest_promptsuite.safety.scrub import scrub


def jsonl(rows: Iterable[Any]) -> str:
    """Encode rows as JSON Lines text (escaped and scrubbed)."""
    return "".join(encode(row) + "\n" for row in rows)


@dataclass
class ImportedSuite:
    """One suite: its folder name under ``--out``, its config tables and its other files."""

    name: str
    config: dict[str, dict[str, Any]]
    files: dict[str, str] = field(default_factory=dict)
    #: What was not carried over, or carried over with a change, one sentence each.
    notes: list[str] = field(default_factory=list)
    header: str = ""

    def rendered(self) -> dict[str, str]:
        """Return every file of the suite, ``promptsuite.toml`` included, by relative path."""
        return {"promptsuite.toml": config_toml(self.config, header=self.header), **self.files}


def config_toml(tables: dict[str, dict[str, Any]], *, header: str = "") -> str:
    """Write an imported suite's config ``tables`` (a dotted name nests) as TOML, with ``header`` as leading
    comment lines, through tomli-w; a key set to None is left out. The text is parsed back and compared: a value
    with no TOML form is a ConfigError."""
    import tomli_w

    data: dict[str, Any] = {}
    for section, table in tables.items():
        node = data
        for part in section.split("."):
            node = node.setdefault(part, {})
        node.update({k: v for k, v in table.items() if v is not None})
    try:
        body = tomli_w.dumps(data)
        parsed, _ = parse_toml(body.encode("utf-8"), "promptsuite.toml")
    except (TypeError, ValueError) as exc:  # a value of no TOML type; a lone surrogate (no UTF-8 form)
        raise ConfigError(f"promptsuite.toml: cannot be written as TOML: {exc}") from None
    check_values(parsed, body, "promptsuite.toml")  # nan and inf, which tomli-w writes and no setting takes
    if parsed != json.loads(json.dumps(data)):  # tuples as lists
        raise ConfigError("promptsuite.toml: the TOML written does not read back as the values given")
    comments = "".join(f"# {line}".rstrip() + "\n" for line in header.splitlines())
    return f"{comments}\n{body}" if comments else body


@dataclass
class ImportResult:
    """What an import wrote: the suites, and the notes of the whole import."""

    out: Path
    suites: Sequence[ImportedSuite]
    notes: list[str] = field(default_factory=list)

    def report(self) -> str:
        """Return the lines the ``import`` command prints: each suite, then what was not carried over."""
        lines = [f"wrote {len(self.suites)} suite{'s' if len(self.suites) != 1 else ''} under {self.out}"]
        for suite in self.suites:
            lines.append(f"  {suite.name}/")
            lines.extend(f"    - {note}" for note in suite.notes)
        lines.extend(f"  - {note}" for note in self.notes)
        return "\n".join(lines)


def inside(relative: str) -> str | None:
    """Normalize a relative path as promptfoo and Node do (``a/../b`` is ``b``, links not followed);
    None when it is absolute or leaves its folder."""
    normal = posixpath.normpath(relative.replace("\\", "/"))
    if posixpath.isabs(normal) or os.path.isabs(relative) or normal == ".." or normal.startswith("../"):
        return None
    return None if normal == "." else normal


def _folder_name(name: str) -> str:
    cleaned = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name).strip("._") or "suite"
    return cleaned[:100]


def _contents(out: Path, suites: Sequence[ImportedSuite], flat: bool) -> dict[str, str]:
    """Return every file of ``suites`` by its path under ``out``, scrubbed; each suite is named for its folder."""
    contents: dict[str, str] = {}
    used: set[str] = set()
    for suite in suites:
        base = "" if flat else _folder_name(suite.name)
        while base in used and not flat:
            base += "_"
        used.add(base)
        suite.name = base or "."
        for relative, text in suite.rendered().items():  # every file through the one scrubber
            name = inside(f"{base}/{relative}" if base else relative)
            if name is None:
                raise ConfigError(f"{relative}: a path that leaves --out {out} (nothing was written)")
            contents[name] = scrub(text)
    return contents


def _stage(staging: Path, relative: str, text: str, out: Path) -> None:
    """Write one file under the staging folder (links followed: nothing is written outside it)."""
    target = staging / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    if confine(staging, relative) is None:
        raise ConfigError(f"{relative}: a path that leaves --out {out} (nothing was written)")
    target.write_text(text, encoding="utf-8", newline="\n")


def write_import(out: Path, suites: Sequence[ImportedSuite], *, flat: bool = False) -> None:
    """Write ``suites`` under ``out`` (each in its own folder, or ``out`` itself when ``flat``), all or nothing.
    ``out`` must not exist or be an empty folder; the files are staged beside it and renamed into place."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"{out}: --out must be a new or empty folder (nothing was written)")
    contents = _contents(out, suites, flat)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".promptsuite-import-", dir=out.parent))
    try:
        for relative, text in contents.items():
            _stage(staging, relative, text, out)
        if out.exists():
            out.rmdir()
        os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
