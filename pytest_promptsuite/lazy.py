"""Package namespaces whose public names load on first use (PEP 562), so that start-up pays only
for the stages a run uses: a one-case run on the fake model never imports Jinja2, YAML or the
NeMo and report-writing modules.

A package lists its public names once, as ordinary imports under ``if TYPE_CHECKING:`` (what type
checkers and readers see) and in ``__all__``; :func:`lazy_exports` reads that block from the
package's own source and imports a name's module when the name is first looked up.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


__all__ = ["lazy_exports"]


def lazy_exports(package: str, init_file: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: each name of the ``if TYPE_CHECKING:`` imports in
    ``init_file`` is imported from its module when first used, then kept in the namespace."""
    table: dict[str, tuple[str, str]] = {}

    def exports() -> dict[str, tuple[str, str]]:
        if not table:
            table.update(_type_checking_imports(Path(init_file)))
        return table

    def __getattr__(name: str) -> Any:
        try:
            module, attribute = exports()[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module, package), attribute)
        setattr(sys.modules[package], name, value)  # later lookups are plain attribute reads
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports()})

    return __getattr__, __dir__


def _type_checking_imports(init_file: Path) -> dict[str, tuple[str, str]]:
    """``{public name: (relative module, attribute)}`` from the ``if TYPE_CHECKING:`` block."""
    found: dict[str, tuple[str, str]] = {}
    for node in ast.parse(init_file.read_text(encoding="utf-8")).body:
        if not (isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            if isinstance(statement, ast.ImportFrom) and statement.level:
                module = "." * statement.level + (statement.module or "")
                for alias in statement.names:
                    found[alias.asname or alias.name] = (module, alias.name)
    return found
