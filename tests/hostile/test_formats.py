"""The bounded readers and the round-trip-safe writer (``formats``): findings 2, 3, 4, 6, 8, 9.

Every refusal is a clear error that names the place; every string we can receive survives a
write and a read, byte for byte, whatever the reader splits lines on.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.formats.jsonio import raw_decode
from pytest_promptsuite.formats.jsonl import appender
from pytest_promptsuite.formats.jsonl import read_jsonl
from pytest_promptsuite.formats.tomlio import load_toml
from pytest_promptsuite.formats.yamlio import load_yaml
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.io import load_results
from pytest_promptsuite.safety.limits import DEPTH
from tests.hostile.support import BILLION_LAUGHS


#: Any string we can receive: any code point, lone surrogates and every line separator included.
#: (A high and a low surrogate side by side are one character in JSON, so no answer or file we
#: read holds them as two; the map makes the generated strings such strings.)
ANY_TEXT = st.text(alphabet=st.characters(codec=None, categories=None), max_size=60).map(
    lambda text: str(json.loads(json.dumps(text)))
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, derandomize=True)
@given(ANY_TEXT)
def test_any_string_survives_a_write_and_a_read(text: str) -> None:
    line = encode({"output": text}, compact=True, scrub=False)
    assert "\n" not in line and len(line.splitlines()) == 1  # one line, even for str.splitlines()
    line.encode("utf-8")  # writable as UTF-8 whatever the string holds
    assert decode(line, strict=False) == {"output": text}


@settings(max_examples=150, derandomize=True)
@given(st.lists(JSON_VALUES, min_size=1, max_size=5))
def test_any_json_values_survive_a_jsonl_file(values: list[Any]) -> None:
    data = "".join(encode(v, scrub=False) + "\n" for v in values).encode("utf-8")
    back = [line.value for line in read_jsonl(data, strict=False)]
    assert back == values


@settings(max_examples=100, derandomize=True)
@given(ANY_TEXT, ANY_TEXT)
def test_any_output_survives_results_jsonl(
    tmp_path_factory: pytest.TempPathFactory, output: str, metadata: str
) -> None:
    row = CaseResult(
        case_id="c",
        slice="s",
        outcome="passed",
        output=output,  # type: ignore[arg-type]
        metadata={"note": metadata},
        replies=(output,),
    )
    folder = tmp_path_factory.mktemp("report")
    (folder / "results.jsonl").write_text(row.to_json() + "\n", encoding="utf-8")
    [back] = load_results(folder)
    assert back == row


def test_results_with_raw_line_separators_written_by_older_versions_are_read(tmp_path: Path) -> None:
    row = {"case_id": "c", "slice": "s", "outcome": "passed", "output": "a\u2028b\u2029c\x85d"}
    (tmp_path / "results.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    [back] = load_results(tmp_path)
    assert back.output == "a\u2028b\u2029c\x85d"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": [], "a": ["x"]}', "duplicate key 'a': a key may appear once in an object (columns 2 and 11)"),
        ('{"w": NaN}', "NaN is not a JSON number (JSON has no NaN or Infinity) (column 7)"),
        ('{"w": -Infinity}', "-Infinity is not a JSON number (JSON has no NaN or Infinity) (column 7)"),
        ('{"w": 1e999}', "1e999 is too large for a number (column 7)"),
        ("[" * 65 + "]" * 65, "nested deeper than the depth limit of 64 levels (column 65)"),
        ('{"a": "x", "b": {"a": 1, "b": {"a": 2, "a": 3}}}', "duplicate key 'a'"),
    ],
)
def test_strict_json_names_what_and_where(text: str, message: str) -> None:
    with pytest.raises(JsonError) as info:
        decode(text)
    assert info.value.describe(single_line=True).startswith(message)


def test_a_duplicate_across_lines_names_both_lines() -> None:
    with pytest.raises(JsonError) as info:
        decode('{\n  "rules": [],\n  "rules": [1]\n}')
    assert info.value.describe() == (
        "duplicate key 'rules': a key may appear once in an object (line 2, column 3 and line 3, column 3)"
    )


def test_nesting_at_the_limit_is_fine_and_deeper_is_refused_without_recursion() -> None:
    assert decode("[" * DEPTH.value + "]" * DEPTH.value) is not None
    bomb = "[" * 100_000 + "]" * 100_000
    for strict in (True, False):
        with pytest.raises(JsonError, match="nested deeper than the depth limit of 64 levels"):
            decode(bomb, strict=strict)
    with pytest.raises(JsonError, match="nested deeper"):
        raw_decode("x " + bomb, 2)


def test_brackets_inside_strings_are_not_nesting() -> None:
    text = json.dumps({"a": "[" * 500 + "{" * 500})
    assert decode(text) == {"a": "[" * 500 + "{" * 500}


def test_lenient_reading_keeps_what_json_allows() -> None:
    assert decode('{"a": 1, "a": 2}', strict=False) == {"a": 2}
    assert math.isnan(decode("NaN", strict=False))


def test_writing_nan_gives_null_not_invalid_json() -> None:
    assert encode({"score": float("nan"), "x": [float("inf")]}) == '{"score": null, "x": [null]}'


def test_read_jsonl_reports_every_bad_line_and_goes_on() -> None:
    data = b'\xef\xbb\xbf{"a": 1}\r\n\n{"a": \n\xff\n{"b": 2}\n\xef\xbb\xbf{}\n\x1e{}\nnull\n{"a": 1, "a": 2}'
    lines = list(read_jsonl(data))
    assert [(line.number, line.value, line.problem) for line in lines] == [
        (1, {"a": 1}, None),
        (3, None, "invalid JSON: Expecting value (column 7)"),
        (4, None, "not valid UTF-8 (byte 0xff at column 1); save the file as UTF-8"),
        (5, {"b": 2}, None),
        (6, None, "invalid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig) (column 1)"),  # only the file's start
        (7, None, "invalid JSON: Expecting value (column 1)"),  # no RFC 7464 record separators
        (8, None, None),
        (9, None, "duplicate key 'a': a key may appear once in an object (columns 2 and 10)"),
    ]


def test_read_jsonl_splits_at_newlines_only_and_says_where_each_line_is(tmp_path: Path) -> None:
    data = '{"a": "x\u2028y\u2029z\x85"}\r\n\n[1]'.encode()
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    with path.open("rb") as fp:
        lines = list(read_jsonl(fp))
    assert [(line.number, line.value) for line in lines] == [(1, {"a": "x\u2028y\u2029z\x85"}), (3, [1])]
    assert [data[line.start : line.end] for line in lines] == [data[: data.index(b"\n") + 1], b"[1]"]


def test_appending_writers_never_split_a_line(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    fds = [os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT) for _ in range(2)]
    writers = [appender(fd, encode) for fd in fds]
    values = [{"n": i, "text": "x" * (i * 40_000)} for i in range(6)]  # lines past any buffer's size
    for i, value in enumerate(values):
        writers[i % 2].write(value)
    for fd in fds:
        os.close(fd)
    assert [line.value for line in read_jsonl(path.read_bytes())] == values


# -- TOML ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            b'[suite]\ncases = ["a.jsonl"]\nname = "caf\xe9"\n',
            "promptsuite.toml:3: not valid UTF-8 (byte 0xe9 at column 12); save the file as UTF-8",
        ),
        (b"x = " + b"[" * 5000 + b"]" * 5000 + b"\n", "promptsuite.toml:1: nested deeper than the depth limit"),
        (b"[suite\n", "promptsuite.toml:1: invalid TOML: "),
    ],
    ids=["not-utf8", "deep", "syntax"],
)
def test_toml_problems_are_config_errors_with_the_line(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "promptsuite.toml"
    path.write_bytes(data)
    with pytest.raises(ConfigError) as info:
        load_toml(path)
    assert str(info.value).startswith(str(tmp_path / message))


def test_brackets_in_toml_strings_and_comments_are_not_nesting(tmp_path: Path) -> None:
    path = tmp_path / "promptsuite.toml"
    path.write_text('a = "' + "[" * 200 + '"\n# ' + "{" * 200 + "\nb = '''" + "[" * 200 + "'''\n", "utf-8")
    assert load_toml(path)[0]["a"] == "[" * 200


# -- YAML ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BILLION_LAUGHS, "prompts.yml:6: YAML aliases expand to more than the YAML alias expansion limit"),
        (
            "prompts:\n  - task: a\n    content: x\n    task: b\n",
            "prompts.yml:4: duplicate key 'task' (first at line 2); a key may appear once",
        ),
        ("a: &a [*a]\n", "prompts.yml:1: a YAML alias that contains itself"),
        ("x: " + "[" * 100 + "]" * 100 + "\n", "prompts.yml:1: nested deeper than the depth limit of 64 levels"),
        ("x: " + "[" * 5000 + "]" * 5000 + "\n", "prompts.yml:1: nested deeper than the depth limit of 64 levels"),
    ],
    ids=["billion-laughs", "duplicate", "recursive", "deep", "very-deep"],
)
def test_yaml_bombs_are_refused_naming_the_limit(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_yaml(text, "prompts.yml")
    assert str(info.value).startswith(message)


def test_yaml_aliases_within_the_limit_still_work() -> None:
    data, node = load_yaml("base: &b {task: t}\nprompts: [*b, *b]\n", "prompts.yml")
    assert data["prompts"] == [{"task": "t"}, {"task": "t"}]
    assert node is not None


def test_a_prompts_file_is_parsed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    from pytest_promptsuite.prompts.prompts_yml import read_prompts

    calls: list[int] = []
    compose = yaml.SafeLoader.get_single_node

    def counted(self: yaml.SafeLoader) -> yaml.Node | None:
        calls.append(1)
        return compose(self)

    monkeypatch.setattr(yaml.SafeLoader, "get_single_node", counted)
    monkeypatch.setattr(yaml, "safe_load", None)  # a second parse through safe_load would fail loudly
    path = tmp_path / "prompts.yml"
    path.write_text("prompts:\n  - task: a\n    content: x\n", encoding="utf-8")
    [(entry, where)] = read_prompts(path)
    assert (entry["task"], where, calls) == ("a", f"{path}:2", [1])
