"""pytest glue: the options, our hooks, collecting case files, and the run's pytest side.

Only the options are imported at the top: the stages load inside the hooks, for a run with prompt cases.
"""

from __future__ import annotations

import gc
import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import pytest

from pytest_promptsuite.config.options import OPTIONS
from pytest_promptsuite.config.options import RunOptions
from pytest_promptsuite.errors import PromptSuiteError
from pytest_promptsuite.run.registration import register_builtins
from pytest_promptsuite.run.registration import register_installed
from pytest_promptsuite.safety.scrub import install_log_filter
from pytest_promptsuite.safety.scrub import printable


if TYPE_CHECKING:
    from pytest_promptsuite.items import PromptFile
    from pytest_promptsuite.run.session import PromptSession


#: The run's pytest side (the session is ``config.stash[source_key]``).
session_key = pytest.StashKey["_SessionPlugin"]()
#: The key under which a pytest-xdist worker hands its collection warnings to the controller.
WARNINGS_OUTPUT = "promptsuite_warnings"
#: The key of a pytest-xdist worker's ``workeroutput`` that carries its models' call counts.
CALLS_OUTPUT = "promptsuite_calls"
#: The key of a pytest-xdist worker's ``workeroutput`` that carries how many cases ``-k``, ``-m`` or ``--lf`` left out.
DESELECTED_OUTPUT = "promptsuite_deselected"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Register our hookspecs and the built-ins (installed plugins register in :func:`pytest_configure`)."""
    register_builtins(pluginmanager)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the ``--prompt-*`` options."""
    group = parser.getgroup("promptsuite", "prompt regression suites (pytest-promptsuite)")
    for option in OPTIONS:
        group.addoption(option.flag, **option.kwargs)


def _has_cases(options: RunOptions, args: list[str]) -> bool:
    """Tell whether this run has prompt cases: ``--prompt-suite``, or a ``*.jsonl`` among the paths."""
    return bool(options.suite) or any(arg.partition("::")[0].endswith(".jsonl") for arg in args)


def pytest_configure(config: pytest.Config) -> None:
    """Parse the options and, for a run with prompt cases, start the session and add the suites to collect."""
    install_log_filter()  # httpx's and httpcore's records (and ours) never show a secret
    options = RunOptions.from_values(config.getoption)
    if not _has_cases(options, config.args):
        return
    from pytest_promptsuite.items import source_key  # the stages load here, for a run that has cases
    from pytest_promptsuite.run.session import PromptSession

    register_installed(config.pluginmanager)
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    worker_index = int(str(getattr(config, "workerinput", {}).get("workerid", "gw0"))[2:] or 0)
    _refuse_workers(options, config)
    try:
        session = PromptSession(
            options,
            hook=config.hook,
            invocation_dir=config.invocation_params.dir,
            rootpath=config.rootpath,
            config=config,
            is_worker=hasattr(config, "workerinput"),
            workers=workers,
            worker_index=worker_index,
        )
        suites = [str(path) for raw in options.suite for path in session.index.add_target(raw)]
    except PromptSuiteError as exc:
        raise pytest.UsageError(str(exc)) from exc
    plugin = _SessionPlugin(session, config)
    session.add_warnings(_rootdir_hints(config))
    plugin.terminate.install()  # a pytest-xdist worker too: ``timeout`` signals the whole group
    config.stash[source_key] = session
    config.stash[session_key] = plugin
    config.pluginmanager.register(plugin, "promptsuite-session")
    if suites:
        if config.args_source is pytest.Config.ArgsSource.ARGS:
            config.args = [*config.args, *suites]
        else:
            config.args = suites


def _rootdir_hints(config: pytest.Config) -> list[str]:
    """Say where pytest took a ``--prompt-*`` option's value (``--prompt-baseline ../rep``) for a test path and moved
    its rootdir up to hold it: pytest reads the paths before it knows our options, and ``--lf`` moves with it."""
    args = [str(arg) for arg in config.invocation_params.args]
    flags = {option.flag for option in OPTIONS if option.metavar is not None}
    return [
        f"pytest took {value!r} (the value of {flag}) for a test path, so its rootdir is {config.rootpath} and its "
        f"cache (--lf, --ff) moved with it; write {flag}={value}"
        for flag, value in zip(args, args[1:], strict=False)
        if flag in flags and _moved_rootdir(config, config.invocation_params.dir / value)
    ]


