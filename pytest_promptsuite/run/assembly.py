"""What each suite runs with (prompts, checks, judge, models and pipeline, each made by its ``make_*`` hook),
and the run's response stores."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import cast

from pytest_promptsuite.checks.check_api import NO_JUDGE
from pytest_promptsuite.checks.check_api import CheckScope
from pytest_promptsuite.checks.check_api import Embed
from pytest_promptsuite.checks.compile_checks import CheckSet
from pytest_promptsuite.checks.compile_checks import CompiledChecks
from pytest_promptsuite.checks.compile_checks import SuiteChecks
from pytest_promptsuite.checks.compile_checks import compile_suite_checks
from pytest_promptsuite.checks.evaluator import Evaluator
from pytest_promptsuite.checks.evaluator import Transform
from pytest_promptsuite.config.options import RunOptions
from pytest_promptsuite.config.settings import ModelChoice
from pytest_promptsuite.config.settings import concurrency_of
from pytest_promptsuite.config.settings import judge_choice
from pytest_promptsuite.config.settings import model_choice
from pytest_promptsuite.config.suite import SuiteConfig
from pytest_promptsuite.config.tables import ModelConfig
from pytest_promptsuite.errors import CheckError
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import PromptSuiteError
from pytest_promptsuite.models.cache import DEFAULT_CACHE_DIR
from pytest_promptsuite.models.cache import Cassette
from pytest_promptsuite.models.cache import ResponseCache
from pytest_promptsuite.models.cache import ResponseStores
from pytest_promptsuite.models.cache import model_identity
from pytest_promptsuite.models.model_api import Model
from pytest_promptsuite.models.runner import ModelRunner
from pytest_promptsuite.prompts.case_prompts import CasePrompts
from pytest_promptsuite.prompts.prompt_sources import PromptMakers
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.io import load_summary_json
from pytest_promptsuite.results.io import stream_results
from pytest_promptsuite.results.records import RunInfo
from pytest_promptsuite.results.summary import Baseline
from pytest_promptsuite.run.pipeline import CasePipeline
from pytest_promptsuite.safety.scrub import public_url


if TYPE_CHECKING:
    from pytest_promptsuite.cases.prompt_case import PromptCase
    from pytest_promptsuite.checks.calibration import JudgeGate
    from pytest_promptsuite.checks.metric import ModelJudge
    from pytest_promptsuite.checks.response_format import ResponseFormat
    from pytest_promptsuite.models.model_api import Response
    from pytest_promptsuite.results.history import History
    from pytest_promptsuite.results.review_book import ReviewBook


def open_stores(options: RunOptions, *, invocation_dir: Path, is_worker: bool) -> ResponseStores:
    """Open the response cache (``.promptsuite_cache`` in the invocation folder, whatever pytest's rootdir) and
    cassettes the options ask for (a bad cassette is a ConfigError now). Only the controller starts a recording."""
    if options.record and options.replay:
        raise ConfigError("--prompt-record and --prompt-replay exclude each other")
    cache = None
    if not options.no_cache and not options.replay:
        cache = ResponseCache(invocation_dir / (options.cache or DEFAULT_CACHE_DIR))
    replay = Cassette(invocation_dir / options.replay, "replay") if options.replay else None
    record = _recording(invocation_dir / options.record, is_worker) if options.record else None
    return ResponseStores(cache=cache, replay=replay, record=record)


def _recording(path: Path, is_worker: bool) -> Cassette:
    """Open the ``--prompt-record`` cassette; only the controller starts the recording."""
    record = Cassette(path, "record")
    if not is_worker:
        record.start()
    return record


def open_baseline(options: RunOptions) -> Baseline | None:
    """Read the ``--prompt-baseline`` rows (of this shard only) and the run info of a ``summary.json`` beside them."""
    path, shard = options.baseline, options.shard
    if path is None:
        return None
    from pytest_promptsuite.results.usage import UsageTally
    from pytest_promptsuite.results.usage import prices_of_run

    tally = UsageTally()

    def count(row: CaseResult, value: Any) -> None:  # the tokens stay on disk: counted as they pass
        if isinstance(value, dict) and (shard is None or row.case_id in shard):
            tally.add_read(value)

    try:
        stored = stream_results(path, on_row=count)  # outputs and prompts stay on disk until a flip shows them
        summary = load_summary_json(path)
    except PromptSuiteError as exc:
        raise ConfigError(f"--prompt-baseline: {exc}") from exc
    rows = stored.rows if shard is None else [r for r in stored.rows if r.case_id in shard]
    run = summary.get("run") if summary else None
    info = RunInfo.from_dict(run) if isinstance(run, dict) else None
    usage = tally.report(prices_of_run(info))
    return Baseline(rows, str(path), options.baseline_variant, info, full=stored.full, usage=usage)


def open_reviews_and_history(options: RunOptions, *, is_worker: bool) -> tuple[ReviewBook | None, History | None]:
    """Read ``--prompt-reviews`` (every process that runs cases) and ``--prompt-history`` (the controller)."""
    reviews = history = None
    if options.reviews is not None:
        from pytest_promptsuite.results.review_book import load_reviews

        reviews = load_reviews(options.reviews)
    if options.history is not None and not is_worker:
        from pytest_promptsuite.results.history import load_history

        history = load_history([options.history])
    return reviews, history


def require_judge(
    compiled: Mapping[str, CompiledChecks], cases: Sequence[PromptCase], evaluator: Evaluator, shown: str
) -> None:
    """Stop collection (CheckError, a ``path:line`` per case) when a check a judge grades (``llm-rubric``) has
    no judge to ask: before any call, with the message each such check would end with."""
    if evaluator.judge is not None:
        return
    problems = [
        f"{shown}:{case.location.line}: case {case.case_id!r}: {where}: {NO_JUDGE}"
        for case in cases
        for where in _judged(compiled[case.case_id])
    ]
    if problems:
        raise CheckError("\n".join(dict.fromkeys(problems)))


def _judged(checks: CompiledChecks) -> list[str]:
    """Return where each check a judge grades is written among a case's checks (its own and the suite's)."""
    members = [
        member
        for entry in (*checks.entries, *checks.suite)
        for member in (entry.members if isinstance(entry, CheckSet) else (entry,))
    ]
    return [f"{member.where} ({member.name})" for member in members if member.check.needs_judge]


class Assembler:
    """Makes the parts of each suite through ``hook`` (pytest's ``config.hook``, or the
    ``promptsuite`` command's plugin manager).

    Args:
        hook: the hook relay the ``make_*`` hooks are called on.
        runner: runs the model calls; models are attached to it as they are made.
        options: the run's options (``--prompt-model``, ``--prompt-judge``, ...).
        invocation_dir: where relative paths given on the command line resolve.
        display: how a path is shown in messages.
        stores: the response cache and cassettes, for every model with I/O.
        config: passed to ``pytest_promptsuite_make_model`` (pytest's config; None outside).
        workers: pytest-xdist workers sharing the run's concurrency bound.
    """

    def __init__(
        self,
        hook: Any,
        *,
        runner: ModelRunner,
        options: RunOptions,
        invocation_dir: Path,
        display: Callable[[Path], str],
        stores: ResponseStores | None = None,
        config: Any = None,
        workers: int = 1,
    ) -> None:
        self.hook = hook
        self.runner = runner
        self.options = options
        self.invocation_dir = invocation_dir
        self.display = display
        self.stores = stores
        self.config = config
        self.workers = max(1, workers)
        #: What to add to a model's settings before a real run, said once at its start (no ``max_tokens``).
        self.hints: list[str] = []

    def model_choice(self, suite: SuiteConfig, variant: str | None = None) -> ModelChoice:
        """Return the model a suite (prompt ``variant``) runs, as :func:`~.settings.model_choice` picks it."""
        return model_choice(self.options, suite, variant, invocation_dir=self.invocation_dir)

    def describe_model(self, suite: SuiteConfig, variant: str | None) -> dict[str, Any]:
        """Describe a variant's model as a run records it: spec, public base URL, params, prices, and
        whether its answers never vary (a ``deterministic`` model, or a replay)."""
        choice = self.model_choice(suite, variant)
        settings = choice.settings
        try:
            model = self.make_model(settings, choice.root)
            deterministic = bool(self.options.replay) or bool(getattr(model, "deterministic", False))
        except PromptSuiteError:
            deterministic = False
        return {
            "spec": settings.spec,
            "base_url": public_url(settings.base_url) if settings.base_url else None,
            "params": dict(settings.params),
            "deterministic": deterministic,
            **({} if settings.prices is None else {"prices": dataclasses.asdict(settings.prices)}),
        }

    def make_model(self, settings: ModelConfig, root: Path, where: str | None = None) -> Model:
        """Make the model for ``settings`` through the hook; a problem is a ConfigError prefixed with ``where``."""
        try:
            model: Model = self.hook.pytest_promptsuite_make_model(
                config=self.config, spec=settings.spec, settings=settings, root=root
            )
        except PromptSuiteError as exc:
            if where is None:
                raise
            raise ConfigError(f"{where}: {exc}") from exc
        return model

    def prompts(
        self,
        suite: SuiteConfig,
        settings: ModelConfig | None = None,
        variant_settings: dict[str, ModelConfig] | None = None,
    ) -> CasePrompts:
        """Compile what each case of ``suite`` sends (``[template]`` and its variants), so that a mistake in a
        template, task prompt or renderer is reported before any case runs."""
        if variant_settings is None:
            variant_settings = {
                name: self.model_choice(suite, name).settings
                for name, variant in suite.variants.items()
                if variant.model is not None
            }
        hook = self.hook
        makers = PromptMakers(
            renderer=lambda name, params: hook.pytest_promptsuite_make_renderer(name=name, params=params),
            filter=lambda name: hook.pytest_promptsuite_make_jinja_filter(name=name),
            parser=lambda name, params: hook.pytest_promptsuite_make_output_parser(name=name, params=params),
            retriever=hook.pytest_promptsuite_make_retriever,
        )
        return CasePrompts.from_suite(
            suite,
            hook.pytest_promptsuite_make_prompt_source,
            settings or self.model_choice(suite).settings,
            makers=makers,
            variant_settings=variant_settings,
        )

    def suite_checks(self, suite: SuiteConfig) -> SuiteChecks:
        """Compile the config's ``[[checks]]`` (a CheckError names the config and entry)."""
        source = self.display(suite.path) if suite.path is not None else "suite config"
        return compile_suite_checks(
            suite.checks,
            self.hook.pytest_promptsuite_make_check,
            base_dir=suite.root,
            source=source,
            scope=CheckScope(suite.root, suite.python_modules),
        )

    def _judge(self, suite: SuiteConfig) -> tuple[ModelJudge | None, str | None]:
        """Make the judge model of ``llm-rubric`` checks (:func:`~.settings.judge_choice`), if any."""
        choice = judge_choice(self.options, suite, invocation_dir=self.invocation_dir)
        if choice is None:
            return None, None
        # the judge's answers are cached and replayed like the model's
        made = self.make_model(choice.settings, choice.root, choice.where)
        model = self.runner.attach(
            made, concurrency=self._share(choice), stores=self.stores, prefetched=False, adaptive=choice.adaptive
        )
        from pytest_promptsuite.checks.metric import ModelJudge  # the judge's layer: loaded when a suite has a judge

        judge = ModelJudge(
            model,
            self.runner,
            choice.settings.params,
            template=judge_template(suite),
            repeat=self.options.judge_repeat or suite.judge.repeat,
            gate=self.judge_gate(suite),
            identity=model_identity(made),
        )
        return judge, choice.settings.spec

    def judge_gate(self, suite: SuiteConfig) -> JudgeGate | None:
        """Return when the suite's judge may gate (``[judge] min_agreement`` and its calibration), if it is set."""
        settings = suite.judge
        if settings.min_agreement is None:
            return None
        from pytest_promptsuite.checks.calibration import JudgeGate
        from pytest_promptsuite.checks.calibration import read_calibration

        path = suite.resolve(settings.calibration, key="judge.calibration")
        shown = self.display(path)
        calibration = read_calibration(path, shown)
        return JudgeGate(settings.min_agreement, settings.min_labels, shown, calibration)

    def _embedding(self, suite: SuiteConfig) -> Embed | None:
        """Make the embedding model of ``similar:cosine`` checks (``[models.embedding]``), if any: a model
        whose ``embed(texts)`` returns one vector per text, or an endpoint model's ``/embeddings``, whose calls
        are cached, recorded and bounded as the judge's are."""
        settings = suite.models.get("embedding")
        if settings is None:
            return None
        where = f"{suite.where('models.embedding.spec')}: models.embedding.spec = {settings.spec!r}"
        made = self.make_model(settings, suite.root, where)
        embed = getattr(made, "embed", None)
        if callable(embed):
            return cast("Embed", embed)
        endpoint = getattr(made, "embeddings", None)
        if not callable(endpoint):
            raise ConfigError(f"{where} does not embed texts (a model with an embed(texts) method, or openai:MODEL)")
        try:
            embeddings: Model = endpoint(settings.params)
        except PromptSuiteError as exc:
            raise ConfigError(f"{where}: {exc}") from exc
        concurrency, adaptive = concurrency_of(settings.concurrency, settings)  # its own table's, as the judge's
        choice = ModelChoice(settings, suite.root, where, concurrency, batch=False, adaptive=adaptive)
        model = self.runner.attach(
            embeddings, concurrency=self._share(choice), stores=self.stores, prefetched=False, adaptive=adaptive
        )
        from pytest_promptsuite.checks.embedding import ModelEmbedder

        return ModelEmbedder(model, self.runner, settings.spec, settings.params)

    def evaluator(self, suite: SuiteConfig) -> Evaluator:
        """Make the checks side of a suite: its ``[[checks]]``, judge, embedding model, review policy and
        output transform."""
        hook = self.hook
        judge, judge_name = self._judge(suite)
        return Evaluator(
            embed=self._embedding(suite),
            make=hook.pytest_promptsuite_make_check,
            suite=self.suite_checks(suite),
            judge=judge,
            judge_name=judge_name,
            review_fails=suite.review.outcome == "failed",
            transform=_transform(hook.pytest_promptsuite_transform_output),
        )

    def _share(self, choice: ModelChoice) -> int:
        """Return this process's share of a model's bound on calls in flight (pytest-xdist workers split it)."""
        return max(1, -(-choice.concurrency // self.workers))

    def _attached(self, choice: ModelChoice) -> Model:
        """Make a model and attach it to the runner, its concurrency bound shared by pytest-xdist workers."""
        settings = choice.settings
        if settings.budget_usd is not None and settings.prices is None:
            raise ConfigError(
                f"[model] budget_usd of {settings.spec} needs [model] prices = "
                "{prompt = USD per 1M tokens, completion = USD per 1M tokens}"
            )
        model = self.make_model(settings, choice.root, choice.where)
        if not (self.options.replay or self.options.batch_results):  # calls will be made: say what they lack
            for hint in (settings.length_hint(), _key_hint(model)):
                if hint is not None and hint not in self.hints:
                    self.hints.append(hint)
        return self.runner.attach(
            model,
            concurrency=self._share(choice),
            stores=self.stores,
            batch=choice.batch,
            budget_usd=settings.budget_usd,
            prices=settings.prices,
            adaptive=choice.adaptive,
        )

    def pipeline(self, suite: SuiteConfig) -> CasePipeline:
        """Make a suite's whole pipeline, with a model of its own for each variant that has one."""
        choice = self.model_choice(suite)
        settings = choice.settings
        model = self._attached(choice)
        own: dict[str, tuple[Model, ModelConfig]] = {}
        for name, variant in suite.variants.items():
            if variant.model is not None:
                variant_choice = self.model_choice(suite, name)
                own[name] = (self._attached(variant_choice), variant_choice.settings)
        prompts = self.prompts(suite, settings, {name: s for name, (_, s) in own.items()})
        formats = _formats(suite, settings, {name: s for name, (_, s) in own.items()})
        return CasePipeline(
            model,
            self.runner,
            params=_with_format(settings.params, formats.get("")),
            evaluator=self.evaluator(suite),
            prompts=prompts,
            variant_models={name: (m, _with_format(s.params, formats.get(name))) for name, (m, s) in own.items()},
            prices={"": settings.prices, **{name: s.prices for name, (_, s) in own.items()}},
            formats=formats,
            user=self._user_model(suite),
        )

    def _user_model(self, suite: SuiteConfig) -> tuple[Model, dict[str, Any]] | None:
        """Make the model of ``[models.user]`` (the simulated user of conversations), if the suite names one: its
        calls cached, recorded, bounded and within the budget as the model's are, never started ahead."""
        settings = suite.models.get("user")
        if settings is None:
            return None
        where = f"{suite.where('models.user.spec')}: models.user.spec = {settings.spec!r}"
        concurrency, adaptive = concurrency_of(settings.concurrency, settings)
        choice = ModelChoice(settings, suite.root, where, concurrency, batch=False, adaptive=adaptive)
        made = self.make_model(settings, suite.root, where)
        model = self.runner.attach(
            made,
            concurrency=self._share(choice),
            stores=self.stores,
            prefetched=False,
            budget_usd=settings.budget_usd,
            prices=settings.prices,
            adaptive=adaptive,
        )
        return model, dict(settings.params)


def judge_template(suite: SuiteConfig) -> str:
    """Return the judge's prompt template: ``[judge] template`` or ``template_file``, else the built-in one; a
    ConfigError for both, an unreadable file, or a template without ``{output}``."""
    from pytest_promptsuite.checks.metric import RUBRIC_PROMPT

    settings = suite.judge
    if settings.template is not None and settings.template_file is not None:
        raise ConfigError(f"{suite.where('judge.template_file')}: [judge] has both 'template' and 'template_file'")
    if settings.template_file is None:
        template, key = settings.template or RUBRIC_PROMPT, "judge.template"
    else:
        template, key = _read_text(suite, settings.template_file, "judge.template_file"), "judge.template_file"
    if "{output}" not in template:
        raise ConfigError(f"{suite.where(key)}: the judge's template has no {{output}}: write where the output goes")
    return template


def _read_text(suite: SuiteConfig, relative: str, key: str) -> str:
    """Read a UTF-8 file the config names at ``key``; ConfigError naming the key's line when it cannot be read."""
    path = suite.resolve(relative, key=key)
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{suite.where(key)}: {key} = {relative!r}: cannot read it ({exc})") from exc


def _formats(
    suite: SuiteConfig, settings: ModelConfig, variants: Mapping[str, ModelConfig]
) -> dict[str, ResponseFormat]:
    """Read the ``response_format`` of the suite's model ("") and of each variant's own model."""
    found: dict[str, ResponseFormat] = {}
    if settings.response_format is None and all(own.response_format is None for own in variants.values()):
        return found
    from pytest_promptsuite.checks.response_format import response_format  # pydantic, jsonschema: when one is set

    if settings.response_format is not None:
        found[""] = response_format(settings.response_format, suite, "model.response_format")
    for name, own in variants.items():
        if own.response_format is not None:
            found[name] = response_format(own.response_format, suite, f"variants.{name}.model.response_format")
    return found


def _with_format(params: Mapping[str, Any], found: ResponseFormat | None) -> dict[str, Any]:
    """Return a model's request params with its ``response_format`` body (as they are without one)."""
    return {**params, "response_format": found.body()} if found is not None else dict(params)


def _transform(caller: Any) -> Transform:
    """Return the output transform that calls ``pytest_promptsuite_transform_output`` once some plugin implements
    it (a call nobody implements still costs, 50,000 times)."""

    def transform(output: str, case: PromptCase, response: Response | None) -> str | None:
        if not caller.get_hookimpls():
            return None
        result: str | None = caller(output=output, case=case, response=response)
        return result

    return transform


def _key_hint(model: Model) -> str | None:
    """Return what a model says its calls lack (an API key for a hosted endpoint), if it says anything."""
    hint = getattr(model, "key_hint", None)
    return hint() if callable(hint) else None
