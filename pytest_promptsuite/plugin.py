"""pytest glue: options, collection of case files, the run object, the summary and the gates.

The run object (:class:`PromptRun`) lives in ``config.stash`` and is registered as a plugin. It
aggregates from the reports every item sends (``pytest_runtest_logreport``), so a serial run, a
pytest-xdist run and merged shards add up the same way; only the controller writes files and
decides the gates.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
from pathlib import Path
from typing import Any

import pytest

from . import builtins
from . import hookspecs
from .cases import CaseLocation
from .cases import PromptCase
from .cases import did_you_mean
from .cases import load_cases
from .checks import CompiledChecks
from .checks import Evaluator
from .checks import ModelJudge
from .checks import compile_suite_checks
from .checks.base import CaseResult
from .errors import CheckError
from .errors import ConfigError
from .errors import PromptSuiteError
from .items import RESULT_PROPERTY
from .items import PromptFile
from .items import PromptItem
from .items import run_key
from .models import is_sync
from .models.cache import CachingModel
from .models.cache import Cassette
from .models.cache import ResponseCache
from .models.runner import DEFAULT_CONCURRENCY
from .models.runner import ModelRunner
from .pipeline import CasePipeline
from .prefetch import Prefetcher
from .prefetch import xdist_queue
from .report import summary_lines
from .report import write_report
from .results import Summary
from .results import ThresholdPolicy
from .results import load_results
from .results import summarize
from .shard import Shard
from .shard import parse_shard
from .suite import ModelConfig
from .suite import SuiteConfig
from .suite import find_config
from .suite import load_config
from .suite import suite_targets
from .templates import CasePrompts


__all__ = ["PromptRun", "run_key"]



def _fraction(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a number from 0 to 1 (write 0.95, not 95%)"
        ) from None
    if not 0 <= number <= 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not from 0 to 1 (write 0.95, not 95)")
    return number


def _shard(value: str) -> Shard:
    try:
        return parse_shard(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _results_path(value: str) -> Path:
    path = Path(value)
    if not path.exists():
        raise argparse.ArgumentTypeError(
            f"{value!r}: no such file or folder (give a results.jsonl or a --prompt-report folder)"
        )
    if path.is_dir() and not (path / "results.jsonl").is_file():
        raise argparse.ArgumentTypeError(f"{value!r}: this folder has no results.jsonl")
    return path


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} must be at least 1")
    return number


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)
    pluginmanager.register(builtins, "promptsuite-builtins")
    _load_installed_plugins(pluginmanager)


def _load_installed_plugins(pluginmanager: pytest.PytestPluginManager) -> None:
    """Register the plugins of the ``promptsuite.plugins`` entry point group (which the
    ``promptsuite`` command loads too); ``-p no:NAME`` blocks one, and a module that is also a
    ``pytest11`` plugin is not registered twice."""
    for entry_point in importlib.metadata.entry_points(group=hookspecs.ENTRY_POINT_GROUP):
        if pluginmanager.get_plugin(entry_point.name) is not None or pluginmanager.is_blocked(
            entry_point.name
        ):
            continue
        plugin = entry_point.load()
        if not pluginmanager.is_registered(plugin):
            pluginmanager.register(plugin, name=entry_point.name)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("promptsuite", "prompt regression suites (pytest-promptsuite)")
    group.addoption(
        "--prompt-suite",
        action="append",
        default=[],
        metavar="PATH",
        help="Case file (*.jsonl), suite config (*.toml) or folder of them; repeatable. "
        "With no positional paths only the suites are collected",
    )
    group.addoption(
        "--prompt-config",
        default=None,
        metavar="PATH",
        help="Suite config (TOML); default: promptsuite.toml beside the case file, "
        "else [tool.promptsuite] in pyproject.toml",
    )
    group.addoption(
        "--prompt-model",
        default=None,
        metavar="SPEC",
        help="fake (default), fake:RULES.json, openai:MODEL or a model named in the config",
    )
    group.addoption(
        "--prompt-judge",
        default=None,
        metavar="SPEC",
        help="Judge model for llm-rubric checks: a model named in the config or a spec "
        "(default: [models.judge] of the config)",
    )
    group.addoption(
        "--prompt-report",
        default=None,
        metavar="DIR",
        help="Write results.jsonl, summary.json, slices.csv, summary.md and dashboard.html into DIR",
    )
    group.addoption(
        "--prompt-min-pass-rate",
        type=_fraction,
        default=None,
        metavar="X",
        help="Default per-slice pass-rate threshold, 0..1 (default 1.0, or the config's)",
    )
    group.addoption(
        "--prompt-baseline",
        type=_results_path,
        default=None,
        metavar="PATH",
        help="results.jsonl (or report folder) of an earlier version to diff against",
    )
    group.addoption(
        "--prompt-max-regression",
        type=_fraction,
        default=None,
        metavar="X",
        help="Largest allowed drop of a slice's pass rate against the baseline, 0..1 "
        "(default 0.0, or the config's)",
    )
    group.addoption(
        "--prompt-shard",
        type=_shard,
        default=None,
        metavar="K/N",
        help="Run only the K-th (from 1) of N deterministic shards of the cases",
    )
    group.addoption(
        "--prompt-base-url",
        default=None,
        metavar="URL",
        help="Endpoint for openai: models, e.g. http://localhost:8000/v1 (else the config's, else "
        "OPENAI_BASE_URL); the key comes from the environment only",
    )
    group.addoption(
        "--prompt-concurrency",
        type=_positive,
        default=None,
        metavar="N",
        help=f"Model calls in flight at once (default {DEFAULT_CONCURRENCY}, or [model] concurrency)",
    )
    group.addoption(
        "--prompt-variant",
        action="append",
        default=[],
        metavar="NAME",
        help="Run only this prompt version ([variants.NAME] of the suite config); repeatable. "
        "Default: every variant",
    )
    group.addoption(
        "--prompt-repeat",
        type=_positive,
        default=1,
        metavar="N",
        help="Run every case N times (item ids get [repeat-0] .. [repeat-N-1])",
    )
    group.addoption(
        "--prompt-cache",
        default=None,
        metavar="DIR",
        help="Response cache folder (default .promptsuite_cache under the rootdir)",
    )
    group.addoption(
        "--prompt-no-cache",
        action="store_true",
        default=False,
        help="Neither read nor write the response cache",
    )
    group.addoption(
        "--prompt-record",
        default=None,
        metavar="PATH",
        help="Write every model answer of this run to a cassette file (JSONL) to commit",
    )
    group.addoption(
        "--prompt-replay",
        default=None,
        metavar="PATH",
        help="Answer from a cassette only, never calling the endpoint; a missing answer is an error",
    )


def pytest_configure(config: pytest.Config) -> None:
    run = PromptRun(config)
    config.stash[run_key] = run
    config.pluginmanager.register(run, "promptsuite-run")
    suites = run.suite_args()
    if suites:
        if config.args_source is pytest.Config.ArgsSource.ARGS:
            config.args = [*config.args, *suites]
        else:
            config.args = suites


def pytest_unconfigure(config: pytest.Config) -> None:
    run = config.stash.get(run_key, None)
    if run is not None:
        run.close()
        del config.stash[run_key]
        config.pluginmanager.unregister(run)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> PromptFile | None:
    if file_path.suffix != ".jsonl":
        return None
    run = parent.config.stash[run_key]
    if run.wants(file_path) or parent.session.isinitpath(file_path):
        return PromptFile.from_parent(parent, path=file_path)
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    shard: Shard | None = config.getoption("prompt_shard")
    if shard is None:
        return
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        if isinstance(item, PromptItem) and item.case.case_id not in shard:
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


class PromptRun:
    """State of one pytest run: suites, models, the results every item reported, the gates."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.is_worker = hasattr(config, "workerinput")
        self.invocation_dir = config.invocation_params.dir
        self._baseline = None if self.is_worker else self._load_baseline()
        self.seen: dict[str, str] = {}
        self._displayed: dict[Path, str] = {}
        self.rows: list[CaseResult] = []
        self.summary: Summary | None = None
        self.runner = ModelRunner()
        self.repeats: int = config.getoption("prompt_repeat")
        self.cache, self.replay, self.record = self._response_stores()
        self._prefetcher: Prefetcher | None = None
        self._planned = 0
        #: Resolved ``--prompt-suite`` targets and the config that named them (if one did).
        self._roots: list[tuple[Path, Path | None]] = []
        self._configs: dict[Path | None, SuiteConfig] = {}
        self._pipelines: dict[Path | None, CasePipeline] = {}
        self._excluded: set[Path] = set()
        self._prompt_nodeids: set[str] = set()
        self._failed_reports = 0
        self._failed_prompt_reports = 0
        self._explicit_config: Path | None = None
        option = config.getoption("prompt_config")
        if option:
            self._explicit_config = self._load_config(Path(option), usage=True).path

    # -- suites and configs -------------------------------------------------------------------

    def _load_config(self, path: Path, *, usage: bool) -> SuiteConfig:
        resolved = path.resolve()
        if resolved in self._configs:
            return self._configs[resolved]
        try:
            suite = load_config(path)
        except PromptSuiteError as exc:
            if usage:
                raise pytest.UsageError(str(exc)) from exc
            raise
        self._configs[resolved] = suite
        if suite.suite.train is not None:
            self._excluded.add(suite.resolve(suite.suite.train, key="suite.train"))
        return suite

    def suite_args(self) -> list[str]:
        """The paths to collect for ``--prompt-suite``; configs are loaded now (usage errors)."""
        paths: list[str] = []
        for raw in self.config.getoption("prompt_suite"):
            path = Path(raw)
            if not path.is_absolute():
                path = self.invocation_dir / path
            if not path.exists():
                raise pytest.UsageError(f"--prompt-suite {raw}: no such file or folder")
            suite, targets = suite_targets(path, load=lambda p: self._load_config(p, usage=True))
            owner = suite.path if suite is not None else None
            if suite is None and path.is_file() and self._explicit_config is None:
                found = find_config(path, self.config.rootpath)  # a bad config: usage error now
                if found is not None:
                    self._load_config(found, usage=True)
            for target in targets:
                self._roots.append((target.resolve(), owner))
                paths.append(str(target))
        return paths

    def wants(self, file_path: Path) -> bool:
        """Whether a ``*.jsonl`` file found by pytest is a case file of a ``--prompt-suite``."""
        resolved = file_path.resolve()
        if resolved in self._excluded:
            return False
        return self._root_of(resolved) is not None

    def _root_of(self, resolved: Path) -> tuple[Path, Path | None] | None:
        for root, owner in self._roots:
            if resolved == root or root in resolved.parents:
                return root, owner
        return None

    def suite_for(self, case_file: Path) -> Path | None:
        """Load (once) the config of a case file and make its pipeline; return its key."""
        root = self._root_of(case_file.resolve())
        if self._explicit_config is not None:
            key: Path | None = self._explicit_config
        elif root is not None and root[1] is not None:
            key = root[1]
        else:
            found = find_config(case_file, self.config.rootpath)
            key = found.resolve() if found is not None else None
            if key is not None:
                self._load_config(key, usage=False)
            else:
                self._configs.setdefault(None, SuiteConfig())
        if key not in self._pipelines:
            self._pipelines[key] = self._make_pipeline(self._configs[key])
        return key

    def variants_for(self, key: Path | None) -> list[str | None]:
        """The prompt versions the cases of a suite run in: every ``[variants.NAME]`` of its
        config, or those ``--prompt-variant`` names; ``[None]`` for a config without variants."""
        suite = self._configs[key]
        if not suite.variants:
            return [None]
        wanted = self.config.getoption("prompt_variant")
        if not wanted:
            return list(suite.variants)
        unknown = [name for name in wanted if name not in suite.variants]
        if unknown:
            raise ConfigError(
                f"--prompt-variant {unknown[0]}: {self.display(suite.path) if suite.path else 'the config'} "
                f"has no such variant" + did_you_mean(unknown[0], list(suite.variants))
                + f"; its variants: {', '.join(suite.variants)}"
            )
        return [name for name in wanted if name in suite.variants]

    def _make_pipeline(self, suite: SuiteConfig) -> CasePipeline:
        """The pipeline of a suite: ``--prompt-model`` names a ``[models.NAME]`` or replaces the
        spec of ``[model]`` (relative rule files then resolve against the invocation folder)."""
        option = self.config.getoption("prompt_model")
        root = suite.root
        if option is None:
            settings = suite.model
        elif option in suite.models:
            settings = suite.models[option]
        else:
            settings = suite.model.model_copy(update={"spec": option})
            root = self.invocation_dir
        base_url = self.config.getoption("prompt_base_url")
        if base_url:
            settings = settings.model_copy(update={"base_url": base_url})
        model = self.config.hook.pytest_promptsuite_make_model(
            config=self.config, spec=settings.spec, settings=settings, root=root
        )
        if not is_sync(model):  # the fake model stays inline: nothing to cache
            if self.cache or self.replay or self.record:
                model = CachingModel(model, cache=self.cache, replay=self.replay, record=self.record)
            limit = self.config.getoption("prompt_concurrency") or settings.concurrency
            limit = limit or DEFAULT_CONCURRENCY
            workers = int(getattr(self.config, "workerinput", {}).get("workercount", 1))
            # the bound is for the whole run: pytest-xdist workers share it
            self.runner.set_concurrency(model, max(1, -(-limit // workers)))
        hook = self.config.hook
        prompts = CasePrompts.from_suite(
            suite,
            settings,
            make_retriever=hook.pytest_promptsuite_make_retriever,
            make_renderer=lambda name, params: hook.pytest_promptsuite_make_renderer(name=name, params=params),
            make_filter=lambda name: hook.pytest_promptsuite_make_jinja_filter(name=name),
            make_parser=lambda name, params: hook.pytest_promptsuite_make_output_parser(
                name=name, params=params
            ),
        )
        return CasePipeline(model, self.runner, params=settings.params, evaluator=self._make_evaluator(suite),
                            prompts=prompts)

    def _make_evaluator(self, suite: SuiteConfig) -> Evaluator:
        """The checks side of a suite's pipeline: its ``[[checks]]`` (a bad one is a collection
        error naming the config), the judge model, the review policy and output transforms."""
        hook = self.config.hook
        checks = compile_suite_checks(
            suite.checks, hook.pytest_promptsuite_make_check, base_dir=suite.root,
            source=self.display(suite.path) if suite.path is not None else "suite config",
        )
        option = self.config.getoption("prompt_judge")
        judge_settings, root = None, suite.root
        if option is not None and option in suite.models:
            judge_settings = suite.models[option]
        elif option is not None:
            judge_settings, root = ModelConfig(spec=option), self.invocation_dir
        elif "judge" in suite.models:
            judge_settings = suite.models["judge"]
        judge = None
        if judge_settings is not None:
            model = hook.pytest_promptsuite_make_model(
                config=self.config, spec=judge_settings.spec, settings=judge_settings, root=root
            )
            if not is_sync(model) and (self.cache or self.replay or self.record):
                # the judge's answers are cached and replayed like the model's
                model = CachingModel(model, cache=self.cache, replay=self.replay, record=self.record)
            judge = ModelJudge(model, self.runner, judge_settings.params)

        def transform(output: str, case: PromptCase, response: Any) -> str | None:
            return hook.pytest_promptsuite_transform_output(output=output, case=case, response=response)

        return Evaluator(
            make=hook.pytest_promptsuite_make_check,
            suite=checks,
            judge=judge,
            judge_name=judge_settings.spec if judge_settings is not None else None,
            review_fails=suite.review.outcome == "failed",
            transform=transform,
        )

    def compile_checks(self, item_file: pytest.File, cases: list[PromptCase], suite_key: Path | None
                       ) -> dict[str, CompiledChecks]:
        """Each case's checks, made through the hook as seen from the case file (so a conftest.py
        beside it counts); every bad entry of the file is reported at once (a CheckError)."""
        evaluator = self._pipelines[suite_key].evaluator
        evaluator_for_file = Evaluator(
            make=item_file.ihook.pytest_promptsuite_make_check, suite=evaluator.suite
        )
        compiled: dict[str, CompiledChecks] = {}
        problems: list[str] = []
        display = self.display(item_file.path)
        for case in cases:
            try:
                compiled[case.case_id] = evaluator_for_file.compile(case, display=display)
            except CheckError as exc:
                problems.append(str(exc))
        if problems:
            raise CheckError("\n".join(problems))
        return compiled

    def _response_stores(self) -> tuple[ResponseCache | None, Cassette | None, Cassette | None]:
        """The response cache and the cassettes the options ask for (usage errors now)."""
        option = self.config.getoption
        record, replay = option("prompt_record"), option("prompt_replay")
        if record and replay:
            raise pytest.UsageError("--prompt-record and --prompt-replay exclude each other")
        cache = None
        if not option("prompt_no_cache") and not replay:
            folder = option("prompt_cache")
            root = self.invocation_dir / folder if folder else self.config.rootpath / ".promptsuite_cache"
            cache = ResponseCache(root)
        replaying = recording = None
        if replay:
            try:
                replaying = Cassette(self.invocation_dir / replay, "replay")
            except PromptSuiteError as exc:
                raise pytest.UsageError(str(exc)) from exc
        if record:
            recording = Cassette(self.invocation_dir / record, "record")
            if not self.is_worker:
                try:
                    recording.start()
                except PromptSuiteError as exc:
                    raise pytest.UsageError(str(exc)) from exc
        return cache, replaying, recording

    def load(self, case_file: Path) -> list[PromptCase]:
        return load_cases(case_file, seen=self.seen, display=self.display(case_file))

    def display(self, path: Path) -> str:
        """A path as the user would write it: relative to where pytest was invoked."""
        shown = self._displayed.get(path)
        if shown is None:  # once per file: this is on the per-case path
            try:
                shown = os.path.relpath(path, self.invocation_dir)
            except ValueError:  # another drive on Windows
                shown = str(path)
            self._displayed[path] = shown
        return shown

    # -- running ------------------------------------------------------------------------------

    def run_case(self, item: PromptItem) -> CaseResult:
        case = item.case
        location = CaseLocation(Path(self.display(item.path)), case.location.line)
        result = self._pipelines[item.suite_key].run(
            case, location=location, variant=item.variant, repeat=item.repeat, compiled=item.compiled
        )
        fatal = self.runner.fatal
        if fatal is not None and not item.session.shouldstop:
            self.runner.cancel_pending()
            item.session.shouldstop = f"promptsuite: endpoint unusable, run stopped: {fatal}"
        return result

    def _start_call(self, item: Any) -> None:
        """Start the model call of ``item`` (a PromptItem of an endpoint model) ahead of time."""
        if not isinstance(item, PromptItem):
            return
        pipeline = self._pipelines.get(item.suite_key)
        if pipeline is None or is_sync(pipeline.model):
            return
        request = pipeline.request_for(
            item.case, variant=item.variant, repeat=item.repeat
        )
        if request is not None:
            self.runner.prefetch(pipeline.model, request)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        models = [p.model for p in self._pipelines.values() if not is_sync(p.model)]
        if not models:
            return
        self._planned = sum(isinstance(item, PromptItem) for item in session.items)
        window = 4 * max(self.runner.limit(model) for model in models)
        self._prefetcher = Prefetcher(self._start_call, window=window)
        if self.is_worker:  # only this worker's own queue, never another worker's cases
            queue = xdist_queue(self.config.pluginmanager.get_plugins(), session.items)
            self._prefetcher.follow(queue or (lambda n: []))
        else:
            self._prefetcher.plan(session.items)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        session = item.session
        if self._prefetcher is None or session.shouldfail or session.shouldstop:
            return  # -x, or an unusable endpoint: no new calls
        if self.runner.fatal is None:
            with self.runner.batch():
                self._prefetcher.advance(item, nextitem)

    def pytest_keyboard_interrupt(self) -> None:
        self.runner.cancel_pending()  # Ctrl-C: in-flight calls end now; finished rows stay

    def close(self) -> None:
        self.runner.close()
        for cassette in (self.record, self.replay):
            if cassette is not None:
                cassette.close()

    # -- aggregation --------------------------------------------------------------------------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self._failed_reports += 1
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name == RESULT_PROPERTY:
                self.rows.append(CaseResult.from_json(str(value)))
                self._prompt_nodeids.add(report.nodeid)
                if report.failed:
                    self._failed_prompt_reports += 1
                break

    def policy(self) -> ThresholdPolicy:
        slices: dict[str, float] = {}
        config_default = None
        for suite in self._configs.values():
            for name, value in suite.thresholds.slices.items():
                slices.setdefault(name, value)
            if config_default is None:
                config_default = suite.thresholds.default
        max_regression = next(
            (s.thresholds.max_regression for s in self._configs.values()
             if s.thresholds.max_regression is not None),
            None,
        )
        return ThresholdPolicy(
            slices=slices,
            option=self.config.getoption("prompt_min_pass_rate"),
            config_default=config_default,
            max_regression_option=self.config.getoption("prompt_max_regression"),
            max_regression_config=max_regression,
        )

    def _load_baseline(self) -> list[CaseResult] | None:
        """The ``--prompt-baseline`` rows (of this shard only, with ``--prompt-shard``); read at
        start-up on the controller so that a bad file is a usage error before anything runs."""
        path: Path | None = self.config.getoption("prompt_baseline")
        if path is None:
            return None
        try:
            rows = load_results(path)
        except PromptSuiteError as exc:
            raise pytest.UsageError(f"--prompt-baseline: {exc}") from exc
        shard: Shard | None = self.config.getoption("prompt_shard")
        return rows if shard is None else [r for r in rows if r.case_id in shard]

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.runner.cancel_pending()  # -x or an early stop: calls nobody will collect
        if self.record is not None and not self.is_worker:
            self.record.finalize()
        if self.is_worker or not (self.rows or self.config.getoption("prompt_shard")):
            return  # a shard reports even when it got no case, so that merge finds its folder
        baseline_path = self.config.getoption("prompt_baseline")
        order = list(dict.fromkeys(name for suite in self._configs.values() for name in suite.variants))
        self.summary = summarize(
            self.rows, self.policy(), baseline=self._baseline, baseline_source=str(baseline_path),
            variant_order=order,
        )
        report_dir = self.config.getoption("prompt_report")
        if report_dir:
            write_report(self.invocation_dir / report_dir, self.rows, self.summary)
        if exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            return  # never mask an interrupt, an internal error or a usage error
        if not self.summary.gate.passed:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        elif (
            exitstatus == pytest.ExitCode.TESTS_FAILED
            and not session.shouldfail
            and self._failed_reports == self._failed_prompt_reports
        ):
            session.exitstatus = pytest.ExitCode.OK
        self._drop_phase_reports()

    def _drop_phase_reports(self) -> None:
        """Forget the passing setup/teardown reports of our items before the terminal summary.

        pytest looks up teardown sections for every failure by scanning all of them
        (pytest-dev/pytest#13360): O(failures x items), minutes at 50,000 cases. Our items print
        nothing in setup or teardown, so those reports carry no section to show.
        """
        reporter: Any = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None or "" not in reporter.stats:
            return
        ours = self._prompt_nodeids
        reporter.stats[""] = [
            r for r in reporter.stats[""] if r.sections or getattr(r, "nodeid", None) not in ours
        ]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        fatal = self.runner.fatal
        if fatal is not None:
            left = max(0, self._planned - len(self.rows))
            terminalreporter.write_sep("-", "promptsuite: endpoint unusable")
            terminalreporter.write_line(f"{left} case(s) not run; the first error was: {fatal}")
        if self.summary is None:
            return
        terminalreporter.write_sep("-", "promptsuite: pass rate by slice")
        for line in summary_lines(self.summary):
            terminalreporter.write_line(line)
        report_dir = self.config.getoption("prompt_report")
        if report_dir:
            terminalreporter.write_line(f"promptsuite report: {report_dir}")
