"""The infer_cfg engine of one ``[template]`` table (OpenCompass's templates, also a table with none): its
prompt, ice and multi-turn templates, its retriever and the model's meta template, as a prompt source."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.config.suite import ModelConfig
from pytest_promptsuite.config.suite import SuiteConfig
from pytest_promptsuite.config.suite import TemplateConfig
from pytest_promptsuite.config.suite import TemplateKind
from pytest_promptsuite.dialects.opencompass.chat_formats import builtin_meta
from pytest_promptsuite.dialects.opencompass.chat_formats import resolve_meta
from pytest_promptsuite.dialects.opencompass.meta_template import APITemplateParser
from pytest_promptsuite.dialects.opencompass.meta_template import LMTemplateParser
from pytest_promptsuite.dialects.opencompass.meta_template import MetaTemplate
from pytest_promptsuite.dialects.opencompass.meta_template import make_meta
from pytest_promptsuite.dialects.opencompass.meta_template import to_openai_messages
from pytest_promptsuite.dialects.opencompass.multimodal import MMPromptTemplate
from pytest_promptsuite.dialects.opencompass.multiturn import Conversation
from pytest_promptsuite.dialects.opencompass.multiturn import MultiTurnPromptTemplate
from pytest_promptsuite.dialects.opencompass.render_request import make_template
from pytest_promptsuite.dialects.opencompass.render_request import render_prompt
from pytest_promptsuite.dialects.opencompass.retrievers import RETRIEVERS
from pytest_promptsuite.dialects.opencompass.retrievers import MakeRetriever
from pytest_promptsuite.dialects.opencompass.retrievers import RandomRetriever
from pytest_promptsuite.dialects.opencompass.retrievers import Retriever
from pytest_promptsuite.dialects.opencompass.retrievers import ZeroRetriever
from pytest_promptsuite.dialects.opencompass.retrievers import builtin_retriever
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.formats.tomlio import line_of_key
from pytest_promptsuite.prompts.core import Prompt
from pytest_promptsuite.prompts.fields import TemplateReads
from pytest_promptsuite.prompts.fields import locate
from pytest_promptsuite.prompts.prompt_sources import PromptMakers
from pytest_promptsuite.prompts.prompt_sources import PromptSource
from pytest_promptsuite.prompts.template_row import case_row
from pytest_promptsuite.prompts.template_row import load_train_rows


#: A case with no template: the input, or one turn per input with its answer.
DEFAULT_TEMPLATE = {"round": [{"role": "HUMAN", "prompt": "{input}"}, {"role": "BOT", "prompt": "{answer}"}]}
DEFAULT_MULTITURN = {"round": [{"role": "HUMAN", "prompt": "{question}"}, {"role": "BOT", "prompt": "{answer}"}]}


def _is_api_meta(meta: MetaTemplate) -> bool:
    roles = [r for r in meta.round if not isinstance(r, str)]
    return bool(roles) and all("api_role" in r for r in roles)


def _retriever(spec: Any, make: MakeRetriever) -> Retriever:
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
    for kind in TemplateKind:
        if kind is TemplateKind.INFER_CFG:
            continue
        for key in kind.keys:
            if key == "semantics" and table.get(key) == "opencompass":
                continue
            if table.get(key) is not None:
                raise TemplateError(f"[template] {key} is not handled by the infer_cfg templates; give prompt_template")


def _template(table: Mapping[str, Any], key: str) -> Any:
    value = table.get(key)
    if value is None:
        return None
    spec = {"template": value} if isinstance(value, str) else value
    if key == "multiturn_template":
        spec = {"type": "MultiTurnPromptTemplate", **spec}
    return make_template(spec, key=f"template.{key}")


def _multiturn(table: Mapping[str, Any], prompt_template: Any) -> MultiTurnPromptTemplate:
    """Return the multi-turn template: ``multiturn_template``, else a multi-turn prompt template, else the default."""
    multiturn = _template(table, "multiturn_template")
    if multiturn is None and isinstance(prompt_template, MultiTurnPromptTemplate):
        return prompt_template
    if multiturn is None:
        return MultiTurnPromptTemplate(DEFAULT_MULTITURN, name="default multi-turn template")
    return multiturn  # type: ignore[no-any-return]


def _turn_end(meta: MetaTemplate) -> list[str]:
    """Return where the model's turn ends in an LM meta template (its generating role's ``end``), as stop."""
    role = meta.roles.get(meta.generate_role or "", {})
    end = role.get("end")
    return [end.strip()] if isinstance(end, str) and end.strip() else []


class InferSetup:
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
        self.multiturn: MultiTurnPromptTemplate = _multiturn(table, self.prompt_template)
        if not self.configured:
            self.prompt_template = make_template({"template": DEFAULT_TEMPLATE}, key="default template")
        spec = table.get("retriever") or {"type": "ZeroRetriever"}
        self.retriever: Retriever = _retriever(spec, make_retriever)
        self.output_column = table.get("output_column") or "answer"
        self.infer_mode = table.get("infer_mode") or "every"
        self.optional: tuple[str, ...] = tuple(table.get("optional") or ())
        #: OpenCompass's rules: each column of the row replaces its ``{column}``, any other ``{name}``
        #: is text (LaTeX's ``\frac{a}{b}``), so no field is missing.
        self.opencompass = table.get("semantics") == "opencompass"
        self.ppl = table.get("inferencer") == "ppl"
        self.train = train
        #: No template and no meta template: a string input is sent as it is.
        self.plain = not self.configured and meta is None
        self._meta_parser(meta, endpoint)

    def _meta_parser(self, meta: Any, endpoint: str) -> None:
        """Set the meta template (``api`` on chat endpoints when there is none), its parser, and the
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
            self.stop = _turn_end(self.meta)

    def fields(self, where: Callable[[str], tuple[Path | None, int]]) -> list[TemplateReads]:
        """Return what the prompt, multi-turn and ICE templates read; ``where(key)`` gives the file
        and line a ``[template]`` key is written on."""
        prompt_key = "prompt_template" if self.configured and "prompt_template" in self.keys else "ice_template"
        if not self.plain and not self.configured:
            prompt_key = "default template"
        prompt = self.prompt_template or self.ice_template  # an ice_template alone is the prompt too

        def reads(key: str, template: Any, cases: str) -> TemplateReads:
            found = None if self.opencompass else tuple(template.fields())
            return TemplateReads(f"template.{key}", found, *where(key), cases=cases)

        found = [reads(prompt_key, prompt, "single"), reads("multiturn_template", self.multiturn, "multi")]
        if self.plain:
            found.pop(0)
        if self.ice_template is not None:
            found.append(reads("ice_template", self.ice_template, "train"))
        return found

    def send(self, intermediate: Any) -> Prompt:
        """Parse an intermediate into what is sent: a string, or OpenAI chat messages."""
        value = self.parser.parse(intermediate, "gen")
        if isinstance(self.parser, APITemplateParser):
            return to_openai_messages(value)  # type: ignore[no-any-return]
        return value  # type: ignore[no-any-return]

    def single(self, case: PromptCase) -> Prompt:
        """Render the prompt of a single-turn case: its in-context examples, template and meta template."""
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
            intermediate = self._render(row, train, indices=indices)
        return self.send(intermediate)

    def _render(self, row: dict[str, Any], train: list[dict[str, Any]], **options: Any) -> Any:
        templates = (self.prompt_template, self.ice_template, self.retriever)
        return render_prompt(*templates, train, row, output_column=self.output_column, **options)[0]

    def labels(self, case: PromptCase) -> list[tuple[str, Prompt]]:
        """Render each label of the label map and the full prompt that label scores (ppl mode)."""
        chosen = self.prompt_template if self.prompt_template is not None else self.ice_template
        if not isinstance(case.input, str) or getattr(chosen, "kind", None) != "labels":
            raise TemplateError(
                f'case {case.case_id!r}: inferencer = "ppl" needs a label-map prompt_template and a single-turn case'
            )
        row = case_row(case)
        train = self.train() if self.ice_template is not None or not isinstance(self.retriever, ZeroRetriever) else []
        out: list[tuple[str, Prompt]] = []
        for label in chosen.template:
            value = self.parser.parse(self._render(row, train, mode="ppl", label=label), "ppl")
            out.append((label, to_openai_messages(value) if isinstance(self.parser, APITemplateParser) else value))
        return out

    def conversation(self, case: PromptCase) -> Conversation:
        """Fill the conversation of a multi-turn case; TemplateError when it would send nothing."""
        assert isinstance(case.input, list)
        turns = len(case.input)
        if isinstance(case.answer, list):  # one ground truth per turn
            padded = list(case.answer) + [""] * (turns - len(case.answer))
        elif case.answer is not None:  # the final turn's ground truth
            padded = [""] * (turns - 1) + [case.answer]
        else:
            padded = [""] * turns
        row = {**dict.fromkeys(self.optional, ""), "input": case.input, **case.vars}
        row.update(question=list(case.input), answer=padded)
        bot = (self.meta.generate_role if self.meta is not None else None) or "BOT"
        conv = self.multiturn.conversation(row, infer_mode=self.infer_mode, bot_role=bot)
        if not conv.request_turns():
            raise TemplateError(
                f"case {case.case_id!r}: the multi-turn template has no {bot!r} turn, so nothing is sent"
            )
        return conv


