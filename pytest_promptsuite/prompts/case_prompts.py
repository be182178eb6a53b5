"""What each case of a suite sends: its ``[template]`` table (a prompt source, or the infer_cfg engine)
and its model's meta template."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.config.suite import ModelConfig
from pytest_promptsuite.config.suite import SuiteConfig
from pytest_promptsuite.dialects.opencompass.infer_cfg import InferSetup
from pytest_promptsuite.dialects.opencompass.retrievers import MakeRetriever
from pytest_promptsuite.dialects.opencompass.retrievers import builtin_retriever
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.formats.tomlio import line_of_key
from pytest_promptsuite.prompts.core import Prompt
from pytest_promptsuite.prompts.fields import TemplateReads
from pytest_promptsuite.prompts.fields import locate
from pytest_promptsuite.prompts.files.history_filters import MakeFilter
from pytest_promptsuite.prompts.files.history_filters import builtin_filter
from pytest_promptsuite.prompts.files.renderers import MakeRenderer
from pytest_promptsuite.prompts.files.renderers import builtin_renderer
from pytest_promptsuite.prompts.output_parsers import MakeParser
from pytest_promptsuite.prompts.output_parsers import builtin_output_parser
from pytest_promptsuite.prompts.prompt_sources import PromptSource
from pytest_promptsuite.prompts.prompt_sources import prompt_source
from pytest_promptsuite.prompts.template_row import load_train_rows
from pytest_promptsuite.prompts.tool_set import DEFAULT_MAX_STEPS
from pytest_promptsuite.prompts.tool_set import ToolSet
from pytest_promptsuite.prompts.tool_set import choice_problem
from pytest_promptsuite.prompts.tool_set import tool_name
from pytest_promptsuite.prompts.tool_set import tool_problems


class CasePrompts:
    """What each case of a suite sends, per variant (None: ``[template]`` itself).

    ``variants`` maps a variant to the ``[template]`` keys it overrides (None unsets one);
    ``sources`` holds the variants sent through a prompt source instead of the infer_cfg engine;
    ``models`` gives a variant with a model of its own that model's (meta template, endpoint).
    """

    def __init__(
        self,
        template: Mapping[str, Any] | None = None,
        *,
        meta_template: Any = None,
        endpoint: str = "chat",
        train_file: Path | None = None,
        variants: Mapping[str, Mapping[str, Any]] | None = None,
        make_retriever: MakeRetriever = builtin_retriever,
        sources: Mapping[str | None, PromptSource] | None = None,
        models: Mapping[str, tuple[Any, str]] | None = None,
        config: SuiteConfig | None = None,
    ) -> None:
        self.template = {k: v for k, v in (template or {}).items() if v is not None}
        self.meta_template = meta_template
        self.endpoint = endpoint
        self.train_file = train_file
        self.variants = {name: dict(table) for name, table in (variants or {}).items()}
        self._setups: dict[str | None, InferSetup | TemplateError] = {}
        self._train: list[dict[str, Any]] | None = None
        self.make_retriever = make_retriever
        self.sources = dict(sources or {})
        self.models = dict(models or {})
        #: The suite config the tables came from (for the lines of their keys), if any.
        self.config = config
        self._tools: dict[str | None, ToolSet | ConfigError] = {}

    @classmethod
    def from_suite(
        cls,
        suite: SuiteConfig | None,
        settings: ModelConfig | None = None,
        *,
        make_retriever: MakeRetriever = builtin_retriever,
        make_renderer: MakeRenderer = builtin_renderer,
        make_filter: MakeFilter = builtin_filter,
        make_parser: MakeParser = builtin_output_parser,
        variant_settings: Mapping[str, ModelConfig] | None = None,
    ) -> CasePrompts:
        """Build the prompts of a suite config (None: no config) with the model settings in use and
        the plugin's ``make_*`` hooks; prompt sources compile now, so their mistakes come first."""
        if suite is None:
            return cls(make_retriever=make_retriever)
        settings = settings or suite.model
        own = dict(variant_settings or {})
        train = suite.resolve(suite.suite.train, key="suite.train") if suite.suite.train else None
        # with variants, [template] itself is only the base they override: never run on its own
        names: list[str | None] = [*suite.variants] or [None]
        tables = {name: suite.template_for(name) for name in names}
        sources: dict[str | None, PromptSource] = {}
        source_of = functools.partial(
            prompt_source, suite, make_renderer=make_renderer, make_filter=make_filter, make_parser=make_parser
        )
        for name, table in tables.items():
            model = own[name].spec if name in own else settings.spec
            source = source_of(table, model=model, variant=name)
            if source is not None:
                sources[name] = source
        return cls(
            dataclasses.asdict(suite.template),
            meta_template=settings.meta_template,
            endpoint=settings.endpoint,
            train_file=train,
            variants={name: dataclasses.asdict(t) for name, t in tables.items() if name is not None},
            make_retriever=make_retriever,
            sources=sources,
            models={name: (s.meta_template, s.endpoint) for name, s in own.items()},
            config=suite,
        )

    def fields(self, variant: str | None = None) -> tuple[list[TemplateReads], frozenset[str]]:
        """Return what the prompt of ``variant`` reads, template by template, and its ``[template]
        optional`` fields; TemplateError for a template that does not compile."""
        source = self.sources.get(variant)
        if source is not None:
            return source.fields(), source.optional
        config = self.config
        try:
            setup = self._setup(variant)
        except TemplateError as exc:
            raise TemplateError(locate(config, variant, str(exc), own_model=(variant or "") in self.models)) from exc

        def where(key: str) -> tuple[Path | None, int]:
            if config is None or config.path is None:
                return None, 0
            return config.path, line_of_key(config.lines, config.template_key(variant, key)) or 0

        return setup.fields(where), frozenset(setup.optional)

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
        table = {**self.template, **(self.variants.get(variant, {}) if variant is not None else {})}
        config = self.config
        where = str(config.path) if config is not None and config.path is not None else "[template]"
        tools: list[Any] = list(table.get("tools") or [])
        problems = tool_problems(tools, f"{where}: [template] tools")
        file = table.get("tools_file")
        if file is not None:
            path = config.resolve(file, key="template.tools_file") if config is not None else Path(file)
            try:
                listed = decode(path.read_bytes().decode("utf-8-sig"))
            except (OSError, UnicodeDecodeError, JsonError) as exc:
                raise ConfigError(f"{where}: [template] tools_file {file!r} is no JSON we can read: {exc}") from exc
            problems += tool_problems(listed, f"{path}: tools")
            tools += listed if isinstance(listed, list) else []
        choice = table.get("tool_choice")
        problem = choice_problem(choice, f"{where}: [template] tool_choice") if choice is not None else None
        if problem is not None:
            problems.append(problem)
        if problems:
            raise ConfigError("\n".join(problems))
        steps = table.get("max_steps") or DEFAULT_MAX_STEPS
        return ToolSet(tuple(tools), choice, steps)

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
        source = self.sources.get(variant)
        return source.params if source is not None else {}

    def default_params(self, *, variant: str | None = None) -> dict[str, Any]:
        """Return the request params the meta template implies (``stop`` at the end of the model's
        turn, for completions endpoints); the model's own params override them."""
        if variant in self.sources:
            return {}
        try:
            stop = self._setup(variant).stop
        except TemplateError:  # reported when the case renders
            return {}
        return {"stop": list(stop)} if stop else {}

    def made_by_code(self, *, variant: str | None = None) -> bool:
        """Tell whether the variant's prompt is made by code as each case runs (a promptfoo prompt function):
        collection does not render it, so the code runs once per case and a failure is the case's error."""
        source = self.sources.get(variant)
        return source is not None and source.function is not None

    def parse_output(self, text: str, *, variant: str | None = None) -> str:
        """Return the output the checks see: ``text`` through a task prompt's ``output_parser``."""
        source = self.sources.get(variant)
        return source.parse_output(text) if source is not None else text

    def train_rows(self) -> list[dict[str, Any]]:
        """Return the rows of ``[suite] train`` (read once), the in-context examples' fields."""
        if self._train is None:
            self._train = load_train_rows(self.train_file) if self.train_file is not None else []
        return self._train

    def _setup(self, variant: str | None) -> InferSetup:
        if variant not in self._setups:
            merged = {**self.template, **(self.variants.get(variant, {}) if variant is not None else {})}
            table = {k: v for k, v in merged.items() if v is not None}
            try:
                meta, endpoint = self.models.get(variant or "", (self.meta_template, self.endpoint))
                self._setups[variant] = InferSetup(
                    table, meta=meta, endpoint=endpoint, train=self.train_rows, make_retriever=self.make_retriever
                )
            except (TemplateError, ConfigError) as exc:
                self._setups[variant] = TemplateError(str(exc))
        setup = self._setups[variant]
        if isinstance(setup, TemplateError):
            raise TemplateError(str(setup))
        return setup

    def prompt(self, case: PromptCase, *, variant: str | None = None) -> Prompt:
        """Render the (first) prompt ``case`` sends."""
        source = self.sources.get(variant)
        if source is not None:  # one request; a multi-turn case's turns are its ``history``
            return source.prompt(case)
        setup = self._setup(variant)
        if isinstance(case.input, str):
            return setup.single(case)
        conv = setup.conversation(case)
        return setup.send(conv.request(conv.request_turns()[0]))

    def is_ppl(self, *, variant: str | None = None) -> bool:
        """Tell whether the variant's cases are scored per label (``[template] inferencer = "ppl"``)."""
        return variant not in self.sources and self._setup(variant).ppl

    def label_prompts(self, case: PromptCase, *, variant: str | None = None) -> list[tuple[str, Prompt]]:
        """Render each label and the prompt it scores (``inferencer = "ppl"``)."""
        return self._setup(variant).labels(case)

    def follow_up(self, case: PromptCase, replies: Sequence[str], *, variant: str | None = None) -> Prompt | None:
        """Render the next prompt of a multi-turn case after ``replies`` (one per request so far), or None."""
        if isinstance(case.input, str) or variant in self.sources:
            return None
        setup = self._setup(variant)
        conv = setup.conversation(case)
        positions = conv.request_turns()
        if len(replies) >= len(positions):
            return None
        return setup.send(conv.request(positions[len(replies)], replies))

    def known_requests(self, case: PromptCase, *, variant: str | None = None) -> list[Prompt]:
        """Render every request that does not depend on a model reply (all of them but in ``every``
        mode; each label's prompt in the ppl mode)."""
        if variant not in self.sources and self._setup(variant).ppl:
            return [prompt for _, prompt in self.label_prompts(case, variant=variant)]
        if isinstance(case.input, str) or variant in self.sources:
            return [self.prompt(case, variant=variant)]
        setup = self._setup(variant)
        conv = setup.conversation(case)
        positions = conv.request_turns()
        if setup.infer_mode == "every":
            positions = positions[:1]
        return [setup.send(conv.request(p)) for p in positions]
