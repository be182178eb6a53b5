"""Suites use the engine: a case and its suite's ``[template]`` / ``[model]`` into what is sent.

The row of a case is ``input`` (also ``question``), each key of ``vars`` at the top level, and
``answer`` (the output column, masked in the prompt). The train file gives the ICE rows. The LM
parser's string goes to completion endpoints (and to chat endpoints as one user message); the API
parser's messages go to chat endpoints with OpenAI roles. A multi-turn case (``input`` a list) sends
the requests of its ``infer_mode`` one after the other, each reply feeding the next.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from ..cases import PromptCase
from ..errors import ConfigError
from ..errors import TemplateError
from .builtin import builtin_meta
from .builtin import resolve_meta
from .meta import APITemplateParser
from .meta import LMTemplateParser
from .meta import MetaTemplate
from .meta import make_meta
from .meta import to_openai_messages
from .multimodal import MMPromptTemplate
from .multiturn import Conversation
from .multiturn import MultiTurnPromptTemplate
from .prompt import Prompt
from .renderers import MakeFilter
from .renderers import MakeParser
from .renderers import MakeRenderer
from .renderers import PromptSource
from .renderers import prompt_source
from .renderers import variant_template
from .request import make_template
from .request import render_prompt
from .retrievers import RETRIEVERS
from .retrievers import RandomRetriever
from .retrievers import Retriever
from .retrievers import ZeroRetriever
from .retrievers import make_retriever


if TYPE_CHECKING:
    from ..suite import ModelConfig
    from ..suite import SuiteConfig


__all__ = ["CasePrompts", "case_row", "load_train_rows", "suite_prompts"]

#: ``[template]`` keys this builder reads (the others belong to task prompts and template files).
INFER_CFG_KEYS = (
    "prompt_template",
    "ice_template",
    "retriever",
    "output_column",
    "infer_mode",
    "multiturn_template",
)
OTHER_KEYS = ("task_prompts", "task", "template_file", "template", "renderer")
#: A case with no template: the input, or one turn per input with its answer.
DEFAULT_TEMPLATE = {"round": [{"role": "HUMAN", "prompt": "{input}"}, {"role": "BOT", "prompt": "{answer}"}]}
DEFAULT_MULTITURN = {
    "round": [{"role": "HUMAN", "prompt": "{question}"}, {"role": "BOT", "prompt": "{answer}"}]
}


def case_row(case: PromptCase) -> dict[str, Any]:
    """The row a case fills templates with: ``input``, ``question``, the ``vars``, ``answer``."""
    row: dict[str, Any] = {"input": case.input, "question": case.input}
    row.update(case.vars)
    if case.answer is not None:
        row["answer"] = case.answer
    return row


def _train_row(obj: Any, where: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise TemplateError(f"{where}: a train row must be a JSON object")
    row = dict(obj)
    extra = row.pop("vars", None)
    if isinstance(extra, dict):
        row.update(extra)
    if "input" in row and "question" not in row:
        row["question"] = row["input"]
    return row


def load_train_rows(path: Path) -> list[dict[str, Any]]:
    """The train rows of a JSONL file (blank lines skipped); ``vars`` are lifted to the top level."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TemplateError(f"{path}: cannot read the train file ([suite] train): {exc.strerror}") from exc
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise TemplateError(f"{path}:{number}: not valid JSON: {exc}") from exc
        rows.append(_train_row(obj, f"{path}:{number}"))
    return rows


def _is_api_meta(meta: MetaTemplate) -> bool:
    roles = [r for r in meta.round if not isinstance(r, str)]
    return bool(roles) and all("api_role" in r for r in roles)


#: ``pytest_promptsuite_make_retriever(name=..., params=...)``: a retriever, or None if unknown.
RetrieverHook = Callable[..., Any]


def _retriever(spec: Any, hook: RetrieverHook | None) -> Retriever:
    """The suite's retriever: through the plugin hook when there is one (third-party retrievers,
    a Topk with a custom embedding), else the built-ins."""
    if hook is None or not isinstance(spec, Mapping):
        return make_retriever(spec, key="template.retriever")
    params = {k: v for k, v in spec.items() if k != "type"}
    name = spec.get("type", "ZeroRetriever")
    retriever = hook(name=name, params=params)
    if retriever is None:
        raise TemplateError(
            f"template.retriever.type: unknown retriever {name!r} (built-ins: {', '.join(RETRIEVERS)}; "
            "a plugin adds one with the pytest_promptsuite_make_retriever hook)"
        )
    return retriever  # type: ignore[no-any-return]


