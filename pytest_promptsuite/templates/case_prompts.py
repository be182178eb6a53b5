"""Suites use the engine: a case and its suite's ``[template]`` / ``[model]`` into what is sent.

A variant whose table is a task prompt or a template file sends its prompt source
(:mod:`.sources`); an infer_cfg table is rendered here. The row of a case (:mod:`.row`) is
``input`` (also ``question``), each key of ``vars`` at the top level, and ``answer`` (the output
column, masked in the prompt). The train file gives the ICE rows. The LM
parser's string goes to completion endpoints (and to chat endpoints as one user message); the API
parser's messages go to chat endpoints with OpenAI roles. A multi-turn case (``input`` a list) sends
the requests of its ``infer_mode`` one after the other, each reply feeding the next.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..cases import PromptCase
from ..errors import ConfigError
from ..errors import TemplateError
from ..formats.tomlio import line_of_key
from ..suite import ModelConfig
from ..suite import SuiteConfig
from ..suite import TemplateKind
from .builtin import builtin_meta
from .builtin import resolve_meta
from .fields import TemplateReads
from .fields import locate
from .filters import builtin_filter
from .jinja import MakeFilter
from .meta import APITemplateParser
from .meta import LMTemplateParser
from .meta import MetaTemplate
from .meta import make_meta
from .meta import to_openai_messages
from .multimodal import MMPromptTemplate
from .multiturn import Conversation
from .multiturn import MultiTurnPromptTemplate
from .parsers import MakeParser
from .parsers import builtin_output_parser
from .prompt import Prompt
from .renderers import MakeRenderer
from .renderers import builtin_renderer
from .request import make_template
from .request import render_prompt
from .retrievers import RETRIEVERS
from .retrievers import MakeRetriever
from .retrievers import RandomRetriever
from .retrievers import Retriever
from .retrievers import ZeroRetriever
from .retrievers import builtin_retriever
from .row import case_row
from .row import load_train_rows
from .sources import PromptSource
from .sources import prompt_source


__all__ = ["CasePrompts"]

#: A case with no template: the input, or one turn per input with its answer.
DEFAULT_TEMPLATE = {"round": [{"role": "HUMAN", "prompt": "{input}"}, {"role": "BOT", "prompt": "{answer}"}]}
DEFAULT_MULTITURN = {
    "round": [{"role": "HUMAN", "prompt": "{question}"}, {"role": "BOT", "prompt": "{answer}"}]
}


def _is_api_meta(meta: MetaTemplate) -> bool:
    roles = [r for r in meta.round if not isinstance(r, str)]
    return bool(roles) and all("api_role" in r for r in roles)


def _retriever(spec: Any, make: MakeRetriever) -> Retriever:
    """The suite's retriever, made by ``make`` (the plugin hook: third-party retrievers, a Topk
    with a custom embedding; else the built-ins)."""
    if not isinstance(spec, Mapping):
        raise TemplateError(f"template.retriever must be an object with a 'type', got {spec!r}")
    params = {k: v for k, v in spec.items() if k != "type"}
    name = spec.get("type", "ZeroRetriever")
    retriever = make(name=name, params=params)
    if retriever is None:
        raise TemplateError(
            f"template.retriever.type: unknown retriever {name!r} (built-ins: {', '.join(RETRIEVERS)}; "
            "a plugin adds one with the pytest_promptsuite_make_retriever hook)"
        )
    return retriever


def _refuse_other_kinds(table: Mapping[str, Any]) -> None:
    """Refuse a key of a task prompt or template file in a table this engine renders: it would be
    ignored (:class:`CasePrompts` sends those through their prompt source instead)."""
    for kind in TemplateKind:
        if kind is TemplateKind.INFER_CFG:
            continue
        for key in kind.keys:
            if table.get(key) is not None:
                raise TemplateError(f"[template] {key} is not handled by the infer_cfg templates; give prompt_template")


def _template(table: Mapping[str, Any], key: str) -> Any:
    """The template object of ``table[key]`` (a string is ``{"template": string}``), or None."""
    value = table.get(key)
    if value is None:
        return None
    spec = {"template": value} if isinstance(value, str) else value
    if key == "multiturn_template":
        spec = {"type": "MultiTurnPromptTemplate", **spec}
    return make_template(spec, key=f"template.{key}")


class _Setup:
    """The parts built from one (merged) ``[template]`` table; built once, on first use."""

    def __init__(
        self,
        table: Mapping[str, Any],
        *,
        meta: Any,
        endpoint: str,
        train: Callable[[], list[dict[str, Any]]],
        make_retriever: MakeRetriever = builtin_retriever,
    ) -> None:
        _refuse_other_kinds(table)
        self.keys = frozenset(k for k, v in table.items() if v is not None)
        self.configured = any(table.get(k) is not None for k in ("prompt_template", "ice_template"))
        self.prompt_template: Any = _template(table, "prompt_template")
        self.ice_template: Any = _template(table, "ice_template")
        multiturn = _template(table, "multiturn_template")
        if multiturn is None and isinstance(self.prompt_template, MultiTurnPromptTemplate):
            multiturn = self.prompt_template
        if multiturn is None:
            multiturn = MultiTurnPromptTemplate(DEFAULT_MULTITURN, name="default multi-turn template")
        self.multiturn: MultiTurnPromptTemplate = multiturn
        if not self.configured:
            self.prompt_template = make_template({"template": DEFAULT_TEMPLATE}, key="default template")
        spec = table.get("retriever") or {"type": "ZeroRetriever"}
        self.retriever: Retriever = _retriever(spec, make_retriever)
        self.output_column = table.get("output_column") or "answer"
        self.infer_mode = table.get("infer_mode") or "every"
        self.optional: tuple[str, ...] = tuple(table.get("optional") or ())
        self.ppl = table.get("inferencer") == "ppl"
        self.train = train
        #: No template and no meta template: a string input is sent as it is.
        self.plain = not self.configured and meta is None
        self._meta_parser(meta, endpoint)

    def _meta_parser(self, meta: Any, endpoint: str) -> None:
        """The meta template (``api`` on chat endpoints when there is none), its parser, and the
        stop sequence it implies."""
        if meta is None and endpoint == "chat":
            meta = builtin_meta("api")
        self.meta = make_meta(resolve_meta(meta), key="model.meta_template")
        if self.meta is not None and _is_api_meta(self.meta):
            self.parser: Any = APITemplateParser(self.meta)
        else:
            self.parser = LMTemplateParser(self.meta)
        #: Where the model's turn ends in an LM meta template (ChatML's ``<|im_end|>``): the stop
        #: sequence a completions endpoint needs, or it writes the next turns itself.
        self.stop: list[str] = []
        if endpoint == "completions" and isinstance(self.parser, LMTemplateParser) and self.meta is not None:
            role = self.meta.roles.get(self.meta.generate_role or "", {})
            end = role.get("end")
            if isinstance(end, str) and end.strip():
                self.stop = [end.strip()]

    def fields(self, where: Callable[[str], tuple[Path | None, int]]) -> list[TemplateReads]:
        """What the templates read: the prompt template (single-turn cases), the multi-turn
        template (multi-turn cases) and the ICE template (train rows, so only counted as read).
        ``where(key)`` gives the file and line a ``[template]`` key is written on."""
        prompt_key = "prompt_template" if self.configured and "prompt_template" in self.keys else "ice_template"
        if not self.plain and not self.configured:
            prompt_key = "default template"
        prompt = self.prompt_template or self.ice_template  # an ice_template alone is the prompt too
        reads = [
            TemplateReads(f"template.{prompt_key}", tuple(prompt.fields()), *where(prompt_key), cases="single"),
            TemplateReads("template.multiturn_template", tuple(self.multiturn.fields()),
                          *where("multiturn_template"), cases="multi"),
        ]
        if self.plain:
            reads.pop(0)
        if self.ice_template is not None:
            reads.append(TemplateReads("template.ice_template", tuple(self.ice_template.fields()),
                                       *where("ice_template"), cases="train"))
        return reads

    def send(self, intermediate: Any) -> Prompt:
        """The parser's output as it is sent: a string, or OpenAI chat messages."""
        value = self.parser.parse(intermediate, "gen")
        if isinstance(self.parser, APITemplateParser):
            return to_openai_messages(value)  # type: ignore[no-any-return]
        return value  # type: ignore[no-any-return]

    def single(self, case: PromptCase) -> Prompt:
        """The prompt of a single-turn case: its in-context examples, template and meta template."""
        if self.plain and isinstance(case.input, str):
            return case.input
        row = {**dict.fromkeys(self.optional, ""), **case_row(case)}
        train: list[dict[str, Any]] = []
        indices: list[int] | None = []
        if self.ice_template is not None or not isinstance(self.retriever, ZeroRetriever):
            train = self.train()
            indices = None
            if isinstance(self.retriever, RandomRetriever):  # the k-th draw for the k-th case
                k = max(case.location.line - 1, 0)
                indices = self.retriever.retrieve(train, [row] * (k + 1))[-1]
        if isinstance(self.prompt_template, MMPromptTemplate):
            intermediate: Any = self.prompt_template.gen_prompt(row, output_column=self.output_column)
        elif isinstance(self.prompt_template, MultiTurnPromptTemplate):
            raise TemplateError(
                f"case {case.case_id!r}: the prompt_template is a MultiTurnPromptTemplate but the input "
                "is a string; give a list of turns"
            )
        else:
            intermediate, _ = render_prompt(
                self.prompt_template,
                self.ice_template,
                self.retriever,
                train,
                row,
                output_column=self.output_column,
                indices=indices,
            )
        return self.send(intermediate)

    def labels(self, case: PromptCase) -> list[tuple[str, Prompt]]:
        """The ppl mode: each label of the label map and the full prompt that label scores."""
        chosen = self.prompt_template if self.prompt_template is not None else self.ice_template
        if not isinstance(case.input, str) or getattr(chosen, "kind", None) != "labels":
            raise TemplateError(
                f"case {case.case_id!r}: inferencer = \"ppl\" needs a label-map prompt_template and a "
                "single-turn case"
            )
        row = case_row(case)
        train = self.train() if self.ice_template is not None or not isinstance(self.retriever, ZeroRetriever) else []
        out: list[tuple[str, Prompt]] = []
        for label in chosen.template:
            intermediate, _ = render_prompt(self.prompt_template, self.ice_template, self.retriever, train, row,
                                            output_column=self.output_column, mode="ppl", label=label)
            value = self.parser.parse(intermediate, "ppl")
            out.append((label, to_openai_messages(value) if isinstance(self.parser, APITemplateParser) else value))
        return out

    def conversation(self, case: PromptCase) -> Conversation:
        """The conversation of a multi-turn case; TemplateError when it would send nothing."""
        assert isinstance(case.input, list)
        turns = len(case.input)
        if isinstance(case.answer, list):  # one ground truth per turn
            padded = list(case.answer) + [""] * (turns - len(case.answer))
        elif case.answer is not None:  # the final turn's ground truth
            padded = [""] * (turns - 1) + [case.answer]
        else:
            padded = [""] * turns
        row = {**dict.fromkeys(self.optional, ""), "input": case.input, **case.vars, "question": list(case.input),
               "answer": padded}
        bot = (self.meta.generate_role if self.meta is not None else None) or "BOT"
        conv = self.multiturn.conversation(row, infer_mode=self.infer_mode, bot_role=bot)
        if not conv.request_turns():
            raise TemplateError(
                f"case {case.case_id!r}: the multi-turn template has no {bot!r} turn, so nothing is sent"
            )
        return conv


