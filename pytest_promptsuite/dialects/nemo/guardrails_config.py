"""A NeMo Guardrails config folder (``[template] nemo_config``) and NeMo's built-in prompt library,
read and joined as NeMo reads them (from the installed ``nemoguardrails``, never imported)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from importlib import metadata
from pathlib import Path
from typing import Any

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.prompts.prompts_yml import RawPrompt
from pytest_promptsuite.prompts.prompts_yml import prompts_in
from pytest_promptsuite.prompts.prompts_yml import read_yaml_file


_LAST_WINS = ("sample_conversation", "prompting_mode", "lowest_temperature", "colang_version")


@dataclass(frozen=True)
class NemoModel:
    """One entry of ``models``: its ``type`` (``main`` or a task), ``engine`` and ``model``."""

    type: str
    engine: str
    model: str | None = None

    @property
    def name(self) -> str:
        """Give what NeMo matches prompts' ``models`` against: ``engine/model``, or ``engine``."""
        return f"{self.engine}/{self.model}" if self.model else self.engine


@dataclass(frozen=True)
class NemoConfig:
    """What NeMo's prompt rendering reads from a config: its own prompts (after the built-in
    library's), the general instructions, the sample conversation, models and modes."""

    folder: Path | None
    prompts: tuple[RawPrompt, ...] = ()
    instructions: tuple[Mapping[str, Any], ...] = ()
    sample_conversation: str = ""
    models: tuple[NemoModel, ...] = ()
    prompting_mode: str | None = None
    lowest_temperature: float | None = None
    colang_version: str = "1.0"
    defaults: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def general_instructions(self) -> str:
        """Give the content of the first ``general`` instruction (NeMo's ``general_instructions``)."""
        instructions = self.instructions or tuple(self.defaults.get("instructions") or ())
        for instruction in instructions:
            if instruction.get("type") == "general":
                return str(instruction.get("content", ""))
        return ""

    @property
    def sample(self) -> str:
        """Give the sample conversation (NeMo's default when the config sets none)."""
        return self.sample_conversation or str(self.defaults.get("sample_conversation") or "")

    def model_for(self, task: str) -> str:
        """Give NeMo's model name for ``task``: the model of that type, else the ``main`` one, as
        ``engine/model``; ``unknown`` when the config lists no models."""
        if not self.models:
            return "unknown"
        chosen = [m for m in self.models if m.type == task] or [m for m in self.models if m.type == "main"]
        if not chosen:
            raise ConfigError(f"{self.folder}: 'models' has no 'main' model and none for task {task!r}")
        return chosen[0].name


def library_folder() -> Path | None:
    """Find ``nemoguardrails/`` of the installed package (not imported), or None when absent."""
    try:
        dist = metadata.distribution("nemoguardrails")
    except metadata.PackageNotFoundError:
        return None
    folder = Path(str(dist.locate_file("nemoguardrails")))
    return folder if folder.is_dir() else None


def walk_yaml(folder: Path) -> list[Path]:
    """List the ``*.yml`` / ``*.yaml`` files under ``folder`` in NeMo's order (``os.walk``, links
    followed, each real folder once so a link loop ends), leaving out ``kb/`` as NeMo does."""
    files, seen = [], set()
    for root, dirs, names in os.walk(folder, followlinks=True):
        seen.add(os.path.realpath(root))
        dirs[:] = [d for d in dirs if os.path.realpath(os.path.join(root, d)) not in seen]
        for name in names:
            path = Path(root) / name
            if name.endswith((".yml", ".yaml")) and not str(path.relative_to(folder)).startswith("kb"):
                files.append(path)
    return files


def library_prompts(folder: Path | None = None) -> tuple[RawPrompt, ...]:
    """Read NeMo's built-in prompts (``nemoguardrails/llm/prompts/*.yml`` of the installed package,
    or of the package folder ``folder``), in NeMo's order; none when it is not installed."""
    folder = folder or library_folder()
    if folder is None:
        return ()
    out: list[RawPrompt] = []
    for file in walk_yaml(folder / "llm" / "prompts"):
        data, node = read_yaml_file(file)
        out.extend(prompts_in(data, node, file, required=True))
    return tuple(out)


