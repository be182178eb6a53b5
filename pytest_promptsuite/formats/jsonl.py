"""JSON Lines files through ``jsonlines``: read with our strict ``decode`` (every bad line reported,
reading going on), and appended one line a write."""

from __future__ import annotations

import codecs
import io
import os
from collections.abc import Callable
from collections.abc import Iterator
from typing import IO
from typing import Any
from typing import NamedTuple

import jsonlines

from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import decode


class JsonLine(NamedTuple):
    """A non-blank line: its number, its value or problem, its text, and its bytes' span (line end included)."""

    number: int
    value: Any = None
    problem: str | None = None
    text: str = ""
    start: int = 0
    end: int = 0


class _Lines:
    """A binary file's lines for ``jsonlines.Reader`` (split at ``\\n`` only, less the file's BOM), noting each
    line's number, text and bytes, which the reader does not give back with a value."""

    def __init__(self, fp: IO[bytes], strict: bool) -> None:
        self._fp = fp
        self._strict = strict
        self.number = self.start = self.end = 0
        self.text = ""
        self.mark = ""  # a BOM or RS starting the line, which jsonlines.Reader drops

    def __iter__(self) -> Iterator[bytes]:
        for raw in self._fp:
            self.number += 1
            self.start, self.end = self.end, self.end + len(raw)
            self.text = ""
            line = raw  # its line end is JSON whitespace to the reader, and a blank line is skipped by it
            if self.start == 0 and line.startswith(codecs.BOM_UTF8):
                line = line[len(codecs.BOM_UTF8) :]
            self.mark = "\ufeff" if line.startswith(codecs.BOM_UTF8) else "\x1e" if line.startswith(b"\x1e") else ""
            yield line

    def loads(self, text: str | bytes) -> Any:
        """Decode a line, with the mark the reader dropped put back: a BOM only starts the file."""
        assert isinstance(text, str)  # the reader decodes each line's bytes first
        text = self.mark + text.removesuffix("\n").removesuffix("\r")
        self.text = text
        return decode(text, strict=self._strict)


def read_jsonl(source: bytes | IO[bytes], *, strict: bool = True) -> Iterator[JsonLine]:
    """Yield every non-blank line of a JSON Lines file (its bytes, or the file open in binary); a bad
    line gives its ``problem`` and reading goes on. ``strict``: see :func:`decode`."""
    lines = _Lines(io.BytesIO(source) if isinstance(source, bytes) else source, strict)
    reader = jsonlines.Reader(lines, loads=lines.loads)
    while True:
        try:
            value = reader.read(allow_none=True, skip_empty=True)
        except EOFError:
            return
        except jsonlines.InvalidLineError as exc:
            assert exc.__cause__ is not None
            yield JsonLine(exc.lineno, None, line_problem(exc.__cause__), lines.text, lines.start, lines.end)
            continue
        yield JsonLine(lines.number, value, None, lines.text, lines.start, lines.end)


def line_problem(exc: BaseException) -> str:
    """Return what is wrong with a line that did not decode (a JsonError or UnicodeDecodeError)."""
    if isinstance(exc, UnicodeDecodeError):
        return f"not valid UTF-8 (byte 0x{exc.object[exc.start]:02x} at column {exc.start + 1}); save the file as UTF-8"
    assert isinstance(exc, JsonError), exc
    prefix = "" if exc.message.startswith(("nested", "duplicate")) else "invalid JSON: "
    return prefix + exc.describe(single_line=True)


class _OneWrite(io.StringIO):
    """A line ``jsonlines.Writer`` writes, put in one ``os.write`` at its flush (appends never interleave)."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def flush(self) -> None:
        """Write the line held in one ``os.write``."""
        data = self.getvalue().encode("utf-8")
        self.seek(0)
        self.truncate()
        if data:
            os.write(self._fd, data)


def appender(fd: int, dumps: Callable[[Any], str]) -> jsonlines.Writer:
    """Return a writer appending each value to ``fd`` (opened ``O_APPEND``) as one line in one write."""
    return jsonlines.Writer(_OneWrite(fd), dumps=dumps, flush=True)
