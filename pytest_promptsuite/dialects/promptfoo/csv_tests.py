"""promptfoo's CSV test files: a row into a test as promptfoo's ``testCaseFromCsvRow`` reads it, and its
``__expected`` cells' assertion strings as its ``assertionFromString`` reads them."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from pytest_promptsuite.errors import ConfigError


def csv_test(row: Mapping[str, str], where: str, index: int) -> dict[str, Any]:
    """Convert row ``index`` (from 0) of a CSV test file to a promptfoo test as promptfoo's
    ``testCaseFromCsvRow`` does: columns are vars, ``__expected*`` asserts, the other ``__`` columns
    options, description, metric, threshold, metadata and per-assert config; an empty cell is unset."""
    read = _CsvRow(where)
    for raw_column, text in row.items():
        read.cell(raw_column.strip(), text)
    return read.test_of(index)


@dataclass
class _CsvRow:
    """A CSV test file's row as its cells are read: the test so far, and what applies to its asserts."""

    where: str
    test: dict[str, Any] = field(default_factory=lambda: {"vars": {}, "assert": [], "options": {}})
    metadata: dict[str, Any] = field(default_factory=dict)
    configs: dict[int, dict[str, float]] = field(default_factory=dict)
    metric: str | None = None

    def cell(self, column: str, text: str) -> None:
        """Read one cell into the test."""
        if column.startswith("__expected"):
            self.expected(column, text)
        elif column in ("__prefix", "__suffix"):
            self.test["options"][column[2:]] = text
        elif column in ("__description", "__providerOutput"):
            self.test[column[2:]] = text
        elif column == "__metric":
            self.metric = text
        elif column == "__threshold":
            self.threshold(text)
        elif column.startswith("__metadata:"):
            self.metadata_cell(column[len("__metadata:") :], text)
        elif column.startswith("__config:"):
            self.config(column, text)
        else:
            self.test["vars"][column] = text

    def expected(self, column: str, text: str) -> None:
        """Read an ``__expected`` cell: an assertion string."""
        if not text.strip():
            return
        try:
            self.test["assert"].append(assertion_from_string(text.strip()))
        except ConfigError as exc:
            raise ConfigError(f"{self.where}: {column}: {exc}") from None

    def threshold(self, text: str) -> None:
        """Read the ``__threshold`` cell."""
        number = _finite(text)
        if number is not None:
            self.test["threshold"] = number

    def metadata_cell(self, key: str, text: str) -> None:
        """Read a ``__metadata:key`` cell (``key[]``: split on commas not escaped as ``\\,``)."""
        if not text.strip():
            return
        if key.endswith("[]"):
            self.metadata[key[:-2]] = [v.strip().replace("\\,", ",") for v in re.split(r"(?<!\\),", text)]
        else:
            self.metadata[key] = text

    def config(self, column: str, text: str) -> None:
        """Read a ``__config:__expected[N]:threshold`` cell."""
        index_key = _assert_config(column, text, self.where)
        if index_key is not None:
            self.configs.setdefault(index_key[0], {})[index_key[1]] = index_key[2]

    def test_of(self, index: int) -> dict[str, Any]:
        """Return the test, the metric and per-assert config on its asserts (row ``index``, from 0)."""
        test = self.test
        for i, assertion in enumerate(test["assert"]):
            if self.metric is not None:
                assertion["metric"] = self.metric
            for key, value in self.configs.get(i, {}).items():
                assertion[key] = self.metadata[key] = value  # promptfoo sets both
        if self.metadata:
            test["metadata"] = self.metadata
        if not test.get("description"):
            test["description"] = f"Row #{index + 1}"
        return test


def _assert_config(column: str, text: str, where: str) -> tuple[int, str, float] | None:
    """Read a ``__config:__expected[N]:threshold`` cell: (assert index, key, number)."""
    parts = column[len("__config:") :].split(":")
    if len(parts) != 2:
        return None  # promptfoo warns and ignores it
    expected, key = parts
    found = re.fullmatch(r"__expected(\d*)", expected)
    index = (0 if not found.group(1) else int(found.group(1)) - 1) if found else -1
    if index < 0:
        raise ConfigError(f"{where}: {column}: the assert is __expected or __expected<N> (N from 1)")
    if key != "threshold":
        raise ConfigError(f"{where}: {column}: the only config key is threshold")
    number = _finite(text)
    if number is None:
        raise ConfigError(f"{where}: {column}: {text!r} is not a number")
    return index, key, number


_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def _finite(text: str | None) -> float | None:
    """Read a cell as a finite number, None when it is empty or not one (promptfoo: unset)."""
    trimmed = (text or "").strip()
    if not _NUMBER.fullmatch(trimmed):
        return None
    number = float(trimmed)
    return number if math.isfinite(number) else None