class CasePrompts:
    """What each case of a suite sends, from its ``[template]`` table and its model's meta template.

    ``variants`` maps a variant name to the ``[template]`` keys it overrides (None unsets a key;
    :meth:`from_suite` gives each variant's whole table, :meth:`SuiteConfig.template_for`).
    ``sources`` holds, per variant (None: ``[template]`` itself), the task prompt or template file
    that replaces the infer_cfg engine. ``models`` gives a variant with a model of its own that
    model's (meta template, endpoint).
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
    ) -> None:
        self.template = {k: v for k, v in (template or {}).items() if v is not None}
        self.meta_template = meta_template
        self.endpoint = endpoint
        self.train_file = train_file
        self.variants = {name: dict(table) for name, table in (variants or {}).items()}
        self._setups: dict[str | None, _Setup | TemplateError] = {}
        self._train: list[dict[str, Any]] | None = None
        self.make_retriever = make_retriever
        self.sources = dict(sources or {})
        self.models = dict(models or {})
        #: The suite config the tables came from (for the lines of their keys), if any.
        self.config: SuiteConfig | None = None

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
        """The builder of a suite config (None: no config) with the model settings in use.

        The ``make_*`` callables are the plugin's hooks (retrievers, renderers, Jinja filters,
        output parsers); without them, the built-ins. Each variant's table is a task prompt, a
        template file or an infer_cfg (:meth:`TemplateConfig.kind`); task prompts and template
        files are loaded and compiled now, so a mistake in them is a ConfigError before any case runs.
        """
        if suite is None:
            return cls(make_retriever=make_retriever)
        settings = settings or suite.model
        own = dict(variant_settings or {})
        train = suite.resolve(suite.suite.train, key="suite.train") if suite.suite.train else None
        # with variants, [template] itself is only the base they override: never run on its own
        names: list[str | None] = [*suite.variants] or [None]
        tables = {name: suite.template_for(name) for name in names}
        sources: dict[str | None, PromptSource] = {}
        for name, table in tables.items():
            source = prompt_source(
                suite, table, model=own[name].spec if name in own else settings.spec,
                make_renderer=make_renderer, make_filter=make_filter, make_parser=make_parser, variant=name,
            )
            if source is not None:
                sources[name] = source
        prompts = cls(
            suite.template.model_dump(),
            meta_template=settings.meta_template,
            endpoint=settings.endpoint,
            train_file=train,
            variants={name: t.model_dump() for name, t in tables.items() if name is not None},
            make_retriever=make_retriever,
            sources=sources,
            models={name: (s.meta_template, s.endpoint) for name, s in own.items()},
        )
        prompts.config = suite
        return prompts

    def fields(self, variant: str | None = None) -> tuple[list[TemplateReads], frozenset[str]]:
        """What the prompt of ``variant`` reads, template by template, and its ``[template]
        optional`` fields; a template that does not compile is an error now (TemplateError)."""
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

    def params(self, *, variant: str | None = None) -> dict[str, Any]:
        """Request params the prompt itself sets (a task prompt's ``stop``, ``max_tokens``); they
        override the model's."""
        source = self.sources.get(variant)
        return source.params if source is not None else {}

    def default_params(self, *, variant: str | None = None) -> dict[str, Any]:
        """Request params the meta template implies (``stop`` at the end of the model's turn, for
        completions endpoints); the model's own params override them."""
        if variant in self.sources:
            return {}
        try:
            stop = self._setup(variant).stop
        except TemplateError:  # reported when the case renders
            return {}
        return {"stop": list(stop)} if stop else {}

    def parse_output(self, text: str, *, variant: str | None = None) -> str:
        """The output the checks see: a task prompt's ``output_parser`` applied to ``text``.

        Raises :class:`~pytest_promptsuite.templates.parsers.OutputParserError`."""
        source = self.sources.get(variant)
        return source.parse_output(text) if source is not None else text

    def train_rows(self) -> list[dict[str, Any]]:
        """The rows of ``[suite] train`` (read once), the in-context examples' fields."""
        return self._train_rows()

    def _train_rows(self) -> list[dict[str, Any]]:
        if self._train is None:
            self._train = load_train_rows(self.train_file) if self.train_file is not None else []
        return self._train

    def _setup(self, variant: str | None) -> _Setup:
        if variant not in self._setups:
            merged = {**self.template, **(self.variants.get(variant, {}) if variant is not None else {})}
            table = {k: v for k, v in merged.items() if v is not None}
            try:
                meta, endpoint = self.models.get(variant or "", (self.meta_template, self.endpoint))
                self._setups[variant] = _Setup(
                    table,
                    meta=meta,
                    endpoint=endpoint,
                    train=self._train_rows,
                    make_retriever=self.make_retriever,
                )
            except (TemplateError, ConfigError) as exc:
                self._setups[variant] = TemplateError(str(exc))
        setup = self._setups[variant]
        if isinstance(setup, TemplateError):
            raise TemplateError(str(setup))
        return setup

    def prompt(self, case: PromptCase, *, variant: str | None = None) -> Prompt:
        """The (first) prompt ``case`` sends."""
        source = self.sources.get(variant)
        if source is not None:  # one request; a multi-turn case's turns are its ``history``
            return source.prompt(case)
        setup = self._setup(variant)
        if isinstance(case.input, str):
            return setup.single(case)
        conv = setup.conversation(case)
        return setup.send(conv.request(conv.request_turns()[0]))

    def is_ppl(self, *, variant: str | None = None) -> bool:
        """Whether the variant's cases are scored per label (``[template] inferencer = "ppl"``)."""
        return variant not in self.sources and self._setup(variant).ppl

    def label_prompts(self, case: PromptCase, *, variant: str | None = None) -> list[tuple[str, Prompt]]:
        """The ppl mode: each label and the prompt it scores (:meth:`_Setup.labels`)."""
        return self._setup(variant).labels(case)

    def follow_up(
        self, case: PromptCase, replies: Sequence[str], *, variant: str | None = None
    ) -> Prompt | None:
        """The next prompt of a multi-turn case after ``replies`` (one per request so far), or None."""
        if isinstance(case.input, str) or variant in self.sources:
            return None
        setup = self._setup(variant)
        conv = setup.conversation(case)
        positions = conv.request_turns()
        if len(replies) >= len(positions):
            return None
        return setup.send(conv.request(positions[len(replies)], replies))

    def known_requests(self, case: PromptCase, *, variant: str | None = None) -> list[Prompt]:
        """Every request that does not depend on a model reply (all of them but in ``every`` mode;
        each label's prompt in the ppl mode)."""
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
