"""The ``promptsuite`` command: ``validate``, ``render``, ``diff``, ``merge``, ``import`` and ``history``.

It finds suites through the same :class:`~pytest_promptsuite.config.discovery.SuiteIndex` and builds them
through the same hooks as the pytest plugin (built-ins, installed plugins and the conftest files
pytest would load), and never imports pytest.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_promptsuite.config.discovery import SuiteIndex
from pytest_promptsuite.config.options import BY_FLAG
from pytest_promptsuite.config.options import RunOptions
from pytest_promptsuite.errors import CaseFileError
from pytest_promptsuite.errors import PromptSuiteError
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.prompts.core import Prompt
from pytest_promptsuite.prompts.render_request import render_request_file
from pytest_promptsuite.run.pipeline import PlannedCase
from pytest_promptsuite.run.registration import conftest_modules
from pytest_promptsuite.run.registration import plugin_manager
from pytest_promptsuite.run.session import PromptSession
from pytest_promptsuite.safety.scrub import install_log_filter
from pytest_promptsuite.safety.scrub import printable


__all__ = ["main"]


#: The options of a run that decide what collection finds; ``validate`` and ``render`` take them too.
_COLLECTION_OPTIONS = ("--prompt-config", "--prompt-model", "--prompt-judge", "--prompt-variant", "--prompt-base-url")


class _Collected:
    """What ``pytest --collect-only --prompt-suite PATH...`` collects, collected the same way: one
    :class:`PromptSession` (the one pytest runs), its hooks from the built-ins, installed plugins
    and the conftest files pytest would load. ``problems`` holds every collection error, one
    message a line; nothing is sent to any model."""

    def __init__(self, paths: Sequence[str], args: argparse.Namespace) -> None:
        self.problems: list[str] = []
        self.planned: list[PlannedCase] = []
        options = RunOptions(
            suite=tuple(paths), config=getattr(args, "prompt_config", None), model=getattr(args, "prompt_model", None),
            judge=getattr(args, "prompt_judge", None), variant=tuple(getattr(args, "prompt_variant", None) or ()),
            base_url=getattr(args, "prompt_base_url", None), no_cache=True,
        )
        cwd = Path.cwd()
        try:
            index = SuiteIndex(invocation_dir=None, rootpath=cwd, config=options.config)  # paths as given
            self.session = PromptSession(
                options, hook=plugin_manager().hook, invocation_dir=cwd, rootpath=cwd, index=index
            )
        except PromptSuiteError as exc:
            self.problems.append(str(exc))
            return
        index = self.session.index
        for raw in paths:
            try:
                index.add_target(raw)
            except PromptSuiteError as exc:
                self.problems.append(str(exc))
        if self.problems:
            return
        files = [path for path in index.case_files() if index.wants(path)]
        try:  # the conftests pytest would load for these files, as pytest loads them: first
            hook = plugin_manager(conftest_modules(files, root=cwd)).hook
        except PromptSuiteError as exc:
            self.problems.append(str(exc))
            return
        self.session.assembler.hook = hook
        for path in files:
            try:
                self.planned.extend(self.session.collect_file(path, hook.pytest_promptsuite_make_check))
            except CaseFileError as exc:
                self.problems.extend(exc.problems)
            except PromptSuiteError as exc:
                self.problems.extend(str(exc).splitlines())

    @property
    def warnings(self) -> list[str]:
        """What collection noticed but does not stop on."""
        return self.session.warnings if not self.problems else []

    def close(self) -> None:
        """Close the session (its event loop), if it started."""
        if hasattr(self, "session"):
            self.session.close()


def _print_problems(problems: Sequence[str]) -> None:
    for problem in problems:
        print(printable(problem), file=sys.stderr)
    print(f"{len(problems)} problem{'s' if len(problems) != 1 else ''} found", file=sys.stderr)


def _validate(args: argparse.Namespace) -> int:
    collected = _Collected(args.paths, args)
    try:
        if collected.problems:
            _print_problems(collected.problems)
            return 1
        for warning in collected.warnings:
            print(printable(f"warning: {warning}"), file=sys.stderr)
        failed = []
        for planned in collected.planned:  # a dry render of every case in every variant
            if planned.key.repeat == 0:
                error = collected.session.dry_render(planned)[1]
                if error is not None:
                    failed.append(f"{planned.location}: {planned.name}: {error}")
        if failed:
            _print_problems(failed)
            return 1
    finally:
        collected.close()
    cases = {p.key.case_id: p.slice for p in collected.planned}  # the items know these: no case read back
    slices = sorted(set(cases.values()))
    print(f"ok: {len(cases)} cases in {len(slices)} slices ({', '.join(slices)})")
    return 0


def _text(prompt: Prompt) -> str:
    """A prompt as it is sent, for a reader: the string, or each message under its role."""
    if isinstance(prompt, str):
        return prompt
    parts = []
    for message in prompt:
        content = message.get("content")
        parts.append(f"[{message.get('role')}]\n{content if isinstance(content, str) else encode(content)}")
    return "\n".join(parts)


def _show(planned: PlannedCase, requests: list[Prompt], error: str | None, form: str,
          labels: Sequence[tuple[str, Prompt]] = ()) -> str:
    """One case in one variant as ``render`` prints it (``form``: text or jsonl); ``labels``: in
    the ppl mode, each label's prompt."""
    case, variant = planned.case, planned.key.variant
    if form == "jsonl":
        shown: dict[str, Any] = {"case_id": case.case_id, "variant": variant,
                                 "prompt": requests[0] if requests else None, "error": error}
        if labels:
            shown["labels"] = dict(labels)
        if isinstance(case.input, list) and requests:  # multi-turn: the requests known before any reply
            shown["requests"] = requests
        return encode(shown)
    head = f"=== {planned.location}: {planned.name} [{case.slice}] ==="
    if error is not None:
        return f"{head}\nerror: {error}"
    bodies = [_text(r) for r in requests]
    if labels:
        bodies = [f"--- label {label} ---\n{_text(prompt)}" for label, prompt in labels]
    elif len(bodies) > 1:
        bodies = [f"--- request {i + 1} of {len(bodies)} ---\n{b}" for i, b in enumerate(bodies)]
    return "\n".join([head, *bodies])


