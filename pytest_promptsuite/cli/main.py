"""The ``promptsuite`` command: ``validate``, ``render``, ``calibrate``, ``diff``, ``merge``, ``import``,
``history``, ``schema``, ``comment`` and ``github``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_promptsuite.cases.files import output_kind
from pytest_promptsuite.cases.load import load_cases
from pytest_promptsuite.config.discovery import SuiteIndex
from pytest_promptsuite.config.options import BY_FLAG
from pytest_promptsuite.config.options import OPTIONS
from pytest_promptsuite.config.options import RunOptions
from pytest_promptsuite.errors import CaseFileError
from pytest_promptsuite.errors import PromptSuiteError
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.errors import did_you_mean
from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.prompts.core import Prompt
from pytest_promptsuite.report.reasons import plural
from pytest_promptsuite.run.pipeline import PlannedCase
from pytest_promptsuite.run.registration import conftest_modules
from pytest_promptsuite.run.registration import plugin_manager
from pytest_promptsuite.run.session import PromptSession
from pytest_promptsuite.run.session import problem_lines
from pytest_promptsuite.safety.scrub import install_log_filter
from pytest_promptsuite.safety.scrub import printable


#: The options of a run that decide what collection finds; ``validate`` and ``render`` take them too.
_COLLECTION_OPTIONS = ("--prompt-config", "--prompt-model", "--prompt-judge", "--prompt-variant", "--prompt-base-url")


class _Collected:
    """What ``pytest --collect-only --prompt-suite PATH...`` collects, collected the same way (the same
    session and hooks, conftests included); ``problems`` holds every collection error, one a line.
    ``render=False`` leaves out collection's render of every case (``render`` shows each failure itself)."""

    def __init__(
        self,
        paths: Sequence[str],
        args: argparse.Namespace,
        *,
        render: bool = True,
        thorough: bool = False,
        cache: bool = False,
    ) -> None:
        self.problems: list[str] = []
        self.planned: list[PlannedCase] = []
        values = {**{o.dest: o.default for o in OPTIONS}, **vars(args), "prompt_suite": paths}
        values["prompt_no_cache"] = values["prompt_no_cache"] or not cache
        options = RunOptions.from_values(values.__getitem__)
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
        failed: list[str] = []
        for raw in paths:
            try:
                index.add_target(raw)
            except PromptSuiteError as exc:
                self.problems += problem_lines(exc)
                failed.append(raw)
        if thorough:
            self._lines_of(failed)
        if thorough or not self.problems:
            self._collect([path for path in index.case_files() if index.wants(path)], cwd, render, thorough)

    def _lines_of(self, targets: Sequence[str]) -> None:
        """Read the case files of targets whose config failed, for their lines' own problems."""
        for raw in targets:
            path = Path(raw)
            found = sorted(path.rglob("*.jsonl")) if path.is_dir() else [path] if path.suffix == ".jsonl" else []
            for file in (f for f in found if f.is_file() and output_kind(f) is None):
                load_cases(file, seen=self.session.seen, display=str(file), problems_to=self.problems)

    def _collect(self, files: list[Path], cwd: Path, render: bool, thorough: bool = False) -> None:
        """Collect the case files with the conftests pytest would load for them (loaded first, as pytest does)."""
        try:
            hook = plugin_manager(conftest_modules(files, root=cwd)).hook
        except PromptSuiteError as exc:
            self.problems.append(str(exc))
            return
        self.session.assembler.hook = hook
        for path in files:
            if thorough:
                planned, problems = self.session.collect_every_problem(path, hook.pytest_promptsuite_make_check)
                self.planned += planned
                self.problems += problems
                continue
            try:
                self.planned.extend(self.session.collect_file(path, hook.pytest_promptsuite_make_check, render=render))
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
    collected = _Collected(args.paths, args, thorough=True)
    try:
        if collected.problems:
            _print_problems(collected.problems)
            return 1
        for warning in collected.warnings:
            print(printable(f"warning: {warning}"), file=sys.stderr)
    finally:
        collected.close()
    print(_counts(collected.planned, args.prompt_repeat))
    return 0


