"""Which prompt of a ``prompts.yml`` a task uses by NeMo Guardrails' rule (its ``get_prompt`` scores)."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.prompts.prompts_yml import STANDARD
from pytest_promptsuite.prompts.prompts_yml import PromptEntry
from pytest_promptsuite.prompts.selection import best_entry
from pytest_promptsuite.prompts.selection import no_such_task


def _nemo_model_score(models: Sequence[str], model: str) -> float:
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
    """Score ``entry`` as NeMo's ``get_prompt`` does for ``model`` (``engine/model``): 1 exact, 0.8
    the model part, 0.5 the engine, 0.4 a substring, 0.2 no ``models``, else 0; halved for a
    ``standard`` prompt in another mode; None for a prompt of another mode."""
    score = _nemo_model_score(entry.models, model)
    if entry.mode == mode:
        return score
    return score * 0.5 if entry.mode == STANDARD else None


def select_nemo_prompt(entries: Sequence[PromptEntry], task: str, model: str, mode: str, source: str) -> PromptEntry:
    """Pick the entry NeMo's ``get_prompt`` picks for ``task`` on ``model`` in ``mode``; ConfigError
    naming ``source`` and the task when it has no prompt NeMo could use."""
    best = best_entry(entries, task, lambda entry: nemo_score(entry, model, mode))
    if best is not None:
        return best
    if any(e.task == task for e in entries):
        raise ConfigError(f"{source}: no prompt for task {task!r} in mode {mode!r} or 'standard' (model {model!r})")
    raise no_such_task(entries, task, source)