def _moved_rootdir(config: pytest.Config, path: Path) -> bool:
    """Tell whether pytest's rootdir (no ini file: the common folder of the paths) was moved up to hold ``path``:
    existing (pytest counts only those) and outside the invocation folder."""
    invocation, root, target = config.invocation_params.dir.resolve(), config.rootpath.resolve(), path.resolve()
    moved = config.inipath is None and root != invocation and target.is_relative_to(root)
    return moved and path.exists() and not target.is_relative_to(invocation)


def _refuse_workers(options: RunOptions, config: pytest.Config) -> None:
    """Refuse ``-n`` with the options that run in one process (batch mode, ``--prompt-sequential``)."""
    if options.batch_mode and getattr(config.option, "numprocesses", None):
        raise pytest.UsageError(
            "--prompt-batch, --prompt-batch-file and --prompt-batch-results make one batch of the run's calls in one "
            "process: drop -n"
        )
    if options.sequential and getattr(config.option, "numprocesses", None):
        raise pytest.UsageError(
            "--prompt-sequential decides case by case, in the order it chose, in one process: drop -n"
        )


def pytest_unconfigure(config: pytest.Config) -> None:
    """Close the session: its event loop and cassettes."""
    plugin = config.stash.get(session_key, None)
    if plugin is not None:
        from pytest_promptsuite.items import source_key

        plugin.session.close()
        plugin.terminate.restore()
        if plugin._frozen:
            gc.unfreeze()
        del config.stash[session_key]
        del config.stash[source_key]
        config.pluginmanager.unregister(plugin)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> PromptFile | None:
    """Collect a ``*.jsonl`` under a ``--prompt-suite`` target, or named on the command line."""
    plugin = parent.config.stash.get(session_key, None)
    if file_path.suffix != ".jsonl" or plugin is None:
        return None
    if plugin.session.index.wants(file_path) or parent.session.isinitpath(file_path):
        from pytest_promptsuite.items import PromptFile

        return PromptFile.from_parent(parent, path=file_path)
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the cases of the other shards (``--prompt-shard K/N``); order the cases for
    ``--prompt-sequential`` (seeded, stratified by slice; other tests first)."""
    plugin = config.stash.get(session_key, None)
    if plugin is not None and plugin.session.options.sequential:
        _in_sequential_order(items)
    shard = plugin.session.options.shard if plugin is not None else None
    if shard is not None:
        _keep_shard(config, items, shard)


def _in_sequential_order(items: list[pytest.Item]) -> None:
    """Put the cases in ``--prompt-sequential``'s order, after the other tests."""
    from pytest_promptsuite.items import PromptItem
    from pytest_promptsuite.run.sequential_run import run_order

    ours = [item for item in items if isinstance(item, PromptItem)]
    others = [item for item in items if not isinstance(item, PromptItem)]
    items[:] = others + [ours[i] for i in run_order([item.planned for item in ours])]


def _keep_shard(config: pytest.Config, items: list[pytest.Item], shard: Any) -> None:
    """Deselect the cases of the other shards."""
    from pytest_promptsuite.items import PromptItem

    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        if isinstance(item, PromptItem) and item.planned.key.case_id not in shard:
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


class _TerminateAsInterrupt:
    """Make SIGTERM (a CI runner's cancel, ``timeout``) stop the run as Ctrl-C does: once, then no more
    (``timeout`` signals the process and then its group), and never while the run writes its report."""

    def __init__(self) -> None:
        self.previous: Any = None
        self.installed = False
        #: Set once interrupted, or once the run ends: a SIGTERM then lets the report be written.
        self.quiet = False

    def install(self) -> None:
        """Handle SIGTERM (in the main thread only: there alone can a handler be set)."""
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, self._interrupt)
            self.installed = True

    def _interrupt(self, signum: int, frame: object) -> None:
        if not self.quiet:
            self.quiet = True
            raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    def restore(self) -> None:
        """Put back the handler that was there before."""
        if self.installed:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if self.previous is None else self.previous)
            self.installed = False