def _counts(planned: Sequence[PlannedCase], repeats: int) -> str:
    """Say what ``validate`` found: cases, slices, and the items a run makes of them (variants x repeats)."""
    cases = {p.key.case_id: p.slice for p in planned}  # the items know these: no case read back
    slices = sorted(set(cases.values()))
    variants = len({p.key.variant for p in planned})
    many = f"{plural(variants, 'variant')} x {plural(repeats, 'repeat')}"
    return (
        f"ok: {len(cases)} cases in {len(slices)} slices ({', '.join(slices)}), {plural(len(planned), 'item')} ({many})"
    )


def _text(prompt: Prompt) -> str:
    """Show a prompt as it is sent, for a reader: the string, or each message under its role."""
    if isinstance(prompt, str):
        return prompt
    parts = []
    for message in prompt:
        content = message.get("content")
        parts.append(f"[{message.get('role')}]\n{content if isinstance(content, str) else encode(content)}")
    return "\n".join(parts)


def _show(
    planned: PlannedCase,
    requests: list[Prompt],
    error: str | None,
    form: str,
    labels: Sequence[tuple[str, Prompt]],
    tools: Mapping[str, Any] | None = None,
) -> str:
    """Show one case in one variant as ``render`` prints it (``form``: text or jsonl; ``labels``: the ppl mode's;
    ``tools``: the request's ``tools`` and ``tool_choice``)."""
    tools = tools or {}
    if form == "jsonl":
        return _show_jsonl(planned, requests, error, labels, tools)
    head = f"=== {planned.location}: {planned.name} [{planned.case.slice}] ==="
    if error is not None:
        return f"{head}\nerror: {error}"
    bodies = _bodies(requests, labels)
    if tools:
        choice = tools.get("tool_choice")
        bodies.append(f"--- tools{f' (tool_choice {encode(choice)})' if choice is not None else ''} ---")
        bodies.extend(_tool_line(tool) for tool in tools["tools"])
    return "\n".join([head, *bodies])


def _bodies(requests: list[Prompt], labels: Sequence[tuple[str, Prompt]]) -> list[str]:
    """Show each label's prompt (the ppl mode), else each request, headed when there are several."""
    if labels:
        return [f"--- label {label} ---\n{_text(prompt)}" for label, prompt in labels]
    bodies = [_text(r) for r in requests]
    if len(bodies) > 1:
        return [f"--- request {i + 1} of {len(bodies)} ---\n{b}" for i, b in enumerate(bodies)]
    return bodies


def _show_jsonl(
    planned: PlannedCase,
    requests: list[Prompt],
    error: str | None,
    labels: Sequence[tuple[str, Prompt]],
    tools: Mapping[str, Any],
) -> str:
    """Show one case in one variant as a JSON line."""
    case = planned.case
    prompt = requests[0] if requests else None
    shown: dict[str, Any] = {"case_id": case.case_id, "variant": planned.key.variant, "prompt": prompt, "error": error}
    shown.update(tools)
    if labels:
        shown["labels"] = dict(labels)
    if isinstance(case.input, list) and requests:  # multi-turn: the requests known before any reply
        shown["requests"] = requests
    return encode(shown)


def _tool_line(tool: Mapping[str, Any]) -> str:
    """Show a function tool as ``name(parameters as JSON): description``."""
    function = tool.get("function") or {}
    line = f"{function.get('name', '?')}({encode(function.get('parameters', {}), compact=True)})"
    return line + (f": {function['description']}" if function.get("description") else "")


def render_request_file(path: str, hook: Any) -> tuple[int, dict[str, Any]]:
    """Run ``promptsuite render --request PATH`` through the render-request hook: return the exit status and
    the JSON object to print (status 1 and ``{"error": {"type", "message"}}`` for a user error)."""
    try:
        with open(path, "rb") as fp:
            request = decode(fp.read().decode("utf-8-sig"))
    except OSError as exc:
        error: Exception = TemplateError(f"{path}: cannot read the render request: {exc.strerror}")
    except JsonError as exc:
        error = TemplateError(f"{path}: the render request is not valid JSON: {exc.describe()}")
    except ValueError as exc:  # bad UTF-8
        error = TemplateError(f"{path}: the render request is not valid JSON: {exc}")
    else:
        try:
            answer = hook.pytest_promptsuite_render_request(request=request)
            if answer is None:
                raise TemplateError(f"{path}: no plugin renders requests (OpenCompass's dialect is not registered)")
            return 0, answer
        except TemplateError as exc:
            error = exc
    return 1, {"error": {"type": type(error).__name__, "message": str(error)}}


