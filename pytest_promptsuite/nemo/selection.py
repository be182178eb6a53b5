"""NeMo Guardrails' prompt selection: which prompt of the library and the config a task uses.

Each prompt for the task scores by its ``models`` against the model name (``engine/model``):
1 exact, 0.8 the model part (``gpt-4o`` for ``openai/gpt-4o``), 0.5 the engine (``openai``), 0.4 a
substring (``gpt-4`` in ``openai/gpt-4o``), 0.2 a prompt with no ``models``, 0 otherwise. A
``standard`` prompt scores half in another mode; a prompt of any other mode is out. The highest
score wins, the last one among equals, and a prompt written for other models (score 0) still
wins when nothing scores more: NeMo's fallback.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import did_you_mean
from pytest_promptsuite.prompts.prompts_yml import STANDARD
from pytest_promptsuite.prompts.task_prompts import PromptEntry


__all__ = ["nemo_score", "select_nemo_prompt"]


def _model_score(models: Sequence[str], model: str) -> float:
    if not models:
        return 0.2
    score = 0.0
    for entry in models:
        if entry == model:
            return 1.0
        if model.startswith(entry + "/"):
            return 0.5
        if model.endswith("/" + entry):
            return 0.8
        if entry in model:
            score = 0.4
    return score


def nemo_score(entry: PromptEntry, model: str, mode: str) -> float | None:
    """NeMo's score of ``entry`` for ``model`` in ``mode`` (None: the prompt's mode rules it out)."""
    score = _model_score(entry.models, model)
    if entry.mode == mode:
        return score
    return score * 0.5 if entry.mode == STANDARD else None


def select_nemo_prompt(entries: Sequence[PromptEntry], task: str, model: str, mode: str, source: str) -> PromptEntry:
    """The entry NeMo's ``get_prompt`` picks for ``task`` on ``model`` in ``mode``; ConfigError
    naming ``source`` and the task when it has no prompt NeMo could use."""
    best: PromptEntry | None = None
    best_score = 0.0
    for entry in entries:
        if entry.task != task:
            continue
        score = nemo_score(entry, model, mode)
        if score is not None and score >= best_score:
            best, best_score = entry, score
    if best is not None:
        return best
    tasks = list(dict.fromkeys(e.task for e in entries))
    if task in tasks:
        raise ConfigError(f"{source}: no prompt for task {task!r} in mode {mode!r} or 'standard' (model {model!r})")
    raise ConfigError(
        f"{source}: no prompt for task {task!r}" + did_you_mean(task, tasks)
        + f"; tasks: {', '.join(tasks) or 'none'}"
    )
