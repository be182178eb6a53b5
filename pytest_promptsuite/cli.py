"""The ``promptsuite`` command: ``validate``, ``render``, ``diff`` and ``merge``.

It finds suites through the same :class:`~pytest_promptsuite.suites.SuiteIndex` and builds them
through the same hooks as the pytest plugin (built-ins, installed plugins and the conftest files
pytest would load), and never imports pytest.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .assemble import Assembler
from .cases import PromptCase
from .cases import load_cases
from .checks import CheckScope
from .checks import compile_cases
from .errors import CaseFileError
from .errors import PromptSuiteError
from .formats.jsonio import encode
from .models.runner import ModelRunner
from .options import BY_FLAG
from .options import RunOptions
from .plugins import conftest_modules
from .plugins import plugin_manager
from .scrub import install_log_filter
from .scrub import printable
from .suite import SuiteConfig
from .suites import SuiteIndex
from .suites import SuiteKey
from .templates import CasePrompts
from .templates.request import render_request_file


__all__ = ["main"]


class _Suites:
    """The suites under some paths, as ``--prompt-suite`` reads them, and their cases."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.index = SuiteIndex(invocation_dir=None, rootpath=Path.cwd())
        self.problems: list[str] = []
        self.files: list[Path] = []
        for raw in paths:
            if not Path(raw).exists():
                self.problems.append(f"{raw}: no such file or folder")
                continue
            try:
                self.index.add_target(raw)
            except PromptSuiteError as exc:
                self.problems.append(str(exc))
        self.files = list(self.index.case_files())
        self.cases: dict[Path, list[PromptCase]] = {}
        seen: dict[str, str] = {}
        for case_file in self.files:
            try:
                self.index.check_file(case_file)
                self.cases[case_file] = load_cases(case_file, seen=seen, display=self.index.display(case_file))
            except CaseFileError as exc:
                self.problems.extend(exc.problems)
            except PromptSuiteError as exc:
                self.problems.append(str(exc))
        self._assembler: Assembler | None = None
        self._prompts: dict[SuiteKey, CasePrompts] = {}

    @property
    def assembler(self) -> Assembler:
        """Builds the suites through the hooks of the built-ins, installed plugins and the
        conftest files of the case files (imported on first use)."""
        if self._assembler is None:
            manager = plugin_manager(conftest_modules(self.files, root=Path.cwd()))
            self._assembler = Assembler(
                manager.hook, runner=ModelRunner(), options=RunOptions(), invocation_dir=Path.cwd(),
                display=self.index.display,
            )
        return self._assembler

    def prompts(self, case_file: Path) -> tuple[SuiteConfig, CasePrompts]:
        """The config and prompts of the suite a case file belongs to (built once per suite)."""
        key, suite = self.index.suite_of(case_file)
        if key not in self._prompts:
            self._prompts[key] = self.assembler.prompts(suite)
        return suite, self._prompts[key]

    def check_problems(self) -> list[str]:
        """Every bad ``assert`` entry of the cases, then every bad ``[[checks]]`` entry and prompt
        of their suites, one message a line."""
        make = self.assembler.hook.pytest_promptsuite_make_check
        problems: list[str] = []
        suites: dict[SuiteKey, Path] = {}
        for case_file, cases in self.cases.items():
            try:
                key, suite = self.index.suite_of(case_file)
                suites.setdefault(key, case_file)
                scope = CheckScope(self.index.folder_of(case_file), suite.python_modules)
                compile_cases(cases, make, display=self.index.display(case_file), scope=scope)
            except PromptSuiteError as exc:
                problems.extend(str(exc).splitlines())
        for case_file in suites.values():
            try:
                self.assembler.suite_checks(self.index.suite_of(case_file)[1])
            except PromptSuiteError as exc:
                problems.extend(str(exc).splitlines())
            try:
                self.prompts(case_file)
            except PromptSuiteError as exc:
                problems.extend(str(exc).splitlines())
        return problems