def _render(args: argparse.Namespace) -> int:
    if args.request:
        status, answer = render_request_file(args.request, plugin_manager().hook)
        print(encode(answer))
        return status
    if not args.prompt_suite:
        print("promptsuite render: give --prompt-suite PATH or --request FILE.json", file=sys.stderr)
        return 2
    form = args.format or ("text" if sys.stdout.isatty() else "jsonl")
    collected = _Collected(args.prompt_suite, args, render=False)  # each case shows its own failure
    try:
        if collected.problems:
            _print_problems(collected.problems)
            return 1
        chosen = _chosen(collected.planned, args.case_id)
        if chosen is None:
            return 1
        return max([_print_render(collected.session, planned, form) for planned in chosen], default=0)
    finally:
        collected.close()


def _chosen(planned: list[PlannedCase], case_ids: Sequence[str]) -> list[PlannedCase] | None:
    """Return the first repeat of each planned case asked for (every case when none is); None, said, when an id
    names no case."""
    wanted = set(case_ids)
    chosen = [p for p in planned if p.key.repeat == 0 and (not wanted or p.key.case_id in wanted)]
    missing = wanted - {p.key.case_id for p in chosen}
    if missing:
        ids = list(dict.fromkeys(p.key.case_id for p in planned))
        for case_id in sorted(missing):
            print(printable(_no_case(case_id, ids)), file=sys.stderr)
        return None
    return chosen


def _no_case(case_id: str, ids: Sequence[str]) -> str:
    """Say that no case has ``case_id``: the likely typo it is of, else the nearest ids."""
    hint = did_you_mean(case_id, ids)
    if hint:
        return f"no case with id {case_id!r}{hint}"
    from rapidfuzz import fuzz  # only on this error path
    from rapidfuzz import process

    near = [found for found, _, _ in process.extract(case_id, ids, scorer=fuzz.ratio, limit=3)]
    return f"no case with id {case_id!r}; the nearest of the {len(ids)} ids: {', '.join(near)}"


def _print_render(session: PromptSession, planned: PlannedCase, form: str) -> int:
    """Print one planned case's render; return 1 when it failed, else 0."""
    requests, error = session.dry_render(planned)
    labels = session.label_prompts(planned) if error is None else []
    tools = session.tools_of(planned)
    shown = _show(planned, requests, error, form, labels, tools)
    print(printable(shown) + ("\n" if form == "text" else ""))
    return 1 if error is not None else 0


def _calibrate(args: argparse.Namespace) -> int:
    from pytest_promptsuite.cli.calibrate import run_calibration

    collected = _Collected(args.prompt_suite, args, render=False, cache=True)  # the judge's calls cached, as a run's
    try:
        if collected.problems:
            _print_problems(collected.problems)
            return 1
        if not collected.planned:
            print("promptsuite calibrate: no cases collected: give --prompt-suite PATH", file=sys.stderr)
            return 2
        return run_calibration(collected.session, collected.planned, args)
    finally:
        collected.close()


def _add_calibrate(commands: Any) -> None:
    command = commands.add_parser(
        "calibrate",
        help="judge every labelled output with the suite's judge: agreement with the labels (Cohen's kappa with its "
        "95%% interval, rates, confusion), written to calibration.json",
    )
    command.add_argument("--prompt-suite", action="append", default=[], metavar="PATH", required=True)
    command.add_argument(
        "--labels", action="append", default=[], metavar="FILE", help="a labels file (JSON Lines); repeatable"
    )
    command.add_argument(
        "--reviews",
        action="append",
        default=[],
        metavar="FILE",
        help="review decisions (review-decisions.jsonl) as labels of their cases' rubric checks; repeatable",
    )
    command.add_argument(
        "--results", metavar="REPORT", help="a report folder or results.jsonl holding the labelled cases' outputs"
    )
    command.add_argument("--out", metavar="FILE", help="where to write the calibration (default: [judge] calibration)")
    command.add_argument("--markdown", metavar="FILE", help="also write the table as Markdown (a CI job summary)")
    for flag in (*_COLLECTION_OPTIONS, "--prompt-judge-repeat", "--prompt-cache", "--prompt-no-cache"):
        command.add_argument(flag, **BY_FLAG[flag].kwargs)
    command.set_defaults(func=_calibrate)


