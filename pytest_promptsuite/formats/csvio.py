"""Reading CSV files (promptfoo test files, OpenCompass data rows), bounded, each problem a ``path:line``."""

from __future__ import annotations

import codecs
import csv
import io
from typing import Any

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.safety.limits import CSV_FIELD


#: One data row: the line it starts on and its fields by header name.
CsvRow = tuple[int, dict[str, str]]


def read_csv(data: bytes, where: str) -> list[CsvRow]:
    """Read the data rows of a CSV file's bytes (blank rows skipped); ``where`` names the file.

    A row maps the header's names to strings. A file that is not UTF-8, has no header, repeats a header
    name, has a row longer than its header or a field larger than :data:`~.limits.CSV_FIELD` is a ConfigError.
    """
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{where}:{line}: not valid UTF-8 (byte 0x{data[exc.start]:02x}); save the file as UTF-8"
        ) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    previous = csv.field_size_limit(int(CSV_FIELD.value))
    try:
        return _rows(reader, where)
    except csv.Error as exc:
        raise ConfigError(f"{where}:{reader.line_num}: {exc} (a field is limited to {CSV_FIELD})") from None
    finally:
        csv.field_size_limit(previous)


def _header(reader: Any, where: str) -> list[str]:
    """Read the header row: the column names, each once."""
    header = next(reader, None)
    if not header or not any(name.strip() for name in header):
        raise ConfigError(f"{where}:1: no header row (the first row names the columns)")
    names = [name.strip() for name in header]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise ConfigError(f"{where}:1: the column {name!r} appears twice in the header")
    return names


def _rows(reader: Any, where: str) -> list[CsvRow]:
    names = _header(reader, where)
    rows: list[CsvRow] = []
    start = reader.line_num + 1
    for record in reader:
        if any(field.strip() for field in record):
            if len(record) > len(names):
                raise ConfigError(f"{where}:{start}: {len(record)} fields, but the header names {len(names)}")
            rows.append((start, {name: record[i] if i < len(record) else "" for i, name in enumerate(names)}))
        start = reader.line_num + 1
    return rows
