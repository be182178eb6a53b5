"""What each case of a suite sends: the prompt source of each variant's ``[template]`` table (made by the
``make_prompt_source`` hook) and the tools its requests offer."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.config.suite import ModelConfig
from pytest_promptsuite.config.suite import SuiteConfig
from pytest_promptsuite.config.suite import TemplateConfig
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.prompts.core import Prompt
from pytest_promptsuite.prompts.fields import TemplateReads
from pytest_promptsuite.prompts.prompt_sources import BUILTIN_MAKERS
from pytest_promptsuite.prompts.prompt_sources import PromptMakers
from pytest_promptsuite.prompts.prompt_sources import PromptSource
from pytest_promptsuite.prompts.tool_set import DEFAULT_MAX_STEPS
from pytest_promptsuite.prompts.tool_set import ToolSet
from pytest_promptsuite.prompts.tool_set import choice_problem
from pytest_promptsuite.prompts.tool_set import tool_name
from pytest_promptsuite.prompts.tool_set import tool_problems


#: ``make_source(suite=, table=, variant=, model=, makers=)``: the ``pytest_promptsuite_make_prompt_source`` hook.
MakeSource = Callable[..., "PromptSource | None"]


class CasePrompts:
    """What each case of a suite sends, per variant (None: ``[template]`` itself): each variant's prompt
    source and ``[template]`` table (its tools), and the suite config they came from (for its lines)."""

    def __init__(
        self,
        sources: Mapping[str | None, PromptSource],
        tables: Mapping[str | None, TemplateConfig],
        config: SuiteConfig,
    ) -> None:
        self.sources = dict(sources)
        self.tables = dict(tables)
        self.config = config
        self._tools: dict[str | None, ToolSet | ConfigError] = {}

    @classmethod
    def from_suite(
        cls,
        suite: SuiteConfig,
        make_source: MakeSource,
        settings: ModelConfig | None = None,
        *,
        makers: PromptMakers = BUILTIN_MAKERS,
        variant_settings: Mapping[str, ModelConfig] | None = None,
    ) -> CasePrompts:
        """Build the prompts of a suite config with the model settings in use (a variant with a model of its
        own: that model's) through ``make_source``; sources compile now, so their mistakes come first."""
        settings = settings or suite.model
        own = dict(variant_settings or {})
        # with variants, [template] itself is only the base they override: never run on its own
        names: list[str | None] = [*suite.variants] or [None]
        tables = {name: suite.template_for(name) for name in names}
        sources: dict[str | None, PromptSource] = {}
        for name, table in tables.items():
            model = own[name] if name is not None and name in own else settings
            source = make_source(suite=suite, table=table, variant=name, model=model, makers=makers)
            if source is None:
                where = suite.where(suite.template_key(name, "template"))
                raise ConfigError(f"{where}: no plugin makes a prompt of this [template] table ({table.set_keys()})")
            sources[name] = source
        return cls(sources, tables, suite)

    def source(self, variant: str | None = None) -> PromptSource:
        """Return the prompt source of ``variant``."""
        return self.sources[variant]

    def fields(self, variant: str | None = None) -> tuple[list[TemplateReads], frozenset[str]]:
        """Return what the prompt of ``variant`` reads, template by template, and its ``[template]
        optional`` fields; TemplateError for a template that does not compile."""
        source = self.sources[variant]
        return source.fields(), source.optional

    def suite_tools(self, variant: str | None = None) -> ToolSet:
        """Return the tools ``[template]`` (as ``variant`` sees it) offers: ``tools`` and the tools of
        ``tools_file``, checked once; ConfigError naming the config for a bad one."""
        found = self._tools.get(variant)
        if type(found) is ToolSet:  # the per-case path: read once per variant
            return found
        if found is None:
            try:
                found = self._tools[variant] = self._read_tools(variant)
            except ConfigError as exc:
                found = self._tools[variant] = exc
        if isinstance(found, ConfigError):
            raise ConfigError(str(found))
        return found

    def _read_tools(self, variant: str | None) -> ToolSet:
        table = self.tables[variant]
        config = self.config
        where = str(config.path) if config.path is not None else "[template]"
        tools: list[Any] = list(table.tools or [])
        problems = tool_problems(tools, f"{where}: [template] tools")
        file = table.tools_file
        if file is not None:
            listed, found = self._tools_file(file, where)
            problems += found
            tools += listed
        choice = table.tool_choice
        problem = choice_problem(choice, f"{where}: [template] tool_choice") if choice is not None else None
        if problem is not None:
            problems.append(problem)
        if problems:
            raise ConfigError("\n".join(problems))
        steps = table.max_steps or DEFAULT_MAX_STEPS
        return ToolSet(tuple(tools), choice, steps)

    def _tools_file(self, file: str, where: str) -> tuple[list[Any], list[str]]:
        """Read ``[template] tools_file``: its tools and what is wrong with them."""
        path = self.config.resolve(file, key="template.tools_file")
        try:
            listed = decode(path.read_bytes().decode("utf-8-sig"))
        except (OSError, UnicodeDecodeError, JsonError) as exc:
            raise ConfigError(f"{where}: [template] tools_file {file!r} is no JSON we can read: {exc}") from exc
        return listed if isinstance(listed, list) else [], tool_problems(listed, f"{path}: tools")

    def tool_set(self, case: PromptCase, *, variant: str | None = None) -> ToolSet:
        """Return the tools a case's requests offer: the suite's, with the case's own added (a case's tool
        replaces the suite's of its name) and its ``tool_choice`` over the suite's."""
        suite = self.suite_tools(variant)
        if not case.tools and case.tool_choice is None:
            return suite
        own = {tool_name(t) for t in case.tools}
        tools = (*(t for t in suite.tools if tool_name(t) not in own), *case.tools)
        choice = case.tool_choice if case.tool_choice is not None else suite.tool_choice
        return ToolSet(tools, choice, suite.max_steps)

    def params(self, *, variant: str | None = None) -> dict[str, Any]:
        """Return the request params the prompt itself sets (a task prompt's ``stop``); they
        override the model's."""
        return self.sources[variant].params

    def default_params(self, *, variant: str | None = None) -> dict[str, Any]:
        """Return the request params the prompt implies (``stop`` at the end of the model's turn of a
        meta template, for completions endpoints); the model's own params override them."""
        return self.sources[variant].default_params

    def made_by_code(self, *, variant: str | None = None) -> bool:
        """Tell whether the variant's prompt is made by code as each case runs (a promptfoo prompt function):
        collection does not render it, so the code runs once per case and a failure is the case's error."""
        return self.sources[variant].made_by_code

    def parse_output(self, text: str, *, variant: str | None = None) -> str:
        """Return the output the checks see: ``text`` through a task prompt's ``output_parser``."""
        return self.sources[variant].parse_output(text)

    def train_rows(self) -> list[dict[str, Any]]:
        """Return the rows of ``[suite] train`` (the in-context examples' fields) a source reads, else none."""
        return next((rows for source in self.sources.values() if (rows := source.train_rows())), [])

    def prompt(self, case: PromptCase, *, variant: str | None = None) -> Prompt:
        """Render the (first) prompt ``case`` sends."""
        return self.sources[variant].prompt(case)

    def is_ppl(self, *, variant: str | None = None) -> bool:
        """Tell whether the variant's cases are scored per label (``[template] inferencer = "ppl"``)."""
        return self.sources[variant].ppl

    def label_prompts(self, case: PromptCase, *, variant: str | None = None) -> list[tuple[str, Prompt]]:
        """Render each label and the prompt it scores (``inferencer = "ppl"``)."""
        return self.sources[variant].label_prompts(case)

    def follow_up(self, case: PromptCase, replies: Sequence[str], *, variant: str | None = None) -> Prompt | None:
        """Render the next prompt of a multi-turn case after ``replies`` (one per request so far), or None."""
        return self.sources[variant].follow_up(case, replies)

    def known_requests(self, case: PromptCase, *, variant: str | None = None) -> list[Prompt]:
        """Render every request that does not depend on a model reply (all of them but in ``every``
        mode; each label's prompt in the ppl mode)."""
        return self.sources[variant].known_requests(case)
