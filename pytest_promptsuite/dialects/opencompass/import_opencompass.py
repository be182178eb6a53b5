"""``promptsuite import opencompass``: each dataset of a config as a suite, with notes on what is left behind."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_promptsuite.dialects.opencompass.data import DataRows
from pytest_promptsuite.dialects.opencompass.data import case_files
from pytest_promptsuite.dialects.opencompass.execute import Ref
from pytest_promptsuite.dialects.opencompass.execute import plain
from pytest_promptsuite.dialects.opencompass.execute import run_config
from pytest_promptsuite.dialects.opencompass.model_config import ModelImport
from pytest_promptsuite.dialects.opencompass.model_config import import_model
from pytest_promptsuite.dialects.opencompass.multiturn import INFER_MODES
from pytest_promptsuite.dialects.opencompass.retrievers import RETRIEVERS
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.imported_suite import ImportedSuite
from pytest_promptsuite.formats.imported_suite import ImportResult
from pytest_promptsuite.formats.imported_suite import write_import
from pytest_promptsuite.formats.jsonio import encode


#: Retrievers we have no twin of that choose examples by similarity: imported as a Topk.
_SIMILARITY = {"MDLRetriever", "DPPRetriever", "VotekRetriever"}
_GEN = {"GenInferencer", "ChatInferencer"}
_PARAMS = {"max_out_len": "max_tokens", "stopping_criteria": "stop"}


def _type_name(spec: Any) -> str:
    kind = spec.get("type") if isinstance(spec, Mapping) else None
    return kind.name if isinstance(kind, Ref) else str(kind) if kind is not None else ""


def _template(spec: Any, key: str, notes: list[str]) -> dict[str, Any] | None:
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        raise ConfigError(f"infer_cfg.{key}: expected dict(type=PromptTemplate, template=...)")
    kind = _type_name(spec) or "PromptTemplate"
    if kind == "RawPromptTemplate":
        return _raw_messages(spec, key, notes)
    if kind not in ("PromptTemplate", "MultiTurnPromptTemplate", "MMPromptTemplate"):
        raise ConfigError(f"infer_cfg.{key}: the template type {kind} is not supported")
    return _template_table(spec, kind, key, notes)


def _template_table(spec: Mapping[str, Any], kind: str, key: str, notes: list[str]) -> dict[str, Any]:
    """Return a ``PromptTemplate`` (or multi-turn, multimodal one) as TOML keys; label keys become strings."""
    table: dict[str, Any] = plain({k: v for k, v in spec.items() if k != "type"}, f"infer_cfg.{key}")
    if kind != "PromptTemplate":
        table["type"] = kind
    template = table.get("template")
    if isinstance(spec.get("template"), Mapping) and any(not isinstance(k, str) for k in spec["template"]):
        notes.append(f"{key}: label keys {list(spec['template'])!r} written as strings")
    if template is None:
        raise ConfigError(f"infer_cfg.{key}: no template")
    return table


_RAW_ROLES = {"system": "SYSTEM", "user": "HUMAN", "assistant": "BOT"}


def _raw_messages(spec: Mapping[str, Any], key: str, notes: list[str]) -> dict[str, Any]:
    """Convert a ``RawPromptTemplate`` (OpenAI messages) to a dialogue template: leading system messages and
    the ICE token in ``begin``, the turns in ``round``, a final empty ``BOT`` turn to generate."""
    messages = plain(spec.get("messages") or [], f"infer_cfg.{key}.messages")
    if not isinstance(messages, list):
        raise ConfigError(f"infer_cfg.{key}.messages: expected a list of messages")
    begin, turns = _raw_turns(messages, key)
    if not turns or turns[-1]["role"] != "BOT":
        turns.append({"role": "BOT", "prompt": ""})
    template: dict[str, Any] = {"round": turns}
    if begin:
        template["begin"] = begin
    notes.append(f"{key}: RawPromptTemplate messages imported as a dialogue template")
    table: dict[str, Any] = {"template": template}
    if any(isinstance(m, str) for m in messages):
        table["ice_token"] = spec.get("ice_token", "</E>")
    return table


def _raw_turns(messages: list[Any], key: str) -> tuple[list[Any], list[dict[str, Any]]]:
    """Return a ``RawPromptTemplate``'s ``begin`` (the ICE token and system messages before any turn) and turns."""
    begin: list[Any] = []
    turns: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        if isinstance(message, str) and not turns:
            begin.append(message)
        elif isinstance(message, dict) and message.get("role") in _RAW_ROLES and "expand_column" not in message:
            item = {"role": _RAW_ROLES[message["role"]], "prompt": str(message.get("content", ""))}
            if item["role"] == "SYSTEM" and not turns:
                begin.append({**item, "fallback_role": "HUMAN"})
            else:
                turns.append(item)
        else:
            raise ConfigError(
                f"infer_cfg.{key}.messages[{i}]: {message!r} is not supported "
                "(expand_column, or an ICE token after a turn)"
            )
    return begin, turns