def _diff(args: argparse.Namespace) -> int:
    from pytest_promptsuite.cli.diff_merge import run_diff

    limits = {"alpha": args.prompt_alpha, "max_regression": args.prompt_max_regression}
    return run_diff(Path(args.old), Path(args.new), **limits, baseline_variant=args.prompt_baseline_variant)


def _merge(args: argparse.Namespace) -> int:
    from pytest_promptsuite.cli.diff_merge import run_merge

    baseline = Path(args.prompt_baseline) if args.prompt_baseline else None
    return run_merge([Path(p) for p in args.shards], Path(args.out), baseline=baseline)


def _comment(args: argparse.Namespace) -> int:
    from pytest_promptsuite.cli.comment import run_comment

    baseline = Path(args.baseline) if args.baseline else None
    try:
        text = printable(run_comment(Path(args.report), baseline, args.key))
    except PromptSuiteError as exc:
        print(printable(str(exc)), file=sys.stderr)
        return 2
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def _add_comment(commands: Any) -> None:
    comment = commands.add_parser(
        "comment",
        help="print the pull request comment of a report folder: the gate's verdict, the slice table, the newly "
        "failing cases, cost and the baseline, under GitHub's 65,536-character limit; exits 2 if unreadable",
    )
    comment.add_argument("report", metavar="REPORT", help="a report folder written by --prompt-report")
    comment.add_argument(
        "--baseline",
        metavar="REPORT",
        help="the baseline's report folder: its cost, judge and origin.json (commit, age); a REPORT that compared "
        "with no baseline is compared with it as --prompt-baseline would",
    )
    comment.add_argument("--key", default="", help="tells this suite's comment from another's in the same pull request")
    comment.add_argument("--out", metavar="FILE", help="write the Markdown to FILE instead of stdout")
    comment.set_defaults(func=_comment)


def _github(args: argparse.Namespace) -> int:
    from pytest_promptsuite.cli import github_steps

    if args.step == "baseline":
        where = {"branch": args.branch, "workflow": args.workflow}
        return github_steps.run_baseline(Path(args.out), args.artifact, os.environ, sys.stdout, **where)
    return github_steps.run_post(Path(args.body), os.environ, sys.stdout, number=args.pull_request)


def _add_github(commands: Any) -> None:
    github = commands.add_parser(
        "github", help="the GitHub action's steps: fetch the baseline report, post the sticky comment (GITHUB_TOKEN)"
    )
    steps = github.add_subparsers(dest="step", required=True)
    baseline = steps.add_parser(
        "baseline",
        help="download the report artifact of the base branch's latest successful run of this workflow into DIR, "
        "with origin.json (commit, branch, time, run); none found is said in a line, not an error",
    )
    baseline.add_argument("--out", required=True, metavar="DIR")
    baseline.add_argument("--artifact", default="promptsuite-report", help="the artifact's name (default %(default)s)")
    baseline.add_argument("--branch", help="the branch whose runs to look at (default: the pull request's base)")
    baseline.add_argument("--workflow", help="the workflow's file name (default: this job's, GITHUB_WORKFLOW_REF)")
    post = steps.add_parser(
        "post",
        help="create the pull request's comment from FILE (the output of promptsuite comment), or update the one "
        "with the same marker line; a fork's read-only token is said in a line; exits 0",
    )
    post.add_argument("body", metavar="FILE")
    post.add_argument("--pull-request", type=int, metavar="N", help="default: the job's pull request")
    github.set_defaults(func=_github)


def _history(args: argparse.Namespace) -> int:
    from pytest_promptsuite.report.trends import history_lines
    from pytest_promptsuite.results.frames import read_history

    for line in history_lines(read_history(args.folders, last=args.last), last=args.last):
        print(printable(line))
    return 0


