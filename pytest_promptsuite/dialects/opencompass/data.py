"""Cases of an imported OpenCompass dataset: the rows of ``--data`` mapped through the reader config's
columns (input columns in ``vars``, the output column as the string ``answer``), or one example case."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_promptsuite.dialects.opencompass.template import DIALOGUE_KEYS
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.csvio import read_csv
from pytest_promptsuite.formats.imported_suite import jsonl
from pytest_promptsuite.formats.jsonl import read_jsonl
from pytest_promptsuite.prompts.fields import value_reads
from pytest_promptsuite.safety.limits import IMPORT_EXAMPLES


#: One row and where it is (``path:line``).
Row = tuple[str, dict[str, Any]]


def _read_file(path: Path) -> list[Row]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the data: {exc.strerror}") from None
    if path.suffix.lower() == ".csv":
        return [(f"{path}:{line}", dict(row)) for line, row in read_csv(data, str(path))]
    rows: list[Row] = []
    for line in read_jsonl(data):
        if line.problem is not None:
            raise ConfigError(f"{path}:{line.number}: {line.problem}")
        if not isinstance(line.value, dict):
            raise ConfigError(f"{path}:{line.number}: a data row must be a JSON object")
        rows.append((f"{path}:{line.number}", line.value))
    return rows


def _folder_split(folder: Path, split: str) -> Path | None:
    """Find the file of ``split`` in a dataset folder (``test.jsonl``, ``data/test-00000.csv``, ...)."""
    whole = [f"{inner}{split}.{kind}" for inner in ("", "data/") for kind in ("jsonl", "csv")]
    shards = [f"{inner}{split}-*.{kind}" for kind in ("jsonl", "csv") for inner in ("", "data/")]
    for pattern in (*whole, *shards):
        found = sorted(f for f in folder.glob(pattern) if f.is_file())  # never a FIFO that blocks the read
        if found:
            return found[0]
    if (folder / split).is_dir() and list((folder / split).glob("*.arrow")):
        raise ConfigError(
            f"{folder / split}: a dataset saved with save_to_disk (Arrow files); export the split with "
            f"ds['{split}'].to_json('{split}.jsonl') and give that file (reading Arrow needs pyarrow)"
        )
    return None


@dataclass
class DataRows:
    """The rows of ``--data`` (and ``--train``), by split."""

    source: Path | None
    test: list[Row] | None
    train: list[Row] | None

    @classmethod
    def load(cls, data: Path | None, train: Path | None) -> DataRows:
        """Read ``data`` (a file, or a dataset folder holding a test and a train split) and ``train``."""
        test_rows: list[Row] | None = None
        train_rows = _read_file(train) if train is not None else None
        if data is not None and data.is_dir():
            test_rows = _read_file(_test_split(data))
            if train_rows is None:
                found = _folder_split(data, "train") or _folder_split(data, "dev")
                train_rows = _read_file(found) if found is not None else None
        elif data is not None:
            test_rows = _read_file(data)
        return cls(data, test_rows, train_rows)


def _test_split(folder: Path) -> Path:
    """Find the test split of a dataset folder: ``test``, else ``validation``, ``val`` or ``dev``."""
    for test_split in ("test", "validation", "val", "dev"):
        found = _folder_split(folder, test_split)
        if found is not None:
            return found
    raise ConfigError(f"{folder}: no test split (test/validation/val/dev .jsonl or .csv) in the folder")


def labels_of(template: Mapping[str, Any]) -> list[str]:
    """Return the label keys of a suite's template (a label map), or ``[]``."""
    for key in ("prompt_template", "ice_template"):
        table = template.get(key)
        inner = table.get("template") if isinstance(table, Mapping) else None
        if isinstance(inner, Mapping) and not set(inner) <= DIALOGUE_KEYS:
            return [str(k) for k in inner]
    return []


def _reads(template: Mapping[str, Any]) -> list[str]:
    """Return the ``{name}`` fields the prompt and ICE templates of a suite's template read."""
    values = [t.get("template") for t in (template.get(k) for k in ("prompt_template", "ice_template")) if t]
    return list(dict.fromkeys(read.name for read in value_reads(values)))


def _count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"infer_cfg.retriever: {what} is {value!r}; it is a whole number, 0 or more")
    return value