def _settings(spec: Any, key: str) -> Mapping[str, Any]:
    """Return a part's settings but its ``type`` (``dict(type=..., ...)``, or nothing)."""
    if spec is not None and not isinstance(spec, Mapping):
        raise ConfigError(f"infer_cfg.{key}: expected dict(type=..., ...), not {type(spec).__name__}")
    return {k: v for k, v in (spec or {}).items() if k != "type"}


def _retriever(spec: Any, notes: list[str]) -> dict[str, Any]:
    kind = _type_name(spec) or "ZeroRetriever"
    params = plain(_settings(spec, "retriever"), "infer_cfg.retriever")
    if kind in _SIMILARITY:
        notes.append(
            f"retriever: {kind} is not supported (it ranks candidates with a scoring model); imported "
            f"as TopkRetriever with ice_num {params.get('ice_num', 1)}: the most similar train rows"
        )
        kind = "TopkRetriever"
    if kind not in RETRIEVERS:
        raise ConfigError(f"infer_cfg.retriever: {kind} is not supported (supported: {', '.join(RETRIEVERS)})")
    allowed = RETRIEVERS[kind][1]
    dropped = sorted(set(params) - allowed)
    if dropped:
        notes.append(f"retriever: {kind} settings not carried over: {', '.join(dropped)}")
    return {"type": kind, **{k: v for k, v in params.items() if k in allowed}}


def _inferencer(spec: Any, notes: list[str]) -> tuple[str, dict[str, Any]]:
    """Return the suite mode (``gen`` or ``ppl``) and the model params the inferencer sets."""
    kind = _type_name(spec) or "GenInferencer"
    settings = _settings(spec, "inferencer")
    params: dict[str, Any] = {}
    for key, value in settings.items():
        _inferencer_setting(kind, key, value, params, notes)
    if kind == "PPLInferencer":
        return "ppl", {}
    if kind not in _GEN:
        notes.append(f"inferencer: {kind} is not supported; the suite generates (as GenInferencer)")
    return "gen", params


def _inferencer_setting(kind: str, key: str, value: Any, params: dict[str, Any], notes: list[str]) -> None:
    """Carry one inferencer setting into the model ``params``, or note that it is not carried over."""
    if key in _PARAMS and value is not None:
        params[_PARAMS[key]] = plain(value, f"infer_cfg.inferencer.{key}")
    elif key == "generation_kwargs" and isinstance(value, Mapping):
        params.update(plain(value, "infer_cfg.inferencer.generation_kwargs"))
    elif key == "infer_mode" and kind == "ChatInferencer" and value in INFER_MODES:
        return  # [template] infer_mode (dataset_suite)
    elif key not in ("batch_size", "save_every", "fix_id_list"):
        notes.append(f"inferencer: {key} not carried over")


def _evaluator_note(dataset: Mapping[str, Any], mode: str, notes: list[str]) -> None:
    eval_cfg = dataset.get("eval_cfg") or {}
    evaluator = _type_name(eval_cfg.get("evaluator")) if isinstance(eval_cfg, Mapping) else ""
    if mode == "ppl":
        notes.append(f"eval_cfg: {evaluator or 'the evaluator'} replaced by the ppl check (predicted label == answer)")
    elif evaluator:
        notes.append(f"eval_cfg: {evaluator} not carried over; add checks (assert) to the cases")
    for key in ("pred_postprocessor", "dataset_postprocessor"):
        if isinstance(eval_cfg, Mapping) and eval_cfg.get(key):
            notes.append(f"eval_cfg.{key}: {_type_name(eval_cfg[key])} not carried over")