class InferCfgSource(PromptSource):
    """The prompt source of an infer_cfg table: an :class:`InferSetup` built on first use (a template problem
    is then a TemplateError naming its key's line), the ``[suite] train`` rows read once."""

    def __init__(
        self,
        table: Mapping[str, Any],
        *,
        meta: Any = None,
        endpoint: str = "chat",
        train_file: Path | None = None,
        make_retriever: MakeRetriever = builtin_retriever,
        config: SuiteConfig | None = None,
        variant: str | None = None,
        own_model: bool = False,
    ) -> None:
        self.table = {k: v for k, v in table.items() if v is not None}
        self.optional = frozenset(self.table.get("optional") or ())
        self.meta, self.endpoint, self.train_file = meta, endpoint, train_file
        self.make_retriever = make_retriever
        self.config, self.variant, self.own_model = config, variant, own_model
        self._setup: InferSetup | TemplateError | None = None
        self._train: list[dict[str, Any]] | None = None

    @classmethod
    def from_table(
        cls, suite: SuiteConfig, table: TemplateConfig, variant: str | None, model: ModelConfig, makers: PromptMakers
    ) -> InferCfgSource:
        """Make the source of ``table`` (a variant's) for ``model`` (its meta template and endpoint)."""
        suite.refuse_keys_of_other_kinds(table, variant)
        train = suite.resolve(suite.suite.train, key="suite.train") if suite.suite.train else None
        own = variant is not None and variant in suite.variants and suite.variants[variant].model is not None
        return cls(
            dataclasses.asdict(table),
            meta=model.meta_template,
            endpoint=model.endpoint,
            train_file=train,
            make_retriever=makers.retriever or builtin_retriever,
            config=suite,
            variant=variant,
            own_model=own,
        )

    def setup(self) -> InferSetup:
        """Return the parts of the table, built once; TemplateError when they do not build."""
        if self._setup is None:
            try:
                self._setup = InferSetup(
                    self.table,
                    meta=self.meta,
                    endpoint=self.endpoint,
                    train=self.train_rows,
                    make_retriever=self.make_retriever,
                )
            except (TemplateError, ConfigError) as exc:
                self._setup = TemplateError(str(exc))
        if isinstance(self._setup, TemplateError):
            raise TemplateError(str(self._setup))
        return self._setup

    def train_rows(self) -> list[dict[str, Any]]:
        """Return the rows of ``[suite] train`` (read once), the in-context examples' fields."""
        if self._train is None:
            self._train = load_train_rows(self.train_file) if self.train_file is not None else []
        return self._train

    def fields(self) -> list[TemplateReads]:
        """Return what the prompt, multi-turn and ICE templates read; TemplateError naming the key's line
        for a template that does not build."""
        config, variant = self.config, self.variant
        try:
            setup = self.setup()
        except TemplateError as exc:
            raise TemplateError(locate(config, variant, str(exc), own_model=self.own_model)) from exc

        def where(key: str) -> tuple[Path | None, int]:
            if config is None or config.path is None:
                return None, 0
            return config.path, line_of_key(config.lines, config.template_key(variant, key)) or 0

        return setup.fields(where)

    @property
    def default_params(self) -> dict[str, Any]:
        """Give the ``stop`` at the end of the model's turn of an LM meta template (completions endpoints)."""
        try:
            stop = self.setup().stop
        except TemplateError:  # reported when the case renders
            return {}
        return {"stop": list(stop)} if stop else {}

    @property
    def ppl(self) -> bool:
        """Tell whether the cases are scored per label (``inferencer = "ppl"``)."""
        return self.setup().ppl

    def prompt(self, case: PromptCase) -> Prompt:
        """Render the (first) prompt ``case`` sends."""
        setup = self.setup()
        if isinstance(case.input, str):
            return setup.single(case)
        conv = setup.conversation(case)
        return setup.send(conv.request(conv.request_turns()[0]))

    def label_prompts(self, case: PromptCase) -> list[tuple[str, Prompt]]:
        """Render each label and the prompt it scores (``inferencer = "ppl"``)."""
        return self.setup().labels(case)

    def follow_up(self, case: PromptCase, replies: Sequence[str]) -> Prompt | None:
        """Render the next prompt of a multi-turn case after ``replies`` (one per request so far), or None."""
        if isinstance(case.input, str):
            return None
        setup = self.setup()
        conv = setup.conversation(case)
        positions = conv.request_turns()
        if len(replies) >= len(positions):
            return None
        return setup.send(conv.request(positions[len(replies)], replies))

    def known_requests(self, case: PromptCase) -> list[Prompt]:
        """Render every request that does not depend on a model reply (all of them but in ``every`` mode;
        each label's prompt in the ppl mode)."""
        setup = self.setup()
        if setup.ppl:
            return [prompt for _, prompt in self.label_prompts(case)]
        if isinstance(case.input, str):
            return [self.prompt(case)]
        conv = setup.conversation(case)
        positions = conv.request_turns()
        if setup.infer_mode == "every":
            positions = positions[:1]
        return [setup.send(conv.request(p)) for p in positions]