def _validate(args: argparse.Namespace) -> int:
    suites = _Suites(args.paths)
    problems = suites.problems or suites.check_problems()
    for problem in problems:
        print(printable(problem), file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem{'s' if len(problems) != 1 else ''} found", file=sys.stderr)
        return 1
    cases = [case for file_cases in suites.cases.values() for case in file_cases]
    slices = sorted({c.slice for c in cases})
    print(f"ok: {len(cases)} cases in {len(slices)} slices ({', '.join(slices)})")
    return 0


def _selected(suites: _Suites, wanted: Sequence[str]) -> list[tuple[Path, PromptCase]] | str:
    """The cases to render (``--case-id``), each with its file; a message when one is missing."""
    chosen = [(f, c) for f, cases in suites.cases.items() for c in cases if not wanted or c.case_id in wanted]
    missing = set(wanted) - {c.case_id for _, c in chosen}
    return f"no case with id {', '.join(sorted(missing))}" if missing else chosen


def _render_case(case: PromptCase, prompts: CasePrompts, variants: list[str | None]) -> None:
    for variant in variants:
        shown: dict[str, Any] = {"case_id": case.case_id}
        if variant is not None:
            shown["variant"] = variant
        try:
            requests = prompts.known_requests(case, variant=variant)
        except PromptSuiteError as exc:
            print(encode({**shown, "error": str(exc)}))
            continue
        shown["prompt"] = requests[0]
        if isinstance(case.input, list):  # multi-turn: the requests known before any reply
            shown["requests"] = requests
        print(encode(shown))


def _render(args: argparse.Namespace) -> int:
    if args.request:
        status, answer = render_request_file(args.request)
        print(encode(answer))
        return status
    if not args.prompt_suite:
        print("promptsuite render: give --prompt-suite PATH or --request FILE.json", file=sys.stderr)
        return 2
    suites = _Suites(args.prompt_suite)
    for problem in suites.problems:
        print(problem, file=sys.stderr)
    if suites.problems:
        return 1
    selected = _selected(suites, args.case_id)
    if isinstance(selected, str):
        print(selected, file=sys.stderr)
        return 1
    for case_file, case in selected:
        suite, prompts = suites.prompts(case_file)
        names = list(suite.variants)
        unknown = [v for v in args.prompt_variant if v not in names]
        if unknown:
            print(f"case {case.case_id}: no variant {unknown[0]!r} (variants: {', '.join(names) or 'none'})",
                  file=sys.stderr)
            return 1
        variants: list[str | None] = list(args.prompt_variant or names) or [None]
        _render_case(case, prompts, variants)
    return 0


def _diff(args: argparse.Namespace) -> int:
    from .report.tools import run_diff

    return run_diff(
        Path(args.old), Path(args.new), alpha=args.prompt_alpha, max_regression=args.prompt_max_regression,
        baseline_variant=args.prompt_baseline_variant,
    )


def _merge(args: argparse.Namespace) -> int:
    from .report.tools import run_merge

    baseline = Path(args.prompt_baseline) if args.prompt_baseline else None
    return run_merge([Path(p) for p in args.shards], Path(args.out), baseline=baseline)


def _history(args: argparse.Namespace) -> int:
    from .report.history import history_lines
    from .results.history import load_history

    history = load_history([Path(p) for p in args.folders], limit=args.last)
    for line in history_lines(history, last=args.last):
        print(printable(line))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="promptsuite", description="pytest-promptsuite tools")
    commands = parser.add_subparsers(dest="command", required=True)
    validate = commands.add_parser("validate", help="check case files and suite configs")
    validate.add_argument("paths", nargs="+", metavar="PATH")
    validate.set_defaults(func=_validate)
    render = commands.add_parser("render", help="show exactly what would be sent for cases")
    render.add_argument("--prompt-suite", action="append", default=[], metavar="PATH")
    render.add_argument("--case-id", action="append", default=[], metavar="ID")
    render.add_argument("--prompt-variant", action="append", default=[], metavar="NAME",
                        help="only this prompt version (default: every [variants.NAME])")
    render.add_argument("--request", metavar="FILE.json",
                        help="render one template request (docs/templates.md) and print JSON")
    render.set_defaults(func=_render)
    diff = commands.add_parser(
        "diff", help="compare two result sets (report folders or results.jsonl) under the regression rule; "
        "exits 1 when a slice regressed, 0 otherwise, 2 if unreadable"
    )
    diff.add_argument("old", metavar="OLD")
    diff.add_argument("new", metavar="NEW")
    for flag in ("--prompt-alpha", "--prompt-max-regression", "--prompt-baseline-variant"):
        diff.add_argument(flag, **BY_FLAG[flag].kwargs)
    diff.set_defaults(func=_diff)
    merge = commands.add_parser("merge", help="merge shard report folders into one report")
    merge.add_argument("shards", nargs="+", metavar="SHARD")
    merge.add_argument("--out", required=True, metavar="DIR")
    merge.add_argument("--prompt-baseline", default=None, metavar="PATH")
    merge.set_defaults(func=_merge)
    history = commands.add_parser(
        "history", help="each slice's pass rate (95%% CI) over earlier runs: report folders or summary.json files"
    )
    history.add_argument("folders", nargs="+", metavar="DIR")
    history.add_argument("--last", type=int, default=8, metavar="N", help="show the latest N runs (default 8)")
    history.set_defaults(func=_history)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``promptsuite`` command; return its exit status."""
    args = _parser().parse_args(argv)
    install_log_filter()
    try:
        return int(args.func(args))
    except PromptSuiteError as exc:
        print(printable(str(exc)), file=sys.stderr)
        return 1