def _render(args: argparse.Namespace) -> int:
    if args.request:
        status, answer = render_request_file(args.request)
        print(encode(answer))
        return status
    if not args.prompt_suite:
        print("promptsuite render: give --prompt-suite PATH or --request FILE.json", file=sys.stderr)
        return 2
    form = args.format or ("text" if sys.stdout.isatty() else "jsonl")
    collected = _Collected(args.prompt_suite, args)
    try:
        if collected.problems:
            _print_problems(collected.problems)
            return 1
        wanted = set(args.case_id)
        chosen = [p for p in collected.planned if p.key.repeat == 0 and (not wanted or p.key.case_id in wanted)]
        missing = set(args.case_id) - {p.key.case_id for p in chosen}
        if missing:
            print(f"no case with id {', '.join(sorted(missing))}", file=sys.stderr)
            return 1
        status = 0
        for planned in chosen:
            requests, error = collected.session.dry_render(planned)
            status = 1 if error is not None else status
            labels = collected.session.label_prompts(planned) if error is None else []
            print(printable(_show(planned, requests, error, form, labels)) + ("\n" if form == "text" else ""))
        return status
    finally:
        collected.close()


def _diff(args: argparse.Namespace) -> int:
    from pytest_promptsuite.cli.compare import run_diff

    return run_diff(
        Path(args.old), Path(args.new), alpha=args.prompt_alpha, max_regression=args.prompt_max_regression,
        baseline_variant=args.prompt_baseline_variant,
    )


def _merge(args: argparse.Namespace) -> int:
    from pytest_promptsuite.cli.compare import run_merge

    baseline = Path(args.prompt_baseline) if args.prompt_baseline else None
    return run_merge([Path(p) for p in args.shards], Path(args.out), baseline=baseline)


def _history(args: argparse.Namespace) -> int:
    from pytest_promptsuite.report.trends import history_lines
    from pytest_promptsuite.results.frames import read_history

    for line in history_lines(read_history(args.folders, last=args.last), last=args.last):
        print(printable(line))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="promptsuite", description="pytest-promptsuite tools")
    commands = parser.add_subparsers(dest="command", required=True)
    validate = commands.add_parser(
        "validate", help="collect suites as pytest --collect-only does, and dry-render every case; "
        "exits 1 with path:line problems"
    )
    validate.add_argument("paths", nargs="+", metavar="PATH")
    render = commands.add_parser("render", help="show exactly what would be sent for cases")
    render.add_argument("--prompt-suite", action="append", default=[], metavar="PATH")
    render.add_argument("--case-id", action="append", default=[], metavar="ID")
    render.add_argument("--format", choices=("text", "jsonl"), default=None,
                        help="text (the default on a terminal): each prompt as sent, messages under their "
                        "roles; jsonl (the default when piped): case_id, variant, prompt, error")
    render.add_argument("--request", metavar="FILE.json",
                        help="render one template request (docs/templates.md) and print JSON")
    for command in (validate, render):
        for flag in _COLLECTION_OPTIONS:
            command.add_argument(flag, **BY_FLAG[flag].kwargs)
    validate.set_defaults(func=_validate)
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
    from pytest_promptsuite.cli.importing import add_import_command

    add_import_command(commands)
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
    except BrokenPipeError:  # `promptsuite render ... | head`: the reader has seen enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