def _interrupted_by(said: str) -> str:
    """Say what interrupted the run from its ``KeyboardInterrupt``'s words ("signal SIGTERM": a signal handler's)."""
    return f"stopped by {said.removeprefix('signal ')}" if said.startswith("signal SIG") else "interrupted"


class _SessionPlugin:
    """pytest's side of the run: prefetching, collecting rows, the exit status, the terminal."""

    def __init__(self, session: PromptSession, config: pytest.Config) -> None:
        self.session = session
        self.config = config
        self._prompt_nodeids: set[str] = set()
        #: The node ids of every collected case (a controller learns them from its workers).
        self._collected: list[str] = []
        self._failed_reports = 0
        self._failed_prompt_reports = 0
        #: Whether collection's objects were moved out of the cyclic collector's reach (``gc.freeze``) until the end.
        self._frozen = False
        from pytest_promptsuite.checks.outcome import Outcome  # looked up once, not for each report
        from pytest_promptsuite.items import RESULT_PROPERTY

        self._result_property = RESULT_PROPERTY
        self._failing = {Outcome.FAILED, Outcome.ERROR}
        self.terminate = _TerminateAsInterrupt()
        #: What interrupted the run ("interrupted" for Ctrl-C, "stopped by SIGTERM"), if something did.
        self._interrupted: str | None = None

    def _start(self, item: Any) -> None:
        from pytest_promptsuite.items import PromptItem

        if isinstance(item, PromptItem):
            self.session.prefetch(item.planned)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Start the calls once the run is known (after deselection), unless collecting only or collection failed."""
        from pytest_promptsuite.items import PromptItem

        ours = [item for item in session.items if isinstance(item, PromptItem)]
        self._collected = [item.nodeid for item in ours]
        self.session.expect_rows(len(ours))
        if self.config.option.collectonly or session.testsfailed:
            return
        if ours:  # what collection made lives to the end: the collector need not walk it again and again
            gc.freeze()
            self._frozen = True
        self._plan(session, ours)
        reporter: Any = self.config.pluginmanager.get_plugin("terminalreporter")
        progress = None if reporter is None else (lambda line: reporter.write_line(printable(line)))
        self._hints(progress)
        try:
            self.session.start_calls([item.planned for item in ours], progress)
        except PromptSuiteError as exc:
            raise pytest.UsageError(str(exc)) from exc

    def _plan(self, session: pytest.Session, ours: list[Any]) -> None:
        """Plan ``--prompt-sequential``'s comparisons and the calls started ahead of the items."""
        upcoming = None
        if self.session.is_worker:  # only this worker's own queue, never another worker's cases
            from pytest_promptsuite.run.prefetch import xdist_queue

            upcoming = xdist_queue(self.config.pluginmanager.get_plugins(), session.items) or (lambda n: [])
        try:
            self.session.plan_sequential([item.planned for item in ours])
        except PromptSuiteError as exc:
            raise pytest.UsageError(str(exc)) from exc
        stop_early = bool(self.config.option.maxfail) or self.session.sequential is not None  # one window ahead
        self.session.plan_prefetch(session.items, self._start, upcoming, stop_early=stop_early)

    def _hints(self, progress: Any) -> None:
        """Show the assembler's hints (a pytest-xdist worker's terminal is not shown: the controller says them last)."""
        hints = self.session.assembler.hints
        if self.session.is_worker:
            self.session.add_warnings(hints)
        elif progress is not None:
            for hint in hints:
                progress(f"promptsuite: {hint}")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        if not (item.session.shouldfail or item.session.shouldstop):  # -x or a stop: no new calls
            self.session.advance(item, nextitem)

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        """Count the cases ``-k``, ``-m`` or ``--lf`` left out (not another shard's: ``--prompt-shard`` runs a part)."""
        from pytest_promptsuite.items import PromptItem

        shard = self.session.options.shard
        ours = [item for item in items if isinstance(item, PromptItem)]
        self.session.deselected += sum(shard is None or item.planned.key.case_id in shard for item in ours)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Learn the collected ids from a worker: under pytest-xdist the controller collects nothing."""
        if not self._collected:
            self._collected = [i for i in ids if i.partition("::")[0].endswith(".jsonl")]
            self.session.expect_rows(len(self._collected))

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        self.terminate.quiet = True
        if type(excinfo.value) is KeyboardInterrupt:  # not pytest's own stop (collection errors)
            self._interrupted = _interrupted_by(str(excinfo.value))
        self.session.cancel_pending()  # Ctrl-C: in-flight calls end now; finished rows stay

    @pytest.hookimpl(trylast=True)  # after junitxml and the like have seen the row
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self._failed_reports += 1
        if report.when != "call" or self.session.is_worker:  # a worker's rows cross in its reports
            return
        properties = report.user_properties
        for index, (name, value) in enumerate(properties):
            if name == self._result_property:
                row = self.session.add_row(str(value))  # spooled to a file
                self._prompt_nodeids.add(report.nodeid)
                self.session.after_row(row)
                if report.failed and row.outcome in self._failing:
                    self._failed_prompt_reports += 1  # else a hook broke after the case: not masked
                del properties[index]  # pytest keeps every report: not every row's text
                break

    def _stop_reason(self, session: pytest.Session, exitstatus: int) -> str | None:
        """Return why the run stopped early, in pytest's words where it has some."""
        if self._interrupted is not None:
            return self._interrupted
        dsession = self.config.pluginmanager.get_plugin("dsession")  # pytest-xdist's controller
        for flag in (getattr(dsession, "shouldstop", None), session.shouldfail, session.shouldstop):
            if flag:
                return flag.removeprefix("promptsuite: ") if isinstance(flag, str) else "stopped early"
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            return "interrupted"
        return None

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """Take a pytest-xdist worker's collection warnings."""
        self.session.add_warnings(getattr(node, "workeroutput", {}).get(WARNINGS_OUTPUT, ()))
        self.session.add_call_counts(getattr(node, "workeroutput", {}).get(CALLS_OUTPUT, {}))
        deselected = getattr(node, "workeroutput", {}).get(DESELECTED_OUTPUT, 0)  # each worker collects every case
        self.session.deselected = max(self.session.deselected, deselected)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.terminate.quiet = True
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:  # a pytest-xdist worker: the controller prints the warnings
            workeroutput[WARNINGS_OUTPUT] = list(self.session.warnings)
            workeroutput[CALLS_OUTPUT] = self.session.call_counts()
            workeroutput[DESELECTED_OUTPUT] = self.session.deselected
        not_run = sum(nodeid not in self._prompt_nodeids for nodeid in self._collected)
        why = self._stop_reason(session, exitstatus)
        summary = self.session.finish(not_run=not_run, why=why, interrupted=self._interrupted is not None)
        if summary is None:
            return
        self.session.write_report()
        if exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            return  # never mask an interrupt, an internal error or a usage error
        if not summary.gate.passed:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        elif (
            exitstatus == pytest.ExitCode.TESTS_FAILED
            and not session.shouldfail
            and self._failed_reports == self._failed_prompt_reports
        ):
            session.exitstatus = pytest.ExitCode.OK
        self._drop_phase_reports()

    def _drop_phase_reports(self) -> None:
        """Forget our items' passing setup and teardown reports: pytest scans them all per failure (pytest#13360)."""
        reporter: Any = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None or "" not in reporter.stats:
            return
        ours = self._prompt_nodeids
        reporter.stats[""] = [r for r in reporter.stats[""] if r.sections or getattr(r, "nodeid", None) not in ours]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for title, lines in self.session.terminal_sections():
            terminalreporter.write_sep("-", printable(title))
            for line in lines:
                terminalreporter.write_line(printable(line))