#: promptfoo 0.123.1's assertion types (``BaseAssertionTypesSchema``), in its order: the grammar's TYPE.
_TYPES = (
    "agent-rubric answer-relevance bleu classifier contains contains-all contains-any contains-html contains-json "
    "contains-sql contains-xml context-faithfulness context-recall context-relevance conversation-relevance cost "
    "equals factuality finish-reason g-eval gleu guardrails icontains icontains-all icontains-any is-html is-json "
    "is-refusal is-sql is-valid-function-call is-valid-openai-function-call is-valid-openai-tools-call is-xml "
    "javascript latency levenshtein llm-rubric pi meteor model-graded-closedqa model-graded-factuality moderation "
    "perplexity perplexity-score python regex rouge-n ruby similar similar:cosine similar:dot similar:euclidean "
    "starts-with tool-call-f1 skill-used trajectory:goal-success trajectory:tool-args-match trajectory:step-count "
    "trajectory:tool-sequence trajectory:tool-used trace-error-spans trace-span-count trace-span-duration "
    "search-rubric webhook word-count"
).split()
_ASSERTION = re.compile(rf"^(not-)?({'|'.join(map(re.escape, _TYPES))})(?:\((\d+(?:\.\d+)?)\))?(?::([\s\S]*))?$")
#: The types whose assertion string takes a threshold, ``TYPE(N)``; without one it is 0.75 (``similar``: 0.8).
_THRESHOLD_TYPES = frozenset(
    "answer-relevance classifier context-faithfulness context-recall context-relevance cost latency levenshtein "
    "perplexity-score perplexity rouge-n similar starts-with".split()
)
_JS_FILE = re.compile(r"\.(?:js|cjs|mjs|ts|cts|mts|tsx|jsx)$", re.IGNORECASE)


def assertion_from_string(expected: str) -> dict[str, Any]:
    """Read an assertion string (a CSV ``__expected`` cell) as promptfoo's ``assertionFromString`` does:
    ``^(not-)?TYPE(\\(N\\))?(:value)?$``, the legacy ``fn:``/``eval:``/``grade:`` prefixes, ``file://`` code,
    and anything else ``equals``."""
    legacy = _legacy_assertion(expected)
    if legacy is not None:
        return legacy
    found = _ASSERTION.match(expected)
    if found is None:
        return {"type": "equals", "value": expected}
    negated, kind, threshold_text, value = found.groups()
    return _typed_assertion(f"not-{kind}" if negated else kind, kind, threshold_text, value)


def _typed_assertion(full: str, kind: str, threshold_text: str | None, value: str | None) -> dict[str, Any]:
    """Return the assert of ``TYPE(N):value`` (``full``: with its ``not-``) as promptfoo reads it for the type."""
    if kind in ("contains-all", "contains-any", "icontains-all", "icontains-any"):
        return {"type": full, "value": _comma_values(value) if value else value}
    if kind in ("contains-json", "is-json"):
        return {"type": full, "value": value}
    stripped = value.strip() if value else value
    if kind not in _THRESHOLD_TYPES:
        return {"type": full, "value": stripped}
    threshold = _finite(threshold_text)
    default = 0.8 if kind == "similar" else 0.75
    return {"type": full, "value": stripped, "threshold": default if threshold is None else threshold}


def _legacy_assertion(expected: str) -> dict[str, Any] | None:
    """Read the code and grader forms of an assertion string (``javascript:``, ``fn:``, ``eval:``, ``grade:``,
    ``llm-rubric:``, ``python:``, ``file://`` code); None for the others."""
    if expected.startswith(("grade:", "llm-rubric:")):
        return {"type": "llm-rubric", "value": expected[6 if expected.startswith("grade:") else 11 :]}
    return _code_assertion(expected)


def _code_assertion(expected: str) -> dict[str, Any] | None:
    code_file = expected[len("file://") :] if expected.startswith("file://") else None
    if expected.startswith(("javascript:", "fn:", "eval:")) or (code_file and _JS_FILE.search(code_file)):
        cut = next((len(p) for p in ("javascript:", "fn:", "eval:") if expected.startswith(p)), 0)
        return {"type": "javascript", "value": expected[cut:].strip()}
    if expected.startswith("python:") or (code_file and (code_file.endswith(".py") or ".py:" in code_file)):
        return {"type": "python", "value": expected[7:].strip()}
    return None


def _comma_values(text: str) -> list[str]:
    """Split a ``contains-any`` value on commas as promptfoo does: a ``"quoted, field"`` keeps its commas."""
    values: list[str] = []
    i = 0
    while i < len(text):
        while i < len(text) and (text[i].isspace() or text[i] == ","):
            i += 1
        if i >= len(text):
            break
        if text[i] != '"':
            end = text.find(",", i)
            end = len(text) if end < 0 else end
            values.append(text[i:end].strip())
            i = end
            continue
        quoted, i = _quoted_field(text, i + 1)
        values.append(quoted)
        while i < len(text) and text[i].isspace():
            i += 1
    return values


def _quoted_field(text: str, i: int) -> tuple[str, int]:
    """Read a ``"quoted, field"`` from just after its opening quote (``\\"`` and ``""`` are a quote, ``\\\\``
    a backslash); return it and where it ends."""
    quoted = ""
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in '"\\':
            quoted, i = quoted + text[i + 1], i + 2
        elif text[i] == '"' and i + 1 < len(text) and text[i + 1] == '"':
            quoted, i = quoted + '"', i + 2
        elif text[i] == '"':
            return quoted, i + 1
        else:
            quoted, i = quoted + text[i], i + 1
    raise ConfigError(f"unterminated quoted field in {text!r}")