def _schema(args: argparse.Namespace) -> int:
    if args.what == "config":
        from pytest_promptsuite.config.suite import json_schema
    else:
        from pytest_promptsuite.cases.case_schema import json_schema
    print(encode(json_schema(), indent=2))
    return 0


def _import(args: argparse.Namespace) -> int:
    return int(args.run(args))


def _add_import(commands: Any, hook: Any) -> None:
    command = commands.add_parser("import", help="write a suite from an OpenCompass or promptfoo config")
    kinds = command.add_subparsers(dest="kind", required=True)
    hook.pytest_promptsuite_add_importer(importers=kinds)
    command.set_defaults(func=_import)


def _parser(hook: Any = None) -> argparse.ArgumentParser:
    hook = hook if hook is not None else plugin_manager().hook
    parser = argparse.ArgumentParser(prog="promptsuite", description="pytest-promptsuite tools")
    commands = parser.add_subparsers(dest="command", required=True)
    validate = commands.add_parser(
        "validate",
        help="collect suites as pytest --collect-only does, and dry-render every case; exits 1 with path:line problems",
    )
    validate.add_argument("paths", nargs="+", metavar="PATH")
    render = commands.add_parser("render", help="show exactly what would be sent for cases")
    render.add_argument("--prompt-suite", action="append", default=[], metavar="PATH")
    render.add_argument("--case-id", action="append", default=[], metavar="ID")
    render.add_argument(
        "--format",
        choices=("text", "jsonl"),
        default=None,
        help="text (the default on a terminal): each prompt as sent, messages under their "
        "roles; jsonl (the default when piped): case_id, variant, prompt, error",
    )
    render.add_argument(
        "--request", metavar="FILE.json", help="render one template request (docs/templates.md) and print JSON"
    )
    for command in (validate, render):
        for flag in _COLLECTION_OPTIONS:
            command.add_argument(flag, **BY_FLAG[flag].kwargs)
    validate.add_argument("--prompt-repeat", **BY_FLAG["--prompt-repeat"].kwargs)
    validate.set_defaults(func=_validate)
    render.set_defaults(func=_render)
    diff = commands.add_parser(
        "diff",
        help="compare two result sets (report folders or results.jsonl) under the regression rule; "
        "exits 1 when a slice regressed, 0 otherwise, 2 if unreadable",
    )
    diff.add_argument("old", metavar="OLD")
    diff.add_argument("new", metavar="NEW")
    for flag in ("--prompt-alpha", "--prompt-max-regression", "--prompt-baseline-variant"):
        diff.add_argument(flag, **BY_FLAG[flag].kwargs)
    diff.set_defaults(func=_diff)
    _add_calibrate(commands)
    merge = commands.add_parser("merge", help="merge shard report folders into one report")
    merge.add_argument("shards", nargs="+", metavar="SHARD")
    merge.add_argument("--out", required=True, metavar="DIR")
    merge.add_argument("--prompt-baseline", default=None, metavar="PATH")
    merge.set_defaults(func=_merge)
    _add_import(commands, hook)
    history = commands.add_parser(
        "history", help="each slice's pass rate (95%% CI) over earlier runs: report folders or summary.json files"
    )
    history.add_argument("folders", nargs="+", metavar="DIR")
    history.add_argument("--last", type=int, default=8, metavar="N", help="show the latest N runs (default 8)")
    history.set_defaults(func=_history)
    schema = commands.add_parser(
        "schema", help="print the JSON Schema (draft 2020-12) of a promptsuite.toml or of a case line, for editors"
    )
    schema.add_argument("what", choices=("config", "case"), help="config: promptsuite.toml; case: one JSONL line")
    schema.set_defaults(func=_schema)
    _add_comment(commands)
    _add_github(commands)
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
    except KeyboardInterrupt:  # Ctrl-C: a line, not a traceback (an import writes all or nothing)
        written = "; nothing was written" if args.command == "import" else ""
        print(f"promptsuite {args.command}: interrupted{written}", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `promptsuite render ... | head`: the reader has seen enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