class _Setup:
    """The parts built from one (merged) ``[template]`` table; built once, on first use."""

    def __init__(
        self,
        table: Mapping[str, Any],
        *,
        meta: Any,
        endpoint: str,
        train: Callable[[], list[dict[str, Any]]],
        hook: RetrieverHook | None = None,
    ) -> None:
        used = [k for k in OTHER_KEYS if table.get(k) is not None]
        if used and not any(table.get(k) is not None for k in ("prompt_template", "ice_template")):
            raise TemplateError(
                f"[template] {used[0]} is not handled by the infer_cfg templates; give prompt_template"
            )
        self.configured = any(table.get(k) is not None for k in ("prompt_template", "ice_template"))

        def spec_of(key: str) -> Any:
            value = table.get(key)
            return {"template": value} if isinstance(value, str) else value

        pt = spec_of("prompt_template")
        self.prompt_template = make_template(pt, key="template.prompt_template") if pt is not None else None
        it = spec_of("ice_template")
        self.ice_template = make_template(it, key="template.ice_template") if it is not None else None
        mt = spec_of("multiturn_template")
        if mt is not None:
            mt = {"type": "MultiTurnPromptTemplate", **mt}
            self.multiturn = make_template(mt, key="template.multiturn_template")
        elif isinstance(self.prompt_template, MultiTurnPromptTemplate):
            self.multiturn = self.prompt_template
        else:
            self.multiturn = MultiTurnPromptTemplate(DEFAULT_MULTITURN, name="default multi-turn template")
        if not self.configured:
            self.prompt_template = make_template({"template": DEFAULT_TEMPLATE}, key="default template")
        spec = table.get("retriever") or {"type": "ZeroRetriever"}
        self.retriever: Retriever = _retriever(spec, hook)
        self.output_column = table.get("output_column") or "answer"
        self.infer_mode = table.get("infer_mode") or "every"
        self.train = train
        #: No template and no meta template: a string input is sent as it is.
        self.plain = not self.configured and meta is None
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

    def send(self, intermediate: Any) -> Prompt:
        """The parser's output as it is sent: a string, or OpenAI chat messages."""
        value = self.parser.parse(intermediate, "gen")
        if isinstance(self.parser, APITemplateParser):
            return to_openai_messages(value)  # type: ignore[no-any-return]
        return value  # type: ignore[no-any-return]

    def single(self, case: PromptCase) -> Prompt:
        if self.plain and isinstance(case.input, str):
            return case.input
        row = case_row(case)
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

    def conversation(self, case: PromptCase) -> Conversation:
        assert isinstance(case.input, list)
        turns = len(case.input)
        if isinstance(case.answer, list):  # one ground truth per turn
            padded = list(case.answer) + [""] * (turns - len(case.answer))
        elif case.answer is not None:  # the final turn's ground truth
            padded = [""] * (turns - 1) + [case.answer]
        else:
            padded = [""] * turns
        row = {"input": case.input, **case.vars, "question": list(case.input), "answer": padded}
        bot = (self.meta.generate_role if self.meta is not None else None) or "BOT"
        conv = self.multiturn.conversation(row, infer_mode=self.infer_mode, bot_role=bot)
        if not conv.request_turns():
            raise TemplateError(
                f"case {case.case_id!r}: the multi-turn template has no {bot!r} turn, so nothing is sent"
            )
        return conv


