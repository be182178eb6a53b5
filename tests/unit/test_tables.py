"""``tables.fill``: a config table from TOML data, checked against its type hints."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from dataclasses import field
from typing import Annotated
from typing import Any
from typing import Literal
from typing import Union

import pytest

from pytest_promptsuite.config.suite import SuiteConfig
from pytest_promptsuite.config.tables import Range
from pytest_promptsuite.config.tables import TableError
from pytest_promptsuite.config.tables import TableProblem
from pytest_promptsuite.config.tables import fill
from pytest_promptsuite.config.tables import set_keys


@dataclass(frozen=True)
class Inner:
    rate: Annotated[float, Range(ge=0, le=1)]
    mode: Literal["a", "b", "c"] = "a"


@dataclass(frozen=True)
class Outer:
    name: str = "x"
    on: bool = False
    count: Annotated[int, Range(gt=0, lt=10)] = 1
    limit: Union[Annotated[float, Range(gt=0)], None] = None
    shape: Union[dict[str, Any], str, None] = None
    tags: list[str] = field(default_factory=list)
    names: tuple[str, ...] = ()
    inner: Union[Inner, None] = None
    many: dict[str, Inner] = field(default_factory=dict)
    rows: list[Inner] = field(default_factory=list)
    kind: Literal["one", "two"] = "one"
    only: Literal["just"] = "just"
    assert_: list[dict[str, Any]] = field(default_factory=list, metadata={"key": "assert"})
    hidden: int = field(default=0, metadata={"internal": True})


def _problems(data: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    with pytest.raises(TableError) as info:
        fill(Outer, data)
    return [(p.loc, p.message) for p in info.value.problems]


def test_a_table_is_filled_and_converted() -> None:
    table = fill(Outer, {
        "name": "n", "on": True, "count": 9, "limit": 2, "shape": "s", "tags": ["a"], "names": ["m", "n"],
        "inner": {"rate": 1}, "many": {"k": {"rate": 0.5, "mode": "c"}}, "rows": [{"rate": 0}],
        "kind": "two", "assert": [{"type": "is-json"}],
    })
    assert table == Outer(
        name="n", on=True, count=9, limit=2.0, shape="s", tags=["a"], names=("m", "n"), inner=Inner(rate=1.0),
        many={"k": Inner(rate=0.5, mode="c")}, rows=[Inner(rate=0.0)], kind="two", assert_=[{"type": "is-json"}],
    )
    assert isinstance(table.limit, float) and isinstance(table.inner and table.inner.rate, float)
    assert fill(Outer, {}) == Outer()
    assert fill(Outer, {"shape": {"round": 1}}).shape == {"round": 1}
    with pytest.raises(dataclasses.FrozenInstanceError):
        table.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"name": 3}, [(("name",), "Input should be a valid string")]),
        ({"on": "yes"}, [(("on",), "Input should be a valid boolean")]),
        ({"count": 2.0}, [(("count",), "Input should be a valid integer")]),
        ({"count": True}, [(("count",), "Input should be a valid integer")]),
        ({"count": 0}, [(("count",), "Input should be greater than 0")]),
        ({"count": 10}, [(("count",), "Input should be less than 10")]),
        ({"limit": "5"}, [(("limit",), "Input should be a valid number")]),
        ({"limit": False}, [(("limit",), "Input should be a valid number")]),
        ({"limit": 0}, [(("limit",), "Input should be greater than 0")]),
        ({"limit": float("inf")}, [(("limit",), "Input should be a finite number")]),
        ({"limit": float("nan")}, [(("limit",), "Input should be a finite number")]),
        ({"shape": 5}, [(("shape",), "Input should be a valid dictionary or a valid string")]),
        ({"tags": "a"}, [(("tags",), "Input should be a valid list")]),
        ({"tags": ["a", 2]}, [(("tags", 1), "Input should be a valid string")]),
        ({"inner": {"rate": 2}}, [(("inner", "rate"), "Input should be less than or equal to 1")]),
        ({"inner": {"rate": -1}}, [(("inner", "rate"), "Input should be greater than or equal to 0")]),
        ({"inner": {}}, [(("inner", "rate"), "Field required")]),
        ({"inner": "x"}, [(("inner",), "Input should be a valid dictionary")]),
        ({"many": {"k": {"rate": 0, "mode": "d"}}}, [(("many", "k", "mode"), "Input should be 'a', 'b' or 'c'")]),
        ({"rows": [{"rate": 0}, {"rate": 0, "mood": "a"}]}, [(("rows", 1, "mood"), "Extra inputs are not permitted")]),
        ({"kind": "three"}, [(("kind",), "Input should be 'one' or 'two'")]),
        ({"only": "not"}, [(("only",), "Input should be 'just'")]),
        ({"kind": 1}, [(("kind",), "Input should be 'one' or 'two'")]),
        ({"assert_": []}, [(("assert_",), "Extra inputs are not permitted")]),
        ({"hidden": 1}, [(("hidden",), "Extra inputs are not permitted")]),
        ({"name": 1, "count": 0, "nope": 1}, [(("name",), "Input should be a valid string"),
                                              (("count",), "Input should be greater than 0"),
                                              (("nope",), "Extra inputs are not permitted")]),
    ],
)
def test_each_problem_is_named_with_its_place(data: dict[str, Any], expected: list[tuple[Any, str]]) -> None:
    assert _problems(data) == expected


def test_an_unknown_key_carries_the_keys_its_table_takes() -> None:
    with pytest.raises(TableError) as info:
        fill(Outer, {"inner": {"rat": 1}})
    assert info.value.problems[0] == TableProblem(("inner", "rat"), "Extra inputs are not permitted", ("rate", "mode"))
    assert isinstance(info.value, ValueError) and "inner.rat" in str(info.value)


def test_set_keys_are_the_fields_an_override_sets() -> None:
    config = fill(SuiteConfig, {"variants": {"v": {"template": "T", "model": {"spec": "fake:x", "timeout_s": 5}}}})
    variant = config.variants["v"]
    assert set_keys(variant) == {"template", "model"}
    assert variant.model is not None and set_keys(variant.model) == {"spec", "timeout_s"}
    assert config.model_for("v").timeout_s == 5.0 and config.model_for("v").spec == "fake:x"
    assert config.model_for("v").max_retries == config.model.max_retries
