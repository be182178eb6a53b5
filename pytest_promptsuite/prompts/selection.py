"""Which prompt of a ``prompts.yml`` a task uses, by our rule (NeMo's dialect adds NeMo Guardrails' rule):
each scores the task's prompts and the highest wins, the last in file order among equals."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import did_you_mean
from pytest_promptsuite.prompts.prompts_yml import STANDARD
from pytest_promptsuite.prompts.prompts_yml import PromptEntry


def best_entry(entries: Sequence[PromptEntry], task: str, score: Callable[[PromptEntry], Any]) -> PromptEntry | None:
    """Return the entry of ``task`` that ``score`` ranks highest (the last among equals; None scores out)."""
    best: PromptEntry | None = None
    best_score: Any = None
    for entry in entries:
        if entry.task != task:
            continue
        value = score(entry)
        if value is not None and (best_score is None or value >= best_score):
            best, best_score = entry, value
    return best


def no_such_task(entries: Sequence[PromptEntry], task: str, source: str) -> ConfigError:
    """Make the error of a task no prompt is written for, with the near task names."""
    tasks = list(dict.fromkeys(e.task for e in entries))
    return ConfigError(
        f"{source}: no prompt for task {task!r}" + did_you_mean(task, tasks) + f"; tasks: {', '.join(tasks) or 'none'}"
    )


def _model_rank(models: Sequence[str], model: str | None) -> int | None:
    """Rank how ``models`` match ``model``: 3 exact, 2 the model name, 1 the provider, 0 no
    ``models`` at all, None when they name other models."""
    if not models:
        return 0
    if model is None:
        return None
    norm = model.replace(":", "/", 1)
    ranks = [rank for entry in models if (rank := _entry_rank(entry.replace(":", "/", 1), norm)) is not None]
    return max(ranks, default=None)


def _entry_rank(entry: str, norm: str) -> int | None:
    """Rank one ``models`` entry against ``provider/name``: 3 exact, 2 the name, 1 the provider, None neither."""
    provider, _, name = norm.partition("/")
    if entry == norm:
        return 3
    return 2 if name and entry == name else 1 if entry == provider else None


def promptsuite_score(entry: PromptEntry, model: str | None, mode: str) -> tuple[int, int] | None:
    """Score ``entry`` by our rule: a prompt of ``mode`` beats a ``standard`` one, then the model
    rank decides; None when its mode is another or its ``models`` name other models."""
    tier = 1 if entry.mode == mode else 0 if entry.mode == STANDARD else None
    rank = _model_rank(entry.models, model)
    return None if tier is None or rank is None else (tier, rank)


def select_prompt(entries: Sequence[PromptEntry], task: str, model: str | None, mode: str, source: str) -> PromptEntry:
    """Pick the entry for ``task`` on ``model`` (``openai:gpt-4o`` matches NeMo's ``openai/gpt-4o``)
    in ``mode`` by our rule; ConfigError naming ``source`` when none fits."""
    best = best_entry(entries, task, lambda entry: promptsuite_score(entry, model, mode))
    if best is not None:
        return best
    for_task = [e for e in entries if e.task == task]
    if not for_task:
        raise no_such_task(entries, task, source)
    modes = sorted({e.mode for e in for_task if _model_rank(e.models, model) is not None})
    if not modes:
        reason = f"every prompt for it lists other models than {model!r}"
    else:
        reason = f"it has no {mode!r} or 'standard' prompt (modes: {', '.join(modes)})"
    raise ConfigError(f"{source}: no prompt for task {task!r} on model {model!r}: {reason}")
