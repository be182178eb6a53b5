"""Stage tests for ``checks.jsonpath``: the paths checks read a JSON value through."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_promptsuite.checks.jsonpath import JsonPath
from pytest_promptsuite.checks.jsonpath import PathMissing


@pytest.mark.parametrize(
    ("text", "steps"),
    [
        ("$", ()),
        ("$.a.b", ("a", "b")),
        ("$.退款.金额", ("退款", "金额")),
        ("$.items[0][-1]", ("items", 0, -1)),
        ("$['a b'][\"c'd\"]", ("a b", "c'd")),
        ("$.x-y", ("x-y",)),
    ],
)
def test_jsonpath_parses(text: str, steps: tuple[Any, ...]) -> None:
    assert JsonPath.parse(text).steps == steps


def test_jsonpath_find_errors() -> None:
    with pytest.raises(PathMissing, match=r"^\$\.a is an array, not an object$"):
        JsonPath.parse("$.a.b").find({"a": []})
    with pytest.raises(PathMissing, match=r"^\$ is a string, not an array$"):
        JsonPath.parse("$[0]").find("x")