def _expanded_column(spec: Any) -> str | None:
    """Return the column a ``RawPromptTemplate`` of nothing but ``[{'expand_column': COLUMN}]`` sends."""
    if not isinstance(spec, Mapping) or _type_name(spec) != "RawPromptTemplate":
        return None
    messages = spec.get("messages")
    if isinstance(messages, list) and len(messages) == 1 and isinstance(messages[0], Mapping):
        column = messages[0].get("expand_column")
        if set(messages[0]) == {"expand_column"} and isinstance(column, str):
            return column
    return None


def _reader(reader: Any, name: str) -> Mapping[str, Any]:
    """Return a dataset's ``reader_cfg``; anything but a dict is refused, as OpenCompass refuses it."""
    if reader is None:
        return {}
    if not isinstance(reader, Mapping):
        comma = isinstance(reader, tuple) and len(reader) == 1 and isinstance(reader[0], Mapping)
        raise ConfigError(
            f"dataset {name}: reader_cfg is a {type(reader).__name__}, not dict(input_columns=..., output_column=...)"
            + (" (the comma after the dict makes it a tuple)" if comma else "")
        )
    return reader


def dataset_suite(dataset: Mapping[str, Any], model: ModelImport | None, data: DataRows | None) -> ImportedSuite:
    """Build one dataset of a config as a suite (its cases from ``data``, else one example case)."""
    name = str(dataset.get("abbr") or _type_name(dataset) or "dataset")
    notes: list[str] = []
    infer = dataset.get("infer_cfg")
    if not isinstance(infer, Mapping):
        raise ConfigError(f"dataset {name}: no infer_cfg")
    reader = _reader(dataset.get("reader_cfg"), name)
    expanded = _expanded_column(infer.get("prompt_template"))
    chat = _type_name(infer.get("inferencer")) == "ChatInferencer"
    template = _templates(infer, name, expanded, chat, notes)
    chat_column = _chat_column(template, reader, expanded, chat, notes)
    template["retriever"] = _retriever(infer.get("retriever"), notes)
    output_column = reader.get("output_column") if isinstance(reader, Mapping) else None
    template["output_column"] = str(output_column or "answer")
    template["semantics"] = "opencompass"  # a {name} that is no column stays as written, as OpenCompass leaves it
    mode, params = _inferencer(infer.get("inferencer"), notes)
    if mode == "ppl":
        template["inferencer"] = "ppl"
    if chat and _settings(infer.get("inferencer"), "inferencer").get("infer_mode") in INFER_MODES:
        template["infer_mode"] = _settings(infer.get("inferencer"), "inferencer")["infer_mode"]
    _evaluator_note(dataset, mode, notes)
    model_table = _model_table(model, mode, params, notes)
    files, suite_table, data_notes = case_files(name, template, reader, data, chat=chat_column)
    notes.extend(data_notes)
    config = {"suite": suite_table, "model": model_table, "template": template}
    header = (
        f"Imported by `promptsuite import opencompass` from dataset {name}.\n"
        "See CASES.md for the columns each case carries."
    )
    return ImportedSuite(name=name, config=config, files=files, notes=notes, header=header)


def _templates(
    infer: Mapping[str, Any], name: str, expanded: str | None, chat: bool, notes: list[str]
) -> dict[str, Any]:
    """Return the ``[template]`` keys of a dataset's ``prompt_template`` and ``ice_template`` (none when the
    prompt template sends a column's messages, ``expanded``)."""
    template: dict[str, Any] = {}
    for key in ("prompt_template", "ice_template"):
        table = _template(infer.get(key), key, notes) if expanded is None else None
        if table is not None:
            template[key] = table
    if chat and "prompt_template" not in template and template:
        # OpenCompass's ChatInferencer makes no in-context examples: with no prompt_template it sends
        # the input column as the user's turn, and the ice_template is never rendered
        del template["ice_template"]
        notes.append("ice_template: not carried over (ChatInferencer sends the input column as it is)")
    elif not template and expanded is None:
        raise ConfigError(f"dataset {name}: infer_cfg has neither prompt_template nor ice_template")
    return template


