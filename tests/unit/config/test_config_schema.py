"""``config.schema``: the config's tables validated by pydantic, and its errors as our messages."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any
from typing import Literal

import pytest

from pytest_promptsuite.config.config_schema import read_tables
from pytest_promptsuite.config.config_schema import validate
from pytest_promptsuite.config.suite import SuiteConfig
from pytest_promptsuite.config.suite import SuiteTables
from pytest_promptsuite.config.tables import ConfigTable
from pytest_promptsuite.config.tables import ModelConfig
from pytest_promptsuite.config.tables import Override
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.tomlio import key_lines
from pytest_promptsuite.formats.tomlio import parse_toml


@dataclass(frozen=True)
class Inner(ConfigTable):
    rate: float = field(metadata={"ge": 0, "le": 1})
    mode: Literal["a", "b", "c"] = "a"


@dataclass(frozen=True)
class Outer(ConfigTable):
    name: str = "x"
    on: bool = False
    count: int = field(default=1, metadata={"gt": 0, "lt": 10})
    limit: float | None = field(default=None, metadata={"gt": 0})
    shape: dict[str, Any] | str | None = None
    tags: list[str] = field(default_factory=list)
    inner: Inner | None = None
    many: dict[str, Inner] = field(default_factory=dict)
    rows: list[Inner] = field(default_factory=list)
    kind: Literal["one", "two"] = "one"
    only: Literal["just"] = "just"
    assert_: list[dict[str, Any]] = field(default_factory=list, metadata={"alias": "assert"})
    model: Override[ModelConfig] | None = None


PATH = Path("suite/promptsuite.toml")


def _problems(data: dict[str, Any], lines: dict[str, int] | None = None, prefix: str = "") -> list[str]:
    with pytest.raises(ConfigError) as info:
        read_tables(Outer, data, path=PATH, prefix=prefix, lines=lines or {})
    return str(info.value).splitlines()


def test_a_table_is_read_and_converted() -> None:
    table = validate(
        Outer,
        {
            "name": "n",
            "on": True,
            "count": 9,
            "limit": 2,
            "shape": "s",
            "tags": ["a"],
            "inner": {"rate": 1},
            "many": {"k": {"rate": 0.5, "mode": "c"}},
            "rows": [{"rate": 0}],
            "kind": "two",
            "assert": [{"type": "is-json"}],
            "model": {"spec": "fake:x", "timeout_s": 5},
        },
    )
    assert table == Outer(
        name="n",
        on=True,
        count=9,
        limit=2.0,
        shape="s",
        tags=["a"],
        inner=Inner(rate=1.0),
        many={"k": Inner(rate=0.5, mode="c")},
        rows=[Inner(rate=0.0)],
        kind="two",
        assert_=[{"type": "is-json"}],
        model=Override({"spec": "fake:x", "timeout_s": 5.0}),
    )
    assert isinstance(table.limit, float) and isinstance(table.inner and table.inner.rate, float)
    assert table.model is not None and isinstance(table.model["timeout_s"], float)
    assert validate(Outer, {}) == Outer()
    assert validate(Outer, {"shape": {"round": 1}}).shape == {"round": 1}
    assert validate(Outer, {"model": {}}).model == Override()
    with pytest.raises(dataclasses.FrozenInstanceError):
        table.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"name": 3}, ["name: Input should be a valid string"]),
        ({"on": "yes"}, ["on: Input should be a valid boolean"]),
        ({"on": 1}, ["on: Input should be a valid boolean"]),
        ({"count": 2.0}, ["count: Input should be a valid integer"]),
        ({"count": True}, ["count: Input should be a valid integer"]),
        ({"count": "2"}, ["count: Input should be a valid integer"]),
        ({"count": 0}, ["count: Input should be greater than 0"]),
        ({"count": 10}, ["count: Input should be less than 10"]),
        ({"limit": "5"}, ["limit: Input should be a valid number"]),
        ({"limit": False}, ["limit: Input should be a valid number"]),
        ({"limit": 0}, ["limit: Input should be greater than 0"]),
        ({"limit": float("inf")}, ["limit: Input should be a finite number"]),
        ({"limit": float("nan")}, ["limit: Input should be a finite number"]),
        ({"shape": 5}, ["shape: Input should be a valid dictionary or a valid string"]),
        ({"shape": [1]}, ["shape: Input should be a valid dictionary or a valid string"]),
        ({"tags": "a"}, ["tags: Input should be a valid list"]),
        ({"tags": ["a", 2]}, ["tags[1]: Input should be a valid string"]),
        ({"inner": {"rate": 2}}, ["inner.rate: Input should be less than or equal to 1"]),
        ({"inner": {"rate": -1}}, ["inner.rate: Input should be greater than or equal to 0"]),
        ({"inner": {}}, ["inner.rate: Field required"]),
        ({"inner": "x"}, ["inner: Input should be a valid dictionary"]),
        ({"many": {"k": 5}}, ["many.k: Input should be a valid dictionary"]),
        ({"many": {"k": {"rate": 0, "mode": "d"}}}, ["many.k.mode: Input should be 'a', 'b' or 'c'"]),
        ({"rows": [{"rate": 0}, {"rate": 0, "mood": "a"}]}, ["unknown key 'rows[1].mood' (did you mean 'mode'?)"]),
        ({"kind": "three"}, ["kind: Input should be 'one' or 'two'"]),
        ({"only": "not"}, ["only: Input should be 'just'"]),
        ({"kind": 1}, ["kind: Input should be 'one' or 'two'"]),
        ({"assert_": []}, ["unknown key 'assert_' (did you mean 'assert'?)"]),
        ({"model": {"timout_s": 1}}, ["unknown key 'model.timout_s' (did you mean 'timeout_s'?)"]),
        ({"model": {"max_retries": 101}}, ["model.max_retries: Input should be less than or equal to 100"]),
        ({"model": {"batch": True}}, ["unknown key 'model.batch'"]),
        ({"model": 5}, ["model: Input should be a valid dictionary"]),
        (
            {"name": 1, "count": 0, "nope": 1},
            [
                "name: Input should be a valid string",
                "count: Input should be greater than 0",
                "unknown key 'nope' (did you mean 'name'?)",
            ],
        ),
    ],
)
def test_each_problem_is_named_with_its_place(data: dict[str, Any], expected: list[str]) -> None:
    assert _problems(data) == [f"{PATH}: {line}" for line in expected]


def test_problems_come_in_the_order_of_the_file_with_their_lines() -> None:
    """Not in the order of the fields: a table's keys as the file has them, its missing keys after."""
    text = (
        '[[tool.promptsuite.rows]]\nmood = 1\n[tool.promptsuite]\nnope = 1\ncount = 0\ninner = { mode = "x" }\n'
        "name = 1\n"
    )
    document, _ = parse_toml(text.encode(), str(PATH))
    lines = {k.removeprefix("tool.promptsuite."): v for k, v in key_lines(text).items()}
    assert _problems(document["tool"]["promptsuite"], lines, prefix="tool.promptsuite") == [
        f"{PATH}:2: unknown key 'tool.promptsuite.rows[0].mood' (did you mean 'mode'?)",
        f"{PATH}:1: tool.promptsuite.rows[0].rate: Field required",
        f"{PATH}:4: unknown key 'tool.promptsuite.nope' (did you mean 'name'?)",
        f"{PATH}:5: tool.promptsuite.count: Input should be greater than 0",
        f"{PATH}:6: tool.promptsuite.inner.mode: Input should be 'a', 'b' or 'c'",
        f"{PATH}:6: tool.promptsuite.inner.rate: Field required",
        f"{PATH}:7: tool.promptsuite.name: Input should be a valid string",
    ]


