"""The ``promptsuite`` command: ``validate`` and ``render`` (more come with later stages).

It reuses the stages directly and never imports pytest.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from .cases import PromptCase
from .cases import iter_case_files
from .cases import load_cases
from .errors import CaseFileError
from .errors import PromptSuiteError
from .suite import SuiteConfig
from .suite import suite_targets
from .templates.case import suite_prompts
from .templates.request import render_request_file


__all__ = ["main"]


def _collect(paths: Sequence[str]) -> tuple[list[PromptCase], list[str]]:
    """Every case under ``paths`` (as ``--prompt-suite`` reads them) and every problem found."""
    seen: dict[str, str] = {}
    cases: list[PromptCase] = []
    problems: list[str] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            problems.append(f"{raw}: no such file or folder")
            continue
        try:
            suite, targets = suite_targets(path)
        except PromptSuiteError as exc:
            problems.append(str(exc))
            continue
        exclude = _train_files(suite)
        for target in targets:
            for case_file in iter_case_files(target, exclude=exclude):
                try:
                    cases.extend(load_cases(case_file, seen=seen))
                except CaseFileError as exc:
                    problems.extend(exc.problems)
    return cases, problems


def _train_files(suite: SuiteConfig | None) -> set[Path]:
    if suite is None or suite.suite.train is None:
        return set()
    return {suite.resolve(suite.suite.train, key="suite.train")}


def plugin_manager() -> Any:
    """Our hooks outside pytest: the built-ins (``plugin.py``'s ``trylast`` implementations) and
    the installed plugins of the ``promptsuite.plugins`` entry point group.

    Neither module imports pytest (a user's conftest may).
    """
    import pluggy

    from . import builtins
    from . import hookspecs

    class Manager(pluggy.PluginManager):
        def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
            opts = super().parse_hookimpl_opts(plugin, name)
            if opts is None and name.startswith("pytest_promptsuite_") and callable(getattr(plugin, name)):
                # plain functions count, as under pytest
                return {"wrapper": False, "hookwrapper": False, "optionalhook": False,
                        "tryfirst": False, "trylast": False, "specname": None}
            return opts

    manager = Manager("pytest")
    manager.add_hookspecs(hookspecs)
    manager.register(builtins, "promptsuite")
    manager.load_setuptools_entrypoints(hookspecs.ENTRY_POINT_GROUP)
    return manager


def _conftests(case_files: Iterable[Path]) -> list[ModuleType]:
    """The ``conftest.py`` modules pytest would load for these case files (those from the
    current folder down to each file's folder), so their check types validate here too."""
    import importlib.util

    cwd = Path.cwd().resolve()
    found: dict[Path, ModuleType] = {}
    for case_file in case_files:
        folder = case_file.resolve().parent
        chain = [folder, *folder.parents]
        if cwd in chain:
            chain = chain[: chain.index(cwd) + 1]
        else:
            chain = [folder]
        for directory in reversed(chain):
            path = directory / "conftest.py"
            if path in found or not path.is_file():
                continue
            spec = importlib.util.spec_from_file_location(f"_promptsuite_conftest_{len(found)}", path)
            if spec is None or spec.loader is None:
                continue
            module = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(module)
            except Exception as exc:  # the user's conftest does not import: say so, as pytest would
                raise PromptSuiteError(f"{path}: importing the conftest failed: {exc!r}") from exc
            found[path] = module
    return list(found.values())


def _check_problems(paths: Sequence[str], cases: Sequence[PromptCase]) -> list[str]:
    """Every bad ``assert`` entry of ``cases`` and every bad ``[[checks]]`` entry of the configs
    that ``paths`` name, with the check types of installed plugins."""
    from .checks import compile_case
    from .checks import compile_suite_checks
    from .errors import CheckError

    manager = plugin_manager()
    for conftest in _conftests(case.location.path for case in cases):
        manager.register(conftest, f"conftest:{conftest.__file__}")
    make = manager.hook.pytest_promptsuite_make_check
    problems: list[str] = []
    for case in cases:
        try:
            compile_case(case, make)
        except CheckError as exc:
            problems.extend(str(exc).splitlines())
    for raw in paths:
        try:
            suite, _ = suite_targets(Path(raw))
        except PromptSuiteError:
            continue  # already reported by _collect
        if suite is not None and suite.checks:
            try:
                compile_suite_checks(suite.checks, make, base_dir=suite.root, source=raw)
            except CheckError as exc:
                problems.extend(str(exc).splitlines())
    return problems


def _validate(args: argparse.Namespace) -> int:
    cases, problems = _collect(args.paths)
    if not problems:
        problems = _check_problems(args.paths, cases)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem{'s' if len(problems) != 1 else ''} found", file=sys.stderr)
        return 1
    slices = sorted({c.slice for c in cases})
    print(f"ok: {len(cases)} cases in {len(slices)} slices ({', '.join(slices)})")
    return 0


def _render(args: argparse.Namespace) -> int:
    if args.request:
        status, answer = render_request_file(args.request)
        print(json.dumps(answer, ensure_ascii=False))
        return status
    if not args.prompt_suite:
        print("promptsuite render: give --prompt-suite PATH or --request FILE.json", file=sys.stderr)
        return 2
    cases, problems = _collect(args.prompt_suite)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    if args.case_id:
        wanted = set(args.case_id)
        cases = [c for c in cases if c.case_id in wanted]
        missing = wanted - {c.case_id for c in cases}
        if missing:
            print(f"no case with id {', '.join(sorted(missing))}", file=sys.stderr)
            return 1
    prompts_of = suite_prompts(args.prompt_suite)
    for case in cases:
        prompts = prompts_of(case)
        variants: list[str | None] = list(prompts.variants) or [None]
        if args.prompt_variant:
            unknown = [v for v in args.prompt_variant if v not in prompts.variants]
            if unknown:
                known = ", ".join(prompts.variants) or "none"
                print(f"case {case.case_id}: no variant {unknown[0]!r} (variants: {known})", file=sys.stderr)
                return 1
            variants = list(args.prompt_variant)
        for variant in variants:
            shown: dict[str, Any] = {"case_id": case.case_id}
            if variant is not None:
                shown["variant"] = variant
            try:
                requests = prompts.known_requests(case, variant=variant)
            except PromptSuiteError as exc:
                print(json.dumps({**shown, "error": str(exc)}, ensure_ascii=False))
                continue
            shown["prompt"] = requests[0]
            if isinstance(case.input, list):  # multi-turn: the requests known before any reply
                shown["requests"] = requests
            print(json.dumps(shown, ensure_ascii=False))
    return 0


def _diff(args: argparse.Namespace) -> int:
    from .report.tools import run_diff

    return run_diff(Path(args.old), Path(args.new))


def _merge(args: argparse.Namespace) -> int:
    from .report.tools import run_merge

    baseline = Path(args.prompt_baseline) if args.prompt_baseline else None
    return run_merge([Path(p) for p in args.shards], Path(args.out), baseline=baseline)


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
                        help="render one template request (SPEC-templates.md) and print JSON")
    render.set_defaults(func=_render)
    diff = commands.add_parser(
        "diff", help="compare two result sets (report folders or results.jsonl); exits 0, 2 if unreadable"
    )
    diff.add_argument("old", metavar="OLD")
    diff.add_argument("new", metavar="NEW")
    diff.set_defaults(func=_diff)
    merge = commands.add_parser("merge", help="merge shard report folders into one report")
    merge.add_argument("shards", nargs="+", metavar="SHARD")
    merge.add_argument("--out", required=True, metavar="DIR")
    merge.add_argument("--prompt-baseline", default=None, metavar="PATH")
    merge.set_defaults(func=_merge)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``promptsuite`` command; return its exit status."""
    args = _parser().parse_args(argv)
    try:
        return int(args.func(args))
    except PromptSuiteError as exc:
        print(str(exc), file=sys.stderr)
        return 1