def nemo_defaults(colang_version: str = "1.0") -> dict[str, Any]:
    """Read NeMo's default config values (``instructions``, ``sample_conversation``) for a Colang
    version, from the installed package; empty when it is not installed."""
    folder = library_folder()
    name = "default_config_v2.yml" if colang_version == "2.x" else "default_config.yml"
    if folder is None or not (folder / "rails" / "llm" / name).is_file():
        return {}
    data, _ = read_yaml_file(folder / "rails" / "llm" / name)
    return data if isinstance(data, dict) else {}


def _line(node: Any, key: str) -> str:
    """Give ``:LINE`` of ``key`` in a file's top mapping (empty when it cannot be told)."""
    for k, _ in getattr(node, "value", None) or ():
        if getattr(k, "value", None) == key:
            return f":{k.start_mark.line + 1}"
    return ""


def _models(value: Any, file: str) -> list[NemoModel]:
    if not isinstance(value, list):
        raise ConfigError(f"{file}: 'models' must be a list of {{type, engine, model}}")
    out = []
    for m in value:
        if not isinstance(m, dict) or not isinstance(m.get("type"), str) or not isinstance(m.get("engine"), str):
            raise ConfigError(f"{file}: each entry of 'models' needs a 'type' and an 'engine' (strings)")
        model = m.get("model")
        out.append(NemoModel(m["type"], m["engine"], str(model) if model is not None else None))
    return out


def _join(joined: dict[str, Any], data: Any, node: Any, file: Path) -> None:
    if data is None:
        return
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: a NeMo config file must be a mapping")
    instructions = data.get("instructions") or []
    if not isinstance(instructions, list) or not all(isinstance(i, dict) for i in instructions):
        raise ConfigError(f"{file}{_line(node, 'instructions')}: 'instructions' must be a list of {{type, content}}")
    joined["instructions"] += instructions
    joined["models"] += _models(data.get("models") or [], f"{file}{_line(node, 'models')}")
    for key in _LAST_WINS:
        if key in data:
            joined[key] = data[key]
    _check_settings(data, node, file)


def _check_settings(data: dict[str, Any], node: Any, file: Path) -> None:
    """Refuse a file whose ``sample_conversation`` or ``prompting_mode`` is no string, or whose
    ``lowest_temperature`` is no number."""
    for key in ("sample_conversation", "prompting_mode"):
        if key in data and not isinstance(data[key], str):
            raise ConfigError(f"{file}{_line(node, key)}: {key!r} must be a string")
    temperature = data.get("lowest_temperature")
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float))):
        raise ConfigError(f"{file}{_line(node, 'lowest_temperature')}: 'lowest_temperature' must be a number")


def read_nemo_config(folder: Path, *, root: Path | None = None) -> NemoConfig:
    """Read the NeMo config in ``folder`` as NeMo joins its files (``instructions``, ``models`` and
    ``prompts`` add up, the last file's other keys win, NeMo's defaults fill the rest); ConfigError
    naming the file and line for what NeMo's reader would refuse, or a file outside ``root``."""
    if not folder.is_dir():
        raise ConfigError(f"{folder}: not a folder (a NeMo Guardrails config folder, with config.yml)")
    joined: dict[str, Any] = {"instructions": [], "models": []}
    prompts: list[RawPrompt] = []
    for file in walk_yaml(folder):
        if root is not None and root.resolve() not in file.resolve().parents:
            raise ConfigError(f"{file}: points outside the suite's folder {root.resolve()}")
        data, node = read_yaml_file(file)
        _join(joined, data, node, file)
        prompts.extend(prompts_in(data, node, file, required=False))
    version = str(joined.get("colang_version") or "1.0")
    temperature = joined.get("lowest_temperature")
    return NemoConfig(
        folder=folder,
        prompts=tuple(prompts),
        instructions=tuple(joined["instructions"]),
        sample_conversation=joined.get("sample_conversation") or "",
        models=tuple(joined["models"]),
        prompting_mode=joined.get("prompting_mode"),
        lowest_temperature=float(temperature) if temperature is not None else None,
        colang_version=version,
        defaults=nemo_defaults(version),
    )