def _examples_needed(retriever: Mapping[str, Any]) -> int:
    """Count the train rows the retriever reads (the highest ``fix_id_list`` index + 1, or ``ice_num``)."""
    if retriever.get("type") == "FixKRetriever":
        ids = retriever.get("fix_id_list") or []
        if not isinstance(ids, list):
            raise ConfigError(f"infer_cfg.retriever: fix_id_list is {ids!r}; it is a list of row indices")
        return max((_count(i, "an index of fix_id_list") for i in ids), default=-1) + 1
    if retriever.get("type") == "ZeroRetriever":
        return 0
    return _count(retriever.get("ice_num", 1), "ice_num")


def _case(
    name: str,
    index: int,
    row: Mapping[str, Any],
    columns: Sequence[str],
    output: str,
    labels: Sequence[str],
    where: str,
    read: Sequence[str] = (),
) -> dict[str, Any]:
    missing = [c for c in columns if c not in row]
    if missing:
        raise ConfigError(f"{where}: no column {missing[0]!r} (the reader's input_columns: {', '.join(columns)})")
    variables = _case_vars(row, columns, output, read)
    first = row.get("input", row[columns[0]] if columns else "")
    case: dict[str, Any] = {
        "case_id": f"{name}-{index}",
        "input": first if isinstance(first, str) else str(first),
        "slice": name,
    }
    answer = _answer(row, output, labels, where)
    if answer is not None:
        case["answer"] = answer
        if output != "answer":
            variables[output] = answer
    if variables:
        case["vars"] = variables
    return case


def _case_vars(row: Mapping[str, Any], columns: Sequence[str], output: str, read: Sequence[str]) -> dict[str, Any]:
    """Return a case's vars: its input columns but ``input``, and the other columns the templates read
    (OpenCompass fills a template from the whole row)."""
    variables = {c: row[c] for c in columns if c != "input"}
    variables.update({c: row[c] for c in read if c in row and c not in variables and c not in ("input", output)})
    return variables


def _answer(row: Mapping[str, Any], output: str, labels: Sequence[str], where: str) -> str | None:
    """Return a row's output column as its case's answer (one of ``labels``, which then needs one); None without."""
    if output in row and row[output] is not None:
        answer = row[output] if isinstance(row[output], str) else str(row[output])
        if labels and answer not in labels:
            raise ConfigError(
                f"{where}: the answer {answer!r} is not a label of the template (labels: {', '.join(labels)})"
            )
        return answer
    if labels:
        raise ConfigError(f"{where}: no column {output!r} (the output column: a ppl case needs its label)")
    return None


def _example_row(columns: Sequence[str], output: str, labels: Sequence[str], i: int | None) -> dict[str, Any]:
    suffix = "" if i is None else f" {i}"
    row: dict[str, Any] = {c: f"<{c}{suffix}>" for c in columns}
    row[output] = labels[(i or 0) % len(labels)] if labels else f"<{output}{suffix}>"
    return row


def _schema(name: str, columns: Sequence[str], output: str, labels: Sequence[str], example: bool) -> str:
    first = columns[0] if columns else "input"
    lines = [
        f"# Cases of {name}",
        "",
        "Each line of `cases.jsonl` is one case:",
        "",
        "| field | from the dataset |",
        "|---|---|",
        "| `case_id` | any unique id |",
        f"| `slice` | e.g. `{name}` |",
    ]
    if "input" in columns:
        lines.append("| `input` | the `input` column |")
    else:
        lines.append(f"| `input` | any text; the templates do not read it (the first column, `{first}`) |")
    lines.extend(f"| `vars.{c}` | the input column `{c}` |" for c in columns if c != "input")
    one_of = f": one of {', '.join(labels)}" if labels else ""
    lines.append(f"| `answer` | the output column `{output}`, as a string{one_of} |")
    if output != "answer":
        lines.append(f"| `vars.{output}` | the same as `answer` (the templates read `{{{output}}}`) |")
    if example:
        lines += [
            "",
            "The `cases.jsonl` written holds one example case with placeholder values; replace it with",
            "your data or import again with `--data FILE`.",
        ]
    return "\n".join(lines) + "\n"


def _cases(
    name: str,
    template: Mapping[str, Any],
    data: DataRows | None,
    columns: Sequence[str],
    output: str,
    labels: Sequence[str],
    notes: list[str],
) -> list[dict[str, Any]]:
    """Return a case per ``--data`` row, else one example case with placeholders."""
    if data is not None and data.test is not None:
        read = _reads(template)
        return [
            _case(name, i, row, columns, output, labels, where, read) for i, (where, row) in enumerate(data.test, 1)
        ]
    example = _case(name, 1, _example_row(columns, output, labels, None), columns, output, labels, name)
    notes.append("cases.jsonl holds one example case with placeholders (--data FILE maps your rows)")
    return [example]