def _chat_column(
    template: dict[str, Any], reader: Mapping[str, Any], expanded: str | None, chat: bool, notes: list[str]
) -> str | None:
    """Return the column whose messages are each case's turns (ChatInferencer's ``dialogue``, or the column a
    ``RawPromptTemplate`` expands), the templates changed to match; None when the templates make the request."""
    chat_column = "dialogue" if chat and "dialogue" in (reader.get("input_columns") or ()) else None
    if chat_column is not None:  # ChatInferencer sends the dialogue column itself, a turn at a time
        notes.append("the dialogue column is each case's turns (ChatInferencer); the templates are not used")
        template.clear()
    elif expanded is not None:  # the column's messages are the request, as they are
        chat_column = expanded
        notes.append(
            f"prompt_template: RawPromptTemplate sends the {expanded!r} column's messages: each case's turns, "
            "the last one asked"
        )
        template["infer_mode"] = "last"
    return chat_column


def _model_table(model: ModelImport | None, mode: str, params: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """Return the suite's ``[model]``: the model config's (else the fake model), scored on ``/v1/completions``
    in the ppl mode, with the inferencer's params."""
    model_table: dict[str, Any] = {"spec": "fake"}
    if model is not None:
        model_table.update(model.table)
        notes.extend(model.notes)
    if mode == "ppl" and model_table.get("endpoint") != "chat":
        model_table["endpoint"] = "completions"  # scored as one string: /v1/completions with logprobs
    if params:
        model_table["params"] = {**model_table.get("params", {}), **params}
    return model_table


def _datasets(names: Mapping[str, Any], path: Path) -> list[Mapping[str, Any]]:
    found: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    for key, value in names.items():
        if not key.endswith("datasets") or not isinstance(value, list):
            continue
        for item in value:
            if isinstance(item, Mapping) and "infer_cfg" in item:
                abbr = str(item.get("abbr") or len(found))
                if abbr not in seen:
                    seen.add(abbr)
                    found.append(item)
    if not found:
        raise ConfigError(f"{path}: the config defines no dataset (a '*_datasets' list of dicts with infer_cfg)")
    return found


def opencompass_suites(
    config: Path,
    *,
    model: Path | None = None,
    data: Path | None = None,
    train: Path | None = None,
    root: Path | None = None,
) -> list[ImportedSuite]:
    """Build the suites of an OpenCompass dataset config in memory (nothing written)."""
    where: dict[int, str] = {}
    names = run_config(config, root=root, where=where)
    model_import = import_model(model, root=root) if model is not None else None
    rows = DataRows.load(data, train) if data is not None or train is not None else None
    suites = []
    for dataset in _datasets(names, config):
        try:
            suites.append(dataset_suite(dataset, model_import, rows))
        except ConfigError as exc:  # at the dataset's infer_cfg (or the dataset) where the config built it
            place = where.get(id(dataset.get("infer_cfg")), where.get(id(dataset), str(config)))
            raise ConfigError(f"{place}: {exc}") from None
    return _shared(suites, config.stem)


def _shared(suites: list[ImportedSuite], name: str) -> list[ImportedSuite]:
    """Merge subsets that share every setting and file but their cases into one suite, a slice each."""
    if len(suites) < 2:
        return suites

    def same(suite: ImportedSuite) -> str:
        files = {k: v for k, v in suite.files.items() if k not in ("cases.jsonl", "CASES.md")}
        return encode([suite.config, files], scrub=False)

    if len({same(s) for s in suites}) != 1:
        return suites
    merged = suites[0]
    merged.files["cases.jsonl"] = "".join(s.files["cases.jsonl"] for s in suites)
    merged.notes.insert(
        0,
        f"the {len(suites)} datasets ({', '.join(s.name for s in suites)}) share one template: one suite, a slice each",
    )
    merged.name = name
    merged.header = merged.header.replace(f"dataset {suites[0].name}", f"the datasets of {name}")
    return [merged]


def import_opencompass(
    config: Path,
    *,
    out: Path,
    model: Path | None = None,
    data: Path | None = None,
    train: Path | None = None,
    root: Path | None = None,
) -> ImportResult:
    """Import ``config`` into ``out`` (one folder per dataset), all or nothing."""
    suites = opencompass_suites(config, model=model, data=data, train=train, root=root)
    write_import(out, suites)
    return ImportResult(out, suites)
