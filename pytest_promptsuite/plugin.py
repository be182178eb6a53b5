"""pytest glue: options, collection of case files, the run object, the summary and the gates.

The run object (:class:`PromptRun`) lives in ``config.stash`` and is registered as a plugin. It
aggregates from the reports every item sends (``pytest_runtest_logreport``), so a serial run, a
pytest-xdist run and merged shards add up the same way; only the controller writes files and
decides the gates.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import pytest

from . import hookspecs
from .cases import CaseLocation
from .cases import PromptCase
from .cases import load_cases
from .checks.base import CaseResult
from .errors import PromptSuiteError
from .items import RESULT_PROPERTY
from .items import PromptFile
from .items import PromptItem
from .models import Model
from .models import make_model
from .models.runner import ModelRunner
from .pipeline import CasePipeline
from .report import summary_lines
from .report import write_report
from .results import Summary
from .results import ThresholdPolicy
from .results import summarize
from .suite import ModelConfig
from .suite import SuiteConfig
from .suite import find_config
from .suite import load_config
from .suite import suite_targets


__all__ = ["PromptRun", "run_key"]

run_key = pytest.StashKey["PromptRun"]()


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


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


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
        "--prompt-report",
        default=None,
        metavar="DIR",
        help="Write results.jsonl, summary.json, slices.csv and summary.md into DIR",
    )
    group.addoption(
        "--prompt-min-pass-rate",
        type=_fraction,
        default=None,
        metavar="X",
        help="Default per-slice pass-rate threshold, 0..1 (default 1.0, or the config's)",
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


@pytest.hookimpl(trylast=True)
def pytest_promptsuite_make_model(
    config: pytest.Config, spec: str, settings: ModelConfig, root: Path
) -> Model:
    return make_model(spec, settings=settings, root=root)


class PromptRun:
    """State of one pytest run: suites, models, the results every item reported, the gates."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.is_worker = hasattr(config, "workerinput")
        self.invocation_dir = config.invocation_params.dir
        self.seen: dict[str, CaseLocation] = {}
        self.rows: list[CaseResult] = []
        self.summary: Summary | None = None
        self.runner = ModelRunner()
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
        model = self.config.hook.pytest_promptsuite_make_model(
            config=self.config, spec=settings.spec, settings=settings, root=root
        )
        return CasePipeline(model, self.runner, params=settings.params)

    def load(self, case_file: Path) -> list[PromptCase]:
        return load_cases(case_file, seen=self.seen, display=self.display(case_file))

    def display(self, path: Path) -> str:
        """A path as the user would write it: relative to where pytest was invoked."""
        try:
            return os.path.relpath(path, self.invocation_dir)
        except ValueError:  # another drive on Windows
            return str(path)

    # -- running ------------------------------------------------------------------------------

    def run_case(self, item: PromptItem) -> CaseResult:
        case = item.case
        location = f"{self.display(item.path)}:{case.location.line}"
        return self._pipelines[item.suite_key].run(case, location=location)

    def close(self) -> None:
        self.runner.close()

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
        return ThresholdPolicy(
            slices=slices,
            option=self.config.getoption("prompt_min_pass_rate"),
            config_default=config_default,
        )

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.is_worker or not self.rows:
            return
        self.summary = summarize(self.rows, self.policy())
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
        if self.summary is None:
            return
        terminalreporter.write_sep("-", "promptsuite: pass rate by slice")
        for line in summary_lines(self.summary):
            terminalreporter.write_line(line)
        report_dir = self.config.getoption("prompt_report")
        if report_dir:
            terminalreporter.write_line(f"promptsuite report: {report_dir}")