def _turns(case: dict[str, Any], chat: str, output: str, where: str) -> dict[str, Any]:
    """Make a case multi-turn from its ``chat`` column (OpenAI messages, as ChatInferencer reads it): the
    user messages its input, the assistant messages its answers."""
    variables = dict(case.get("vars") or {})
    messages = variables.pop(chat, None)
    variables.pop(output, None)
    said = _said(messages, chat, where)
    case["input"] = [text if isinstance(text, str) else str(text) for role, text in said if role == "user"]
    answers = [text if isinstance(text, str) else str(text) for role, text in said if role == "assistant"]
    case.pop("answer", None)  # the output column is the evaluator's; the chat's own answers are the turns'
    if answers:
        case["answer"] = answers
    if variables:
        case["vars"] = variables
    else:
        case.pop("vars", None)
    return case


def _said(messages: Any, chat: str, where: str) -> list[tuple[str, Any]]:
    """Return the (role, content) of a chat column's messages: user and assistant in turn, the user first."""
    if isinstance(messages, str):  # the example case's placeholder
        messages = [{"role": "user", "content": messages}]
    if not isinstance(messages, list) or not all(isinstance(m, Mapping) and "role" in m for m in messages):
        raise ConfigError(f"{where}: the column {chat!r} is not a list of messages ({{role, content}})")
    said = [(str(m["role"]), m.get("content", "")) for m in messages]
    roles = [role for role, _ in said]
    if any(role != ("user", "assistant")[i % 2] for i, role in enumerate(roles)):
        raise ConfigError(
            f"{where}: the column {chat!r} has the roles {', '.join(roles)}; a chat imported as turns is user and "
            "assistant messages in turn, starting with the user"
        )
    return said


def case_files(
    name: str, template: Mapping[str, Any], reader: Any, data: DataRows | None, *, chat: str | None = None
) -> tuple[dict[str, str], dict[str, Any], list[str]]:
    """Build the suite's ``cases.jsonl`` (and ``train.jsonl``, ``CASES.md``), its ``[suite]`` table and notes;
    with ``chat``, that column's messages are each case's turns."""
    columns = _input_columns(reader if isinstance(reader, Mapping) else {})
    output = str(template.get("output_column") or "answer")
    labels = labels_of(template)
    notes: list[str] = []
    cases = _cases(name, template, data, columns, output, labels, notes)
    if chat is not None:
        places = [where for where, _ in data.test] if data is not None and data.test is not None else [name]
        cases = [_turns(case, chat, output, where) for case, where in zip(cases, places, strict=True)]
    files = {"cases.jsonl": jsonl(cases), "CASES.md": _schema(name, columns, output, labels, data is None)}
    if chat is not None:
        files["CASES.md"] += (
            f"\nChatInferencer reads the `{chat}` column as the chat: its user messages are the case's `input`\n"
            "(a list of turns), its assistant messages the `answer` list.\n"
        )
    suite: dict[str, Any] = {"cases": ["cases.jsonl"]}
    needed = _examples_needed(template.get("retriever") or {})
    if needed or "ice_template" in template:
        files["train.jsonl"] = jsonl(_train_rows(data, needed, columns, output, labels, notes))
        suite["train"] = "train.jsonl"
    return files, suite, notes


def _input_columns(reader: Mapping[str, Any]) -> list[str]:
    """Return the reader's ``input_columns`` (one name is a list of one, as OpenCompass takes it)."""
    given = reader.get("input_columns") or []
    if isinstance(given, str):  # OpenCompass takes one column name as a list of one
        given = [given]
    if not isinstance(given, (list, tuple)):
        raise ConfigError(f"reader_cfg.input_columns is {given!r}; it is a list of column names")
    return [str(c) for c in given]


def _train_rows(
    data: DataRows | None, needed: int, columns: Sequence[str], output: str, labels: Sequence[str], notes: list[str]
) -> list[Any]:
    """Return the rows of ``train.jsonl``: ``--train``'s, else ``needed`` placeholder examples (at least one)."""
    if data is not None and data.train is not None:
        return [row for _, row in data.train]
    if needed > IMPORT_EXAMPLES.value:  # counted before a row is built
        raise ConfigError(
            f"infer_cfg.retriever: {needed:,} in-context examples would be written as placeholders, "
            f"past {IMPORT_EXAMPLES} (give the real examples with --train FILE)"
        )
    train = [_example_row(columns, output, labels, i) for i in range(max(needed, 1))]
    notes.append(f"train.jsonl holds {len(train)} placeholder examples (--train FILE gives the real ones)")
    return train