class CasePrompts:
    """What each case of a suite sends, from its ``[template]`` table and its model's meta template.

    ``variants`` maps a variant name to the ``[template]`` keys it overrides.
    """

    def __init__(
        self,
        template: Mapping[str, Any] | None = None,
        *,
        meta_template: Any = None,
        endpoint: str = "chat",
        train_file: Path | None = None,
        variants: Mapping[str, Mapping[str, Any]] | None = None,
        make_retriever: RetrieverHook | None = None,
        sources: Mapping[str | None, PromptSource] | None = None,
    ) -> None:
        self.template = {k: v for k, v in (template or {}).items() if v is not None}
        self.meta_template = meta_template
        self.endpoint = endpoint
        self.train_file = train_file
        self.variants = {
            k: {kk: vv for kk, vv in v.items() if vv is not None} for k, v in (variants or {}).items()
        }
        self._setups: dict[str | None, _Setup | TemplateError] = {}
        self._train: list[dict[str, Any]] | None = None
        self.make_retriever = make_retriever
        #: Per variant (None: ``[template]`` itself), a task prompt or string template that
        #: replaces the infer_cfg engine (``task_prompts`` / ``template_file`` / ``template``).
        self.sources = dict(sources or {})

    @classmethod
    def from_suite(
        cls,
        suite: SuiteConfig | None,
        settings: ModelConfig | None = None,
        *,
        make_retriever: RetrieverHook | None = None,
        make_renderer: MakeRenderer | None = None,
        make_filter: MakeFilter | None = None,
        make_parser: MakeParser | None = None,
    ) -> CasePrompts:
        """The builder of a suite config (None: no config) with the model settings in use.

        The ``make_*`` callables are the plugin's hooks (retrievers, renderers, Jinja filters,
        output parsers). Task prompts and template files are loaded and compiled now, so a
        mistake in them is a ConfigError before any case runs.
        """
        if suite is None:
            return cls(make_retriever=make_retriever)
        settings = settings or suite.model
        train = suite.resolve(suite.suite.train, key="suite.train") if suite.suite.train else None
        # with variants, [template] itself is only the base they override: never run on its own
        tables = {name: variant_template(suite, name) for name in (list(suite.variants) or [None])}
        sources = {}
        for name, table in tables.items():
            source = prompt_source(
                suite, table, model=settings.spec,
                make_renderer=make_renderer, make_filter=make_filter, make_parser=make_parser,
            )
            if source is not None:
                sources[name] = source
        return cls(
            suite.template.model_dump(),
            meta_template=settings.meta_template,
            endpoint=settings.endpoint,
            train_file=train,
            variants={name: t.model_dump() for name, t in tables.items() if name is not None},
            make_retriever=make_retriever,
            sources=sources,
        )

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

        Raises :class:`~pytest_promptsuite.templates.task_prompts.OutputParserError`."""
        source = self.sources.get(variant)
        return source.parse_output(text) if source is not None else text

    def _train_rows(self) -> list[dict[str, Any]]:
        if self._train is None:
            self._train = load_train_rows(self.train_file) if self.train_file is not None else []
        return self._train

    def _setup(self, variant: str | None) -> _Setup:
        if variant not in self._setups:
            table = dict(self.template)
            if variant is not None:
                table.update(self.variants.get(variant, {}))
            try:
                self._setups[variant] = _Setup(
                    table,
                    meta=self.meta_template,
                    endpoint=self.endpoint,
                    train=self._train_rows,
                    hook=self.make_retriever,
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
        """Every request that does not depend on a model reply (all of them but in ``every`` mode)."""
        if isinstance(case.input, str) or variant in self.sources:
            return [self.prompt(case, variant=variant)]
        setup = self._setup(variant)
        conv = setup.conversation(case)
        positions = conv.request_turns()
        if setup.infer_mode == "every":
            positions = positions[:1]
        return [setup.send(conv.request(p)) for p in positions]


def suite_prompts(paths: Sequence[str]) -> Callable[[PromptCase], CasePrompts]:
    """For ``promptsuite render``: the builder of each case's suite, as ``--prompt-suite`` reads them."""
    from ..suite import find_config
    from ..suite import load_config
    from ..suite import suite_targets

    owners: list[tuple[Path, CasePrompts]] = []
    by_config: dict[Path, CasePrompts] = {}
    for raw in paths:
        try:
            suite, targets = suite_targets(Path(raw))
        except Exception:  # noqa: BLE001 - reported by the caller's own collection
            continue
        if suite is not None:
            prompts = CasePrompts.from_suite(suite)
            owners.extend((t.resolve(), prompts) for t in targets)

    def of(case: PromptCase) -> CasePrompts:
        path = Path(case.location.path).resolve()
        for target, prompts in owners:
            if path == target or target in path.parents:
                return prompts
        found = find_config(path, Path.cwd())
        if found is None:
            return CasePrompts()
        if found not in by_config:
            by_config[found] = CasePrompts.from_suite(load_config(found))
        return by_config[found]

    return of
