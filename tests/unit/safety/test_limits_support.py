"""The tests' short regex limit reaches every module that reads the real one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest_promptsuite
from tests.limits import USING


def test_every_reader_of_the_regex_limit_is_shortened() -> None:
    root = Path(pytest_promptsuite.__file__).parent
    readers = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and any(a.name == "REGEX_SECONDS" for a in node.names):
                readers.add(".".join(("pytest_promptsuite", *path.relative_to(root).with_suffix("").parts)))
    assert readers == set(USING)
