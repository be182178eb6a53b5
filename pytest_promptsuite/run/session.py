"""One run of suites: each case file's planned items, running them, and the summary, report files and gates
aggregated from the rows the items reported (never from process state)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from pytest_promptsuite import __version__
from pytest_promptsuite.cases.files import output_kind
from pytest_promptsuite.cases.load import load_cases
from pytest_promptsuite.cases.prompt_case import CaseKey
from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.check_api import CheckScope
from pytest_promptsuite.checks.compile_checks import CompiledChecks
from pytest_promptsuite.checks.compile_checks import MakeCheck
from pytest_promptsuite.checks.compile_checks import compile_cases
from pytest_promptsuite.checks.outcome import Outcome
from pytest_promptsuite.config.discovery import SuiteIndex
from pytest_promptsuite.config.discovery import SuiteKey
from pytest_promptsuite.config.options import RunOptions
from pytest_promptsuite.config.settings import DEFAULT_BATCH_TIMEOUT_S
from pytest_promptsuite.config.settings import gate_settings
from pytest_promptsuite.config.settings import threshold_policy
from pytest_promptsuite.config.tables import base_url_problem
from pytest_promptsuite.errors import CaseFileError
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import PromptSuiteError
from pytest_promptsuite.models.cache import DEFAULT_CACHE_DIR
from pytest_promptsuite.models.concurrency import add_counts
from pytest_promptsuite.models.concurrency import counts_line
from pytest_promptsuite.models.concurrency import with_share
from pytest_promptsuite.models.runner import ModelRunner
from pytest_promptsuite.prompts.case_prompts import CasePrompts
from pytest_promptsuite.prompts.core import Prompt
from pytest_promptsuite.prompts.fields import SHOWN_CASES
from pytest_promptsuite.prompts.fields import check_fields
from pytest_promptsuite.prompts.tool_set import choice_name
from pytest_promptsuite.prompts.tool_set import choice_problem
from pytest_promptsuite.prompts.tool_set import result_problems
from pytest_promptsuite.prompts.tool_set import tool_problems
from pytest_promptsuite.report.reasons import plural
from pytest_promptsuite.report.text import cut_line
from pytest_promptsuite.report.text import summary_lines
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.gate import GateResult
from pytest_promptsuite.results.gate import RunIncomplete
from pytest_promptsuite.results.records import RunInfo
from pytest_promptsuite.results.spool import RowSpool
from pytest_promptsuite.results.summary import Summary
from pytest_promptsuite.results.summary import summarize
from pytest_promptsuite.results.usage import UsageReport
from pytest_promptsuite.results.usage import prices_of_run
from pytest_promptsuite.run.assembly import Assembler
from pytest_promptsuite.run.assembly import open_baseline
from pytest_promptsuite.run.assembly import open_reviews_and_history
from pytest_promptsuite.run.assembly import open_stores
from pytest_promptsuite.run.assembly import require_judge
from pytest_promptsuite.run.pipeline import CasePipeline
from pytest_promptsuite.run.pipeline import PlannedCase
from pytest_promptsuite.run.pipeline import error_row
from pytest_promptsuite.run.pipeline import required_ignored_hint
from pytest_promptsuite.run.prefetch import Prefetcher
from pytest_promptsuite.safety.scrub import public_url
from pytest_promptsuite.safety.scrub import register


if TYPE_CHECKING:
    from pytest_promptsuite.checks.evaluator import Evaluator
    from pytest_promptsuite.report.html import GridCells
    from pytest_promptsuite.results.summary import Baseline
    from pytest_promptsuite.run.sequential_run import SequentialRun  # --prompt-sequential only


class PromptSession:
    """The state of one run: suites, pipelines, the rows items reported, the summary.

    Creating it reads what the options name (the baseline, cassettes, ``--prompt-config``), so
    each problem is a :class:`~pytest_promptsuite.errors.PromptSuiteError` before collection.

    Args:
        options: the run's options.
        hook: the hook relay the parts are made through (``config.hook`` under pytest).
        invocation_dir: where the run was invoked; paths are shown relative to it.
        rootpath: pytest's rootdir (configs are found under it; the response cache is not: see ``open_stores``).
        config: handed to ``pytest_promptsuite_make_model`` (pytest's config).
        is_worker: a pytest-xdist worker (reports nothing itself).
        workers: how many workers share the concurrency bound (and ``--prompt-max-calls``).
        worker_index: which of them this is (0 outside pytest-xdist).
        index: the suite index to use (the ``promptsuite`` command's shows paths as given).
    """

    def __init__(
        self,
        options: RunOptions,
        *,
        hook: Any,
        invocation_dir: Path,
        rootpath: Path,
        config: Any = None,
        is_worker: bool = False,
        workers: int = 1,
        worker_index: int = 0,
        index: SuiteIndex | None = None,
    ) -> None:
        self.options = options
        self.is_worker = is_worker
        self.invocation_dir = invocation_dir
        self.rootpath = rootpath
        register(os.environ.get("OPENAI_API_KEY"))  # the default key variable: scrubbed from the start
        if options.base_url:  # the option's value, checked before anything is collected
            problem = base_url_problem(options.base_url)
            if problem:
                raise ConfigError(f"--prompt-base-url {public_url(options.base_url)!r} {problem}")
        self.baseline = None if is_worker else open_baseline(options)
        self.reviews, self.history = open_reviews_and_history(options, is_worker=is_worker)
        self.runner = ModelRunner(workers=workers)
        if options.max_calls is not None:  # pytest-xdist: each worker issues its share of the calls
            share, extra = divmod(options.max_calls, workers)
            self.runner.allowance.max_calls = share + (worker_index < extra)
        self.stores = open_stores(options, invocation_dir=invocation_dir, is_worker=is_worker)
        self.index = index or SuiteIndex(invocation_dir=invocation_dir, rootpath=rootpath, config=options.config)
        self.assembler = Assembler(
            hook,
            runner=self.runner,
            options=options,
            invocation_dir=invocation_dir,
            display=self.index.display,
            stores=self.stores,
            config=config,
            workers=workers,
        )
        #: Case ids taken so far, each with where it was defined (duplicates across files).
        self.seen: dict[str, str] = {}
        #: The rows items reported, spooled to a file as they arrive.
        self._rows = RowSpool()
        self._cells: GridCells | None = None  # the dashboard grid's text, made as rows arrive
        #: What collection noticed but does not stop on (a ``vars`` field no template reads).
        self.warnings: list[str] = []
        self.summary: Summary | None = None
        self.usage: UsageReport | None = None
        self._pipelines: dict[SuiteKey, CasePipeline] = {}
        self._prefetcher: Prefetcher | None = None
        #: ``--prompt-sequential``: the comparisons fed as cases finish, and why calls stopped.
        self.sequential: SequentialRun | None = None
        self._worker_counts: dict[str, dict[str, Any]] = {}
        #: Each suite's slices and case files collected so far (:meth:`check_slice_names`).
        self._slices: dict[SuiteKey, set[str]] = {}
        self._collected: dict[SuiteKey, set[Path]] = {}
        #: Collected cases that ``-k``, ``-m`` or ``--lf`` left out: the gate then judges a selection.
        self.deselected = 0
        #: ``--prompt-rejudge``: how many baseline rows this run's judge checked again (None: not asked).
        self.rejudged: int | None = None

    def collect_file(self, path: Path, make_check: MakeCheck, *, render: bool = True) -> list[PlannedCase]:
        """Plan every item of a case file: each case in each variant and repeat, with its checks.
        ``make_check`` is the hook as seen from the file, so a conftest beside it counts; ``render``:
        every request known before a model answers is rendered too (:meth:`check_renders`)."""
        key, suite = self.index.suite_of(path)
        if key not in self._pipelines:
            self._pipelines[key] = self.assembler.pipeline(suite)
        pipeline = self._pipelines[key]
        shown = self.index.display(path)
        self.index.check_file(path)
        kind = output_kind(path)
        if kind is not None:  # named on the command line: a report or cassette is no case file
            raise CaseFileError([f"{shown}:1: this is {kind}, not a case file"])
        cases = load_cases(path, seen=self.seen, display=shown)
        self.check_slice_names(key, path, (case.slice for case in cases))
        scope = CheckScope(self.index.folder_of(path), suite.python_modules)
        compiled = compile_cases(cases, make_check, suite=pipeline.evaluator.suite, display=shown, scope=scope)
        require_judge(compiled, cases, pipeline.evaluator, shown)
        variants = self.index.variants(key, self.options.variant)
        self.check_prompts(pipeline.prompts, cases, variants, shown)
        check_tools(pipeline.prompts, cases, variants, shown)
        planned = _planned_items(cases, compiled, variants, self.options.repeat, key, Path(shown))
        if render:
            self.check_renders(pipeline.prompts, {case.case_id: case for case in cases}, planned)
        return planned

    def check_slice_names(self, key: SuiteKey, path: Path, slices: Iterable[str]) -> None:
        """Take a case file's slices; once every case file of its suite is here, refuse (CaseFileError) a slice
        its config names that no case has."""
        self._slices.setdefault(key, set()).update(slices)
        self._collected.setdefault(key, set()).add(path.resolve())
        problems = self.index.slice_problems(key, self._slices[key], self._collected[key])
        if problems:
            raise CaseFileError(problems)

    def collect_every_problem(self, path: Path, make_check: MakeCheck) -> tuple[list[PlannedCase], list[str]]:
        """Plan a case file as :meth:`collect_file` does, going on past each stage's problems (``promptsuite
        validate``): every problem of every stage (config, lines, checks, template fields, tools, renders) at once."""
        try:
            key, suite = self.index.suite_of(path)
            if key not in self._pipelines:
                self._pipelines[key] = self.assembler.pipeline(suite)
            self.index.check_file(path)
        except PromptSuiteError as exc:
            problems = problem_lines(exc)
            load_cases(path, seen=self.seen, display=self.index.display(path), problems_to=problems)
            return [], problems
        return _EveryProblem(self, path, key, suite).collect(make_check)

    def check_renders(
        self, prompts: CasePrompts, cases: Mapping[str, PromptCase], planned: Sequence[PlannedCase]
    ) -> None:
        """Render each planned case's requests known before a model answers (once, whatever the repeats):
        such a failure is the suite's, not the model's, so it stops collection (CaseFileError) with
        ``path:line: case: error``, the cases failing alike in one message. A prompt made by code (a promptfoo
        prompt function) is left to the run: it runs once per case, and a failure is that case's error."""
        failed: dict[str, list[PlannedCase]] = {}
        for item in planned:
            if item.key.repeat == 0 and not prompts.made_by_code(variant=item.key.variant):
                try:
                    prompts.known_requests(cases[item.key.case_id], variant=item.key.variant)
                except PromptSuiteError as exc:
                    failed.setdefault(str(exc), []).append(item)
                except Exception as exc:  # a plugin's renderer or filter: still no traceback
                    failed.setdefault(f"rendering raised {type(exc).__name__}: {exc}", []).append(item)
        if failed:
            raise CaseFileError([_render_failure(error, items) for error, items in failed.items()])

    def check_prompts(
        self, prompts: CasePrompts, cases: Sequence[PromptCase], variants: Sequence[str | None], shown: str
    ) -> None:
        """Check that the templates find the fields of a file's cases (:func:`~.prompts.fields.check_fields`).
        A field some case lacks stops collection (CaseFileError); an unread ``vars`` field is a warning."""
        templates = {variant: prompts.fields(variant) for variant in variants}
        ice = any(t.cases == "train" for reads, _ in templates.values() for t in reads)
        report = check_fields(
            cases, templates, file_shown=shown, display=self.index.display, train=prompts.train_rows() if ice else ()
        )
        if report.problems:
            raise CaseFileError(report.problems)
        self.add_warnings(report.warnings)

    def add_warnings(self, warnings: Iterable[str]) -> None:
        """Keep collection warnings (once each): this process's, or a pytest-xdist worker's."""
        self.warnings.extend(w for w in warnings if w not in self.warnings)

    def pipeline_for(self, planned: PlannedCase) -> CasePipeline:
        """Return the pipeline a planned case runs through (its suite's prompts, model, checks and judge)."""
        return self._pipelines[planned.suite]

    def dry_render(self, planned: PlannedCase) -> tuple[list[Prompt], str | None]:
        """Render every request of a planned case known before a model answers, or say why it fails
        (what ``promptsuite render`` shows; collection checks the same, :meth:`check_renders`)."""
        pipeline = self._pipelines[planned.suite]
        try:
            return pipeline.prompts.known_requests(pipeline.case_of(planned), variant=planned.key.variant), None
        except PromptSuiteError as exc:
            return [], str(exc)

    def tools_of(self, planned: PlannedCase) -> dict[str, Any]:
        """Return the ``tools`` and ``tool_choice`` a planned case's requests send (``{}``: none)."""
        pipeline = self._pipelines[planned.suite]
        try:
            return pipeline.prompts.tool_set(pipeline.case_of(planned), variant=planned.key.variant).params()
        except PromptSuiteError:  # collection reported it
            return {}

    def label_prompts(self, planned: PlannedCase) -> list[tuple[str, Prompt]]:
        """Return each label of a planned case and the prompt it scores (the ppl mode; else none)."""
        prompts = self._pipelines[planned.suite].prompts
        if not prompts.is_ppl(variant=planned.key.variant):
            return []
        return prompts.label_prompts(self._pipelines[planned.suite].case_of(planned), variant=planned.key.variant)

    def plan_sequential(self, planned: Sequence[PlannedCase]) -> None:
        """Plan ``--prompt-sequential``'s comparisons of the cases ``planned`` (in run order), if it was given."""
        if not self.options.sequential or self.is_worker:
            return
        settings = gate_settings(self.options, self.index.configs())
        if self.baseline is None and not settings.compare_variants:
            raise ConfigError(
                "--prompt-sequential stops calling once the comparison is settled: it needs --prompt-baseline "
                "or [gate] compare_variants = true"
            )
        from pytest_promptsuite.run.sequential_run import SequentialRun

        self.sequential = SequentialRun.plan(
            planned,
            baseline=self.baseline,
            settings=settings,
            policy=threshold_policy(self.options, self.index.configs()),
            variant_order=self.index.variant_order(),
            deterministic=self.run_info().deterministic,
        )

    def after_row(self, row: CaseResult) -> None:
        """Feed a row to the sequential gate; once a slice's verdict is settled, stop the calls started ahead
        for its cases (those that reached the endpoint count as made), and every call once all are settled."""
        sequential = self.sequential
        if sequential is not None and sequential.add(row):
            reached = self.runner.release(sequential.skips_call)
            sequential.note_unused(reached)
            if self._prefetcher is not None:
                skips = sequential.skips_call
                self._prefetcher.leave_out(lambda item: skips(getattr(item, "planned", None)), spent=len(reached))
            if sequential.stopped is not None:
                self.cancel_pending()

    def run(self, planned: PlannedCase) -> CaseResult:
        """Run one planned case (its failures are its row's outcome, never a raise).
        Once an endpoint is unusable, the calls started for later cases are cancelled; once the sequential
        gate's verdict is settled, no case makes a call: it ends ``skipped``."""
        settled = None if self.sequential is None else self.sequential.skip_reason(planned.key)
        if settled is not None:
            return dataclasses.replace(error_row(planned, settled), outcome=Outcome.SKIPPED)
        try:
            result = self._pipelines[planned.suite].run(planned)
        except Exception as exc:  # a bug (ours or a plugin's) still ends the case with its row
            result = error_row(planned, f"internal error while running the case: {type(exc).__name__}: {exc}")
        if self.runner.fatal is not None:
            self.cancel_pending()
        return result if self.reviews is None else self.reviews.apply(result)

    def stop_reason(self) -> str | None:
        """Return why no further case should run (an endpoint that every call fails on), or None."""
        fatal = self.runner.fatal
        return None if fatal is None else f"promptsuite: endpoint unusable, run stopped: {fatal}"

    def plan_prefetch(
        self,
        items: Sequence[Any],
        start: Callable[[Any], None],
        upcoming: Callable[[int], list[Any]] | None = None,
        *,
        stop_early: bool = False,
    ) -> None:
        """Plan to start model calls ahead of the items about to run.

        ``items`` in order (a serial run), or what ``upcoming`` says the worker's queue holds (pytest-xdist);
        ``start(item)`` starts one item's call. ``stop_early`` (``-x``, ``--maxfail``, ``--prompt-sequential``): at
        most one window of twice the concurrency bound ahead (the bound full and as many waiting), so that the calls
        made for cases that will not run once the run stops are at most that many.
        """
        window = self.runner.prefetch_window()
        if not window:
            return
        if stop_early:
            window = max(1, window // 2)
        self._prefetcher = Prefetcher(
            start,
            window=window,
            ahead=1 if stop_early else None,
            unfinished=self.runner.unfinished,
            batch=self.runner.batch_submits,
        )
        if upcoming is not None:
            self._prefetcher.follow(upcoming)
        else:
            self._prefetcher.plan(items)

    def start_calls(self, planned: Sequence[PlannedCase], progress: Callable[[str], None] | None = None) -> None:
        """Start the calls once collection is final: in batch mode every call of ``planned`` through one batch,
        before the first case runs; then the prefetcher's first window."""
        if any(a.answers is not None for a in self.runner.attached.values()) and not self.is_worker:
            self._start_batch(planned, progress)
        if self._prefetcher is not None:
            self._prefetcher.start()

    def _start_batch(self, planned: Sequence[PlannedCase], progress: Callable[[str], None] | None) -> None:
        calls = [call for one in planned if (call := self._pipelines[one.suite].first_call(one)) is not None]
        out = None if self.options.batch_file is None else self.invocation_dir / self.options.batch_file
        limit = self.options.batch_timeout or DEFAULT_BATCH_TIMEOUT_S
        results = self.options.batch_results
        sent = self.runner.batch(calls, write_to=out, results=results, progress=progress, time_limit_s=limit)
        if self.options.batch_file and progress is not None:
            progress(f"batch: {sent:,} requests written to {self.options.batch_file}")

    def prefetch(self, planned: PlannedCase) -> None:
        """Render a case's request and start its call now (not for a slice whose verdict is settled)."""
        if self.sequential is None or self.sequential.skip_reason(planned.key) is None:
            self._pipelines[planned.suite].prefetch(planned)

    def advance(self, item: Any, nextitem: Any | None) -> None:
        """Keep the calls of the items after ``item`` started, as it is about to run."""
        stopped = self.sequential is not None and self.sequential.stopped is not None
        if self._prefetcher is not None and self.runner.fatal is None and not stopped:
            self._prefetcher.advance(item, nextitem)

    def cancel_pending(self) -> None:
        """Cancel the calls nobody will collect (``-x``, Ctrl-C, an early stop)."""
        self.runner.cancel_pending()
        for pipeline in self._pipelines.values():
            pipeline.forget()

    def close(self) -> None:
        """End the run's event loop and close the cassettes."""
        self.runner.close()
        self.stores.close()
        self._rows.close()

    def row_line(self, result: CaseResult) -> str:
        """Encode ``result`` as the line its item reports, once (never parsed back in this process)."""
        return self._rows.encode(result)

    def add_row(self, value: str) -> CaseResult:
        """Add a row an item reported (its ``CaseResult`` as JSON, as it crossed pytest-xdist)."""
        return self._rows.add(value)

    def expect_rows(self, count: int) -> None:
        """Size the dashboard grid for ``count`` rows (with a report), filled as the rows arrive."""
        if self.options.report and count and not self._rows.rows:
            from pytest_promptsuite.report.html import GridCells

            self._cells = GridCells(count)
            self._rows.on_row = self._cells.add

    @property
    def rows(self) -> list[CaseResult]:
        """The rows items reported so far, without their texts (those stay in the spool)."""
        return self._rows.rows

    def full(self, row: CaseResult) -> CaseResult:
        """Read one of :attr:`rows` back whole from the spool."""
        return self._rows.full(row)

    def _know_every_suite(self) -> None:
        """Load the config of every case file under the targets, as collection did.
        A pytest-xdist controller collects nothing itself, yet its gates need every config."""
        for path in self.index.case_files():
            try:
                self.index.suite_of(path)
            except PromptSuiteError:
                pass  # reported where the file was collected

    def add_call_counts(self, counts: Mapping[str, Mapping[str, Any]]) -> None:
        """Take a pytest-xdist worker's call counts (:meth:`call_counts` adds them up)."""
        add_counts(self._worker_counts, counts)

    def call_counts(self) -> dict[str, dict[str, Any]]:
        """Return each endpoint model's attempts, 429s and concurrency over the run (every worker's, added up)."""
        total: dict[str, dict[str, Any]] = {}
        add_counts(total, self._worker_counts)
        add_counts(total, self.runner.call_counts())
        return total

    def run_info(self) -> RunInfo:
        """Describe what this run used: each variant's model (with its ``calls``: attempts, 429s, concurrency),
        the case files' and prompts' hashes."""
        models: dict[str, dict[str, Any]] = {}
        counts = self.call_counts()
        for suite in self.index.configs():
            variants: list[str | None] = [*suite.variants] or [None]
            for variant in variants:
                described = models.setdefault(variant or "", self.assembler.describe_model(suite, variant))
                if described["spec"] in counts:
                    described["calls"] = with_share(counts[described["spec"]])
        cases = hashlib.sha256()
        for path in sorted(self.index.case_files(), key=self.index.display):
            cases.update(self.index.display(path).encode("utf-8") + b"\0")
            with path.open("rb") as fp:  # in blocks: a large case file is never read whole here
                while block := fp.read(1 << 20):
                    cases.update(block)
            cases.update(b"\0")
        return RunInfo(
            version=__version__,
            models=models,
            suite_hash=cases.hexdigest()[:16],
            prompt_hash=RunInfo.prompts_hash(self.rows),
        )

    def finish(self, *, not_run: int = 0, why: str | None = None, interrupted: bool = False) -> Summary | None:
        """Aggregate the rows into the summary and its gates (controller only) and return it.

        None on a worker, or when nothing ran (a shard reports even then, for ``merge``, and an ``interrupted`` run,
        to say that nothing finished). ``not_run`` collected cases never reported a row (the run stopped, ``why``):
        the gate then fails, so no report file says PASSED.
        """
        self.cancel_pending()
        if self.stores.record is not None and not self.is_worker:
            self.stores.record.finalize()
        if self.is_worker or not (self.rows or self.options.shard or interrupted):
            return None
        self._know_every_suite()
        incomplete = self._incomplete(not_run, why)
        self.summary = self._summarize()
        if incomplete is not None:
            gate = GateResult.of([*self.summary.gate.decisions, incomplete])
            self.summary = dataclasses.replace(self.summary, gate=gate)
        self.usage = self.summary.usage
        return self.summary

    def _incomplete(self, not_run: int, why: str | None) -> RunIncomplete | None:
        """Return why the run is incomplete: cases that reported no row, or skipped since the budget ran out."""
        sequential = self.sequential
        skipped = [
            row
            for row in self.rows
            if row.outcome is Outcome.SKIPPED and not (sequential is not None and sequential.skipped(row))
        ]
        if skipped and not self.options.batch_file:  # the budget ran out: calls were not issued
            not_run, why = not_run + len(skipped), why or skipped[0].error
        if not (not_run or (why and not self.rows)):  # stopped before any case finished: still incomplete
            return None
        reason = why or "some cases reported no result"
        return RunIncomplete(why=reason, ran=len(self.rows) - len(skipped), not_run=not_run)

    def _summarize(self) -> Summary:
        """Summarize the rows under the run's settings, with ``--prompt-sequential``'s verdicts when given."""
        sequential = self.sequential
        run = self.run_info()
        settings = gate_settings(self.options, self.index.configs())
        if sequential is not None:  # the fixed test, for what ran every case, at the level left to it
            settings = sequential.final_settings()
        summary = summarize(
            self.rows,
            threshold_policy(self.options, self.index.configs()),
            baseline=self._rejudged_baseline(),
            variant_order=self.index.variant_order(),
            settings=settings,
            run=run,
            full=self.full,
            usage=self._rows.usage.report(prices_of_run(run)),  # counted as rows were spooled
            ungated=self._rows.ungated.report(),
        )
        if sequential is not None:
            summary = sequential.judge(summary)
        return summary

    def _rejudged_baseline(self) -> Baseline | None:
        """Return the baseline, with ``--prompt-rejudge`` its judged rows checked again by this run's checks."""
        if self.baseline is None or not self.options.rejudge:
            return self.baseline
        from pytest_promptsuite.run.rejudge import cases_to_rejudge
        from pytest_promptsuite.run.rejudge import rejudge

        make_check = self.assembler.hook.pytest_promptsuite_make_check
        baseline, self.rejudged = rejudge(self.baseline, cases_to_rejudge(self.index, self._evaluator_of, make_check))
        return baseline

    def _evaluator_of(self, path: Path) -> Evaluator:
        """Return the evaluator (checks and judge) of a case file's suite."""
        key, suite = self.index.suite_of(path)
        if key not in self._pipelines:
            self._pipelines[key] = self.assembler.pipeline(suite)
        return self._pipelines[key].evaluator

    def write_report(self) -> None:
        """Write the report files of the summary :meth:`finish` made, with ``--prompt-report`` (else nothing)."""
        if not self.options.report or self.summary is None:
            return
        from pytest_promptsuite.report.writer import write_report

        write_report(
            self.invocation_dir / self.options.report,
            self.rows,
            self.summary,
            full=self.full,
            usage=self.usage,
            history=self.history,
            baseline=self.baseline,
            lines=self._rows.lines,
            cells=self._cells,
        )

    def _with_cache(self, totals: str) -> str:
        """Say in the totals line where the response cache is, after its hits ("3 cache hits in .promptsuite_cache")."""
        hits = plural(0 if self.usage is None else self.usage.total.cache_hits, "cache hit")
        where = f"in {self.options.cache or DEFAULT_CACHE_DIR}"
        if self.stores.cache is None:
            where = f"(no cache: {'--prompt-no-cache' if self.options.no_cache else '--prompt-replay'})"
        return totals.replace(f" {hits},", f" {hits} {where},", 1)

    def _say_selection(self, lines: list[str]) -> None:
        """Say in the gate's verdict line that it judged a selection (``-k``, ``-m``, ``--lf``): how many of how
        many collected cases."""
        at = next((i for i, line in enumerate(lines) if line.startswith("promptsuite gate: ")), None)
        if at is None or not self.deselected or self.summary is None:
            return
        judged = self.summary.totals.cases
        lines[at] += (
            f" on a selection: {judged:,} of {judged + self.deselected:,} cases (-k, -m or --lf left out the rest)"
        )

    def terminal_sections(self) -> Iterator[tuple[str, list[str]]]:
        """Yield the terminal summary's sections: (title, lines) pairs."""
        if self.warnings and not self.is_worker:
            yield "promptsuite: warnings", list(self.warnings)
        if self.summary is not None:
            lines = list(summary_lines(self.summary, usage=self.usage))
            at = next((i + 1 for i, line in enumerate(lines) if line.startswith("totals: ")), len(lines))
            if at:
                lines[at - 1] = self._with_cache(lines[at - 1])
            rows = self.rows
            cut = [line for line in (cut_line(rows), required_ignored_hint(rows)) if line is not None]
            lines[at:at] = [*cut, *(counts_line(spec, counts) for spec, counts in self.call_counts().items())]
            self._say_selection(lines)
            if self.rejudged is not None:
                lines.append(
                    f"--prompt-rejudge: {plural(self.rejudged, 'baseline row')} checked again by this run's judge"
                )
            if self.options.report:
                lines.append(f"promptsuite report: {self.options.report}")
            yield "promptsuite: pass rate by slice", lines


def problem_lines(exc: PromptSuiteError) -> list[str]:
    """Return the problems an error holds, one a line (a CaseFileError's own, else its message's lines)."""
    return list(exc.problems) if isinstance(exc, CaseFileError) else str(exc).splitlines()


class _EveryProblem:
    """One case file planned stage by stage, each stage's problems kept and the next stage run on what is
    good so far (:meth:`PromptSession.collect_every_problem`)."""

    def __init__(self, session: PromptSession, path: Path, key: SuiteKey, suite: Any) -> None:
        self.session, self.path, self.key, self.suite = session, path, key, suite
        self.pipeline = session._pipelines[key]
        self.shown = session.index.display(path)
        self.problems: list[str] = []

    def _stage(self, run: Callable[[], Any]) -> bool:
        """Run one stage; keep its problems; tell whether it had none."""
        try:
            run()
        except PromptSuiteError as exc:
            self.problems += problem_lines(exc)
            return False
        return True

    def collect(self, make_check: MakeCheck) -> tuple[list[PlannedCase], list[str]]:
        session, shown, pipeline = self.session, self.shown, self.pipeline
        kind = output_kind(self.path)
        if kind is not None:
            return [], [f"{shown}:1: this is {kind}, not a case file"]
        cases = load_cases(self.path, seen=session.seen, display=shown, problems_to=self.problems)
        self._stage(lambda: session.check_slice_names(self.key, self.path, (case.slice for case in cases)))
        compiled = self._compiled(cases, make_check)
        good = [case for case in cases if case.case_id in compiled]
        self._stage(lambda: require_judge(compiled, good, pipeline.evaluator, shown))
        variants = session.index.variants(self.key, session.options.variant)
        fields = self._stage(lambda: session.check_prompts(pipeline.prompts, cases, variants, shown))
        tools = self._stage(lambda: check_tools(pipeline.prompts, cases, variants, shown))
        planned = _planned_items(good, compiled, variants, session.options.repeat, self.key, Path(shown))
        if fields and tools:  # else rendering fails for the reason already given
            self._stage(lambda: session.check_renders(pipeline.prompts, {c.case_id: c for c in good}, planned))
        return planned, self.problems

    def _compiled(self, cases: Sequence[PromptCase], make_check: MakeCheck) -> dict[str, CompiledChecks]:
        """Compile each case's checks on its own, keeping the cases whose checks compile."""
        scope = CheckScope(self.session.index.folder_of(self.path), self.suite.python_modules)
        compiled: dict[str, CompiledChecks] = {}
        for case in cases:
            try:
                compiled |= compile_cases(
                    [case], make_check, suite=self.pipeline.evaluator.suite, display=self.shown, scope=scope
                )
            except PromptSuiteError as exc:
                self.problems += problem_lines(exc)
        return compiled


def _planned_items(
    cases: Sequence[PromptCase],
    compiled: Mapping[str, CompiledChecks],
    variants: Sequence[str | None],
    repeats: int,
    key: SuiteKey,
    shown_path: Path,
) -> list[PlannedCase]:
    """Plan an item per case, variant (ids ``case_id[v1]``) and repeat (``case_id[repeat-0..N-1]``); an item keeps
    where its case is, not the case (read back when it runs)."""
    planned = []
    slices: dict[str, str] = {}  # one string per slice and one tuple per set of tags, shared
    tag_sets: dict[tuple[str, ...], tuple[str, ...]] = {}
    for case in cases:
        ref, checks = case.ref, compiled[case.case_id]
        assert ref is not None, "a loaded case knows its line"
        slice_ = slices.setdefault(case.slice, case.slice)
        tags = tag_sets.setdefault(tuple(case.tags), tuple(case.tags))
        for variant in variants:
            for repeat in range(repeats):
                case_key = CaseKey(case.case_id, variant, repeat)
                name = case_key.name(with_repeat=repeats > 1)
                planned.append(PlannedCase(ref, case_key, name, key, checks, shown=shown_path, slice=slice_, tags=tags))
    return planned


def _render_failure(error: str, items: Sequence[PlannedCase]) -> str:
    """Say where rendering failed with ``error``: the first item's ``path:line`` and name, and how many more."""
    first, rest = items[0], items[1:]
    more = ""
    if rest:
        names = ", ".join(item.name for item in rest[:SHOWN_CASES])
        names += f" and {len(rest) - SHOWN_CASES:,} more" if len(rest) > SHOWN_CASES else ""
        more = f" and {len(rest):,} more {'case' if len(rest) == 1 else 'cases'} ({names})"
    return f"{first.location}: {first.name}{more}: {error}"


def check_tools(prompts: CasePrompts, cases: Sequence[PromptCase], variants: Sequence[str | None], shown: str) -> None:
    """Check the tools a file's cases offer: the suite's (its config's error), each case's own (every
    ``parameters`` a valid JSON Schema) and each tool a case names (``tool_choice``, ``tool_results``)
    defined; CaseFileError with ``path:line: case 'ID': problem`` lines."""
    problems: list[str] = []
    for variant in variants:
        try:
            prompts.suite_tools(variant)
        except ConfigError as exc:
            raise CaseFileError([str(exc)]) from None
    for case in cases:
        if not (case.tools or case.tool_choice is not None or case.tool_results):
            continue
        found = _own_tool_problems(case) or _named_tool_problems(prompts, case, variants)
        where = f"{shown}:{case.location.line}: case {case.case_id!r}"
        problems += [f"{where}: {p}" for p in dict.fromkeys(found)]
    if problems:
        raise CaseFileError(problems)


def _own_tool_problems(case: PromptCase) -> list[str]:
    found = tool_problems(case.tools, "'tools'") if case.tools else []
    if case.tool_choice is not None:
        found += [p for p in [choice_problem(case.tool_choice, "'tool_choice'")] if p is not None]
    return found


def _named_tool_problems(prompts: CasePrompts, case: PromptCase, variants: Sequence[str | None]) -> list[str]:
    found: list[str] = []
    for variant in variants:
        tools = prompts.tool_set(case, variant=variant)
        forced = choice_name(tools.tool_choice)
        if forced and forced not in tools.names:
            found.append(f"'tool_choice' names the tool {forced!r}, which is not defined")
        found += result_problems(case.tool_results, tools.names, "'tool_results'")
    return found
