"""A task prompt selected and rendered as NeMo Guardrails' ``LLMTaskManager.render_task_prompt``
does: NeMo's context, environment (no final newline), filters, output parsers and ``max_length``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any

from pytest_promptsuite.dialects.nemo import NEMO_PREFIX
from pytest_promptsuite.dialects.nemo.colang import events_of
from pytest_promptsuite.dialects.nemo.guardrails_config import NemoConfig
from pytest_promptsuite.dialects.nemo.guardrails_config import library_prompts
from pytest_promptsuite.dialects.nemo.guardrails_config import nemo_defaults
from pytest_promptsuite.dialects.nemo.guardrails_config import read_nemo_config
from pytest_promptsuite.dialects.nemo.nemo_selection import select_nemo_prompt
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.prompts.core import Prompt
from pytest_promptsuite.prompts.fields import TemplateReads
from pytest_promptsuite.prompts.files.history_filters import MakeFilter
from pytest_promptsuite.prompts.files.jinja import sandbox_environment
from pytest_promptsuite.prompts.output_parsers import MakeParser
from pytest_promptsuite.prompts.output_parsers import OutputParser
from pytest_promptsuite.prompts.prompts_yml import STANDARD
from pytest_promptsuite.prompts.prompts_yml import PromptEntry
from pytest_promptsuite.prompts.prompts_yml import prompt_entries
from pytest_promptsuite.prompts.prompts_yml import read_prompts
from pytest_promptsuite.prompts.task_prompts import TaskPrompt
from pytest_promptsuite.prompts.task_prompts import compile_prompt


if TYPE_CHECKING:
    from pytest_promptsuite.config.suite import SuiteConfig
    from pytest_promptsuite.config.suite import TemplateConfig


#: NeMo's ``max_length`` of a prompt that sets none (characters).
DEFAULT_MAX_LENGTH = 16000
#: What NeMo's runtime retrieves (few-shot examples, intents, knowledge-base chunks) and a case
#: cannot hold: empty unless its ``vars`` give them, as ``render_task_prompt`` renders them without.
RETRIEVED = ("examples", "potential_user_intents", "relevant_chunks")
#: The variables NeMo's context gives every prompt (``user_input``: the case's last user turn,
#: as NeMo's actions pass it), possibly empty; a case's ``vars`` override them.
NEMO_CONTEXT = frozenset(
    ("history", "general_instructions", "sample_conversation", "sample_conversation_two_turns", "user_input")
) | frozenset(RETRIEVED)


def _length(prompt: Prompt) -> int:
    if isinstance(prompt, str):
        return len(prompt)
    return sum(len(str(m.get("content", ""))) + 1 for m in prompt)


@dataclass(frozen=True)
class NemoPrompt:
    """A selected prompt compiled in NeMo's environment, with the context NeMo renders it in
    (``history`` is the case's event history; the config gives the instructions and sample)."""

    prompt: TaskPrompt
    context: Mapping[str, Any]
    temperature: float | None = None

    @property
    def provides(self) -> frozenset[str]:
        """Give the names NeMo's context provides (:data:`NEMO_CONTEXT`): never missing from a row."""
        return NEMO_CONTEXT

    @property
    def where(self) -> str:
        """Give ``path:line`` of the selected prompt."""
        return self.prompt.where

    @property
    def params(self) -> dict[str, Any]:
        """Give the prompt's ``stop`` and ``max_tokens``, and the config's ``lowest_temperature``
        (NeMo calls its task prompts at that temperature)."""
        out = self.prompt.params
        if self.temperature is not None:
            out["temperature"] = self.temperature
        return out

    def template_reads(self, provides: frozenset[str] = frozenset()) -> TemplateReads:
        """Say which variables the selected prompt reads (see :meth:`TaskPrompt.template_reads`)."""
        return self.prompt.template_reads(provides)

    def parse_output(self, text: str) -> str:
        """Return the output through the prompt's (NeMo) output parser, else as is."""
        return self.prompt.parse_output(text)

    def render(self, row: Mapping[str, Any]) -> Prompt:
        """Render what NeMo renders for ``row``: its context, the row's fields over it, ``history``
        the row's events; over ``max_length`` (NeMo's default 16000), drop the oldest events one
        at a time."""
        events = events_of(row)
        turns = row.get("input")
        last = turns[-1] if isinstance(turns, list) and turns else turns
        base = {**self.context, "user_input": last if last is not None else ""}
        base.update((k, v) for k, v in row.items() if k != "history")
        budget = self.prompt.max_length or DEFAULT_MAX_LENGTH
        while True:
            prompt = self.prompt.render_once({**base, "history": events})
            if _length(prompt) <= budget:
                return prompt
            if not events:
                raise TemplateError(
                    f"{self.prompt.name}: the prompt is {_length(prompt)} characters, over max_length "
                    f"{budget} even without history"
                )
            events = events[1:]


def _selected(config: SuiteConfig, table: TemplateConfig, nemo: NemoConfig) -> PromptEntry:
    """Select the task's prompt by NeMo's rule among NeMo's library, the config's and ``task_prompts``'."""
    assert table.task is not None
    library = library_prompts()
    raw = list(library) + list(nemo.prompts)
    if table.task_prompts is not None:
        raw += read_prompts(config.resolve(table.task_prompts, key="template.task_prompts"), root=config.root)
    model = table.prompt_model or nemo.model_for(table.task)
    mode = table.mode or nemo.prompting_mode or STANDARD
    source = f"{config.path}: [template] task {table.task!r} (NeMo semantics)"
    try:
        return select_nemo_prompt(prompt_entries(raw), table.task, model, mode, source)
    except ConfigError as exc:
        if library:
            raise
        raise ConfigError(
            f"{exc} (NeMo's built-in prompts come from an installed nemoguardrails package; "
            "none is installed, so only the config's prompts count)"
        ) from exc


def _nemo_config(config: SuiteConfig, table: TemplateConfig) -> NemoConfig:
    if table.nemo_config is None:
        return NemoConfig(folder=None, defaults=nemo_defaults())
    folder = config.resolve(table.nemo_config, key="template.nemo_config")
    if not folder.exists():
        raise ConfigError(f"{config.path}: template.nemo_config = {table.nemo_config!r}: no such folder")
    return read_nemo_config(folder, root=config.root)


def nemo_prompt(
    config: SuiteConfig, table: TemplateConfig, *, make_filter: MakeFilter, make_parser: MakeParser
) -> NemoPrompt:
    """Select by NeMo's rule the prompt of a ``[template]`` table under NeMo semantics (from the
    library, the config's prompts and ``task_prompts``) and compile it alone; ConfigError naming the
    file, line and construct when it does not compile."""
    assert table.task is not None
    if table.nemo_config is not None and table.semantics == "promptsuite":
        raise ConfigError(
            f"{config.path}: template.nemo_config renders with NeMo's semantics; "
            "drop semantics = 'promptsuite' (or nemo_config)"
        )
    nemo = _nemo_config(config, table)
    entry = _selected(config, table, nemo)
    env = sandbox_environment()
    env.keep_trailing_newline = False  # NeMo's Jinja environment drops a template's final newline

    def nemo_filter(name: str) -> Any:
        return make_filter(NEMO_PREFIX + name) or make_filter(name)

    def nemo_output_parser(name: str, params: dict[str, Any]) -> OutputParser | None:
        return make_parser(NEMO_PREFIX + name, params) or make_parser(name, params)

    context = {
        **dict.fromkeys(RETRIEVED, ""),
        "general_instructions": nemo.general_instructions,
        "sample_conversation": nemo.sample,
        "sample_conversation_two_turns": nemo.sample,
    }
    prompt = compile_prompt(entry, env, nemo_filter, nemo_output_parser)
    return NemoPrompt(prompt, context, nemo.lowest_temperature)
