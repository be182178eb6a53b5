"""The ``promptsuite`` command: ``validate`` and ``render`` (more come with later stages).

It reuses the stages directly and never imports pytest.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from .cases import CaseLocation
from .cases import PromptCase
from .cases import iter_case_files
from .cases import load_cases
from .errors import CaseFileError
from .errors import PromptSuiteError
from .suite import SuiteConfig
from .suite import suite_targets
from .templates import case_prompt


__all__ = ["main"]


def _collect(paths: Sequence[str]) -> tuple[list[PromptCase], list[str]]:
    """Every case under ``paths`` (as ``--prompt-suite`` reads them) and every problem found."""
    seen: dict[str, CaseLocation] = {}
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


def _validate(args: argparse.Namespace) -> int:
    cases, problems = _collect(args.paths)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem{'s' if len(problems) != 1 else ''} found", file=sys.stderr)
        return 1
    slices = sorted({c.slice for c in cases})
    print(f"ok: {len(cases)} cases in {len(slices)} slices ({', '.join(slices)})")
    return 0


def _render(args: argparse.Namespace) -> int:
    if not args.prompt_suite:
        print("promptsuite render: give --prompt-suite PATH", file=sys.stderr)
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
    for case in cases:
        try:
            prompt = case_prompt(case)
        except PromptSuiteError as exc:
            print(json.dumps({"case_id": case.case_id, "error": str(exc)}, ensure_ascii=False))
            continue
        print(json.dumps({"case_id": case.case_id, "prompt": prompt}, ensure_ascii=False))
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
    render.set_defaults(func=_render)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``promptsuite`` command; return its exit status."""
    args = _parser().parse_args(argv)
    try:
        return int(args.func(args))
    except PromptSuiteError as exc:
        print(str(exc), file=sys.stderr)
        return 1