def test_an_unknown_key_is_matched_against_the_keys_its_own_table_takes() -> None:
    assert _problems({"inner": {"rat": 1}}) == [
        f"{PATH}: unknown key 'inner.rat' (did you mean 'rate'?)",
        f"{PATH}: inner.rate: Field required",
    ]
    assert _problems({"many": {"a": {"rate": 0, "kind": "a"}}}) == [f"{PATH}: unknown key 'many.a.kind'"]


def test_validate_raises_pydantics_error_which_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="limit"):
        validate(Outer, {"limit": 0})


def test_an_override_is_the_keys_a_file_sets() -> None:
    config = validate(SuiteTables, {"variants": {"v": {"template": "T", "model": {"spec": "fake:x", "timeout_s": 5}}}})
    variant = config.variants["v"]
    assert variant.set_keys() == {"template": "T"} and variant.model == Override({"spec": "fake:x", "timeout_s": 5.0})
    suite = SuiteConfig(**vars(config))
    assert suite.model_for("v").timeout_s == 5.0 and suite.model_for("v").spec == "fake:x"
    assert suite.model_for("v").max_retries == suite.model.max_retries
    assert suite.model_for(None) is suite.model
    assert validate(SuiteTables, {"gate": {"alpha": 0.1}}).gate == Override({"alpha": 0.1})


def test_an_override_is_validated_as_its_table_with_every_field_optional() -> None:
    table = Override.table(ModelConfig)
    fields = {f.name: f for f in dataclasses.fields(table)}
    assert list(fields) == [f.name for f in dataclasses.fields(ModelConfig) if f.name not in ("batch", "budget_usd")]
    assert all(f.default is None for f in fields.values())
    own = {f.name: f.metadata for f in dataclasses.fields(ModelConfig)}
    assert all(f.metadata == own[name] for name, f in fields.items())  # bounds and descriptions: the same
    assert Override.table(ModelConfig) is table


def test_the_schema_carries_each_fields_description() -> None:
    from pydantic import TypeAdapter

    schema = TypeAdapter(SuiteTables).json_schema()
    model = schema["$defs"]["ModelConfig"]["properties"]
    assert model["timeout_s"] == {
        "default": 60.0,
        "description": "Seconds one call may take.",
        "exclusiveMinimum": 0,
        "maximum": 86400,
        "title": "Timeout S",
        "type": "number",
    }
    override = schema["$defs"]["ModelConfigOverride"]["properties"]
    assert override["timeout_s"]["anyOf"][0] == {"exclusiveMinimum": 0, "maximum": 86400, "type": "number"}
    assert "batch" not in override and schema["$defs"]["ModelConfig"]["additionalProperties"] is False
    assert schema["$defs"]["SuiteCheck"]["required"] == ["assert"]
    undescribed = [
        f"{name}.{key}"
        for name, table in schema["$defs"].items()
        for key, value in table["properties"].items()
        if "description" not in value
    ]
    assert undescribed == []
