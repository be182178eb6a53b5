"""The static prompt check: the fields each template reads against the fields each case provides."""

from __future__ import annotations

import re
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from pytest_promptsuite.errors import nearest


if TYPE_CHECKING:
    from jinja2 import Environment
    from jinja2 import nodes

    from pytest_promptsuite.cases.prompt_case import PromptCase
    from pytest_promptsuite.config.suite import SuiteConfig


#: Fields every row holds: the input (also ``question``), ``answer`` (empty when the case has
#: none, blanked where it is the output column) and ``history`` (the case's turns).
ALWAYS = frozenset({"input", "question", "answer", "history"})
#: How many cases a message names before it only counts the rest.
SHOWN_CASES = 5

_PLACEHOLDER = re.compile(r"\{([^\W\d]\w*)\}")
#: Jinja filters and tests whose argument may be undefined.
_GUARD_FILTERS = frozenset({"default", "d"})
_GUARD_TESTS = frozenset({"defined", "undefined"})


@dataclass(frozen=True)
class FieldRead:
    """One field a template reads: its name, the line of the template it is on (1-based, 0 when
    unknown), and whether the template guards it (then a case may lack it)."""

    name: str
    line: int = 0
    guarded: bool = False


def placeholder_reads(text: str, pattern: re.Pattern[str] = _PLACEHOLDER, *, guarded: bool = False) -> list[FieldRead]:
    """Return the ``{name}`` fields of a format template (or ``pattern``'s group 1), each with its line."""
    return [FieldRead(m.group(1), text.count("\n", 0, m.start()) + 1, guarded) for m in pattern.finditer(text)]


def value_reads(value: Any) -> list[FieldRead]:
    """Return the ``{name}`` fields of every string in an infer_cfg template value (a string, a
    dialogue, a label map), lines unknown."""
    reads: list[FieldRead] = []
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            reads.extend(FieldRead(r.name) for r in placeholder_reads(item))
        elif isinstance(item, Mapping):
            todo.extend(reversed(list(item.values())))
        elif isinstance(item, (list, tuple)):
            todo.extend(reversed(item))
    return reads


def _guarded_names(tree: nodes.Template) -> set[str]:
    from jinja2 import nodes

    names = set()
    for node in tree.find_all((nodes.Filter, nodes.Test)):
        guards = _GUARD_FILTERS if isinstance(node, nodes.Filter) else _GUARD_TESTS
        if node.name in guards and isinstance(node.node, nodes.Name):
            names.add(node.node.name)
    return names


def jinja_reads(env: Environment, source: str) -> list[FieldRead]:
    """Return the variables a Jinja template reads from its context, each at its first line: names
    it loads but never sets, minus the environment's globals. Read from the syntax tree, so the
    filters it uses need not exist yet; jinja2.TemplateSyntaxError for a bad template."""
    from jinja2 import nodes  # not at start-up: a run without Jinja templates never loads it

    tree = env.parse(source)
    names = list(tree.find_all(nodes.Name))
    declared = {n.name for n in names if n.ctx != "load"} | set(env.globals) | {"loop", "caller", "varargs", "kwargs"}
    guarded = _guarded_names(tree)
    lines: dict[str, int] = {}
    for name in names:
        if name.ctx == "load" and name.name not in declared:
            lines.setdefault(name.name, name.lineno)
    return [FieldRead(n, line, n in guarded) for n, line in lines.items()]


def locate(config: SuiteConfig | None, variant: str | None, message: str, *, own_model: bool = False) -> str:
    """Prefix ``message`` (a template problem naming its key first: ``template.prompt_template: ...``)
    with the ``path:line`` of that key as ``variant`` sees it; unchanged without a config file."""
    if config is None or config.path is None:
        return message
    head = message.split(":", 1)[0].split(" ", 1)[0]
    if head.startswith("template.") and len(head.split(".")) > 1:
        key = config.template_key(variant, head.split(".")[1])
    elif "meta_template" in head:
        key = f"variants.{variant}.model.meta_template" if own_model else "model.meta_template"
    else:
        key = config.template_key(variant, "prompt_template")
    return f"{config.where(key)}: {message}"


@dataclass(frozen=True)
class TemplateReads:
    """What one template of a prompt reads, and where it is written (a read's line counts from
    ``line``). ``cases`` is ``all``, ``single``, ``multi`` or ``train`` (the train rows); ``reads``
    is None when the template cannot say (a plugin's renderer without ``fields``)."""

    name: str
    reads: tuple[FieldRead, ...] | None
    path: Path | None = None
    line: int = 0
    cases: str = "all"
    provides: frozenset[str] = field(default_factory=frozenset)

    def applies_to(self, case: PromptCase) -> bool:
        """Tell whether this template renders ``case``."""
        if self.cases in ("all", "train"):
            return self.cases == "all"
        return (self.cases == "multi") == isinstance(case.input, list)


@dataclass
class FieldReport:
    """What :func:`check_fields` found: problems stop collection, warnings do not; ``read`` is
    every field some template reads (None when a template could not say)."""

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    read: set[str] | None = field(default_factory=set)

    def add_reads(self, reads: Sequence[FieldRead] | None) -> None:
        """Add a template's reads to :attr:`read` (None: the template could not say, so no field is known unread)."""
        if reads is None:
            self.read = None
        elif self.read is not None:
            self.read.update(r.name for r in reads)


def _place(template: TemplateReads, read: FieldRead, display: Any) -> str:
    shown = display(template.path) if template.path is not None else template.name
    if template.line and read.line:
        return f"{shown}:{template.line + read.line - 1}"
    if template.line:
        return f"{shown}:{template.line}"
    return shown


def _cases_text(missing: Sequence[PromptCase]) -> str:
    shown = ", ".join(c.case_id for c in missing[:SHOWN_CASES])
    rest = len(missing) - SHOWN_CASES
    return shown + (f" and {rest} more" if rest > 0 else "")


def _one_template(
    template: TemplateReads,
    cases: Sequence[PromptCase],
    provided: set[str],
    optional: frozenset[str],
    file_shown: str,
    variant: str | None,
    display: Any,
) -> list[str]:
    problems: list[str] = []
    applies = [c for c in cases if template.applies_to(c)]
    if not applies or template.reads is None:
        return problems
    given = ALWAYS | optional | template.provides
    for read, missing in _missing(template.reads, applies, given):
        where = _place(template, read, display)
        which = f"{template.name} (variant {variant})" if variant is not None else template.name
        if len(missing) == len(applies):
            problems.append(_no_case_gives(f"{where}: {which}", read.name, file_shown, len(missing), provided | given))
        else:
            problems.append(
                f"{where}: {which} reads the field {read.name!r}, which {len(missing)} of {len(applies)} cases "
                f'of {file_shown} lack: {_cases_text(missing)}. Give it in their "vars", or list it in '
                "[template] optional to render it empty"
            )
    return problems


def _missing(
    reads: Sequence[FieldRead], applies: Sequence[PromptCase], given: frozenset[str] | set[str]
) -> Iterator[tuple[FieldRead, list[PromptCase]]]:
    """Yield each field read (once, unguarded, not given by the suite) with the cases that lack it."""
    seen: set[str] = set()
    for read in reads:
        if read.guarded or read.name in given or read.name in seen:
            continue
        seen.add(read.name)
        missing = [c for c in applies if read.name not in c.vars]
        if missing:
            yield read, missing


def _no_case_gives(which: str, name: str, file_shown: str, missing: int, known: set[str]) -> str:
    """Say that no case of a file gives a field a template reads (``which``: where and what the template is)."""
    hint = nearest(name, sorted(known))
    return (
        f"{which} reads the field {name!r}, which no case of {file_shown} provides"
        + (f" (did you mean {hint!r}?)" if hint else "")
        + f"; {missing} case{'s lack' if missing != 1 else ' lacks'} it. Give it in each case's "
        '"vars", or list it in [template] optional to render it empty'
    )


def _train_problems(
    template: TemplateReads, train: Sequence[Mapping[str, Any]], optional: frozenset[str], display: Any
) -> list[str]:
    problems = []
    first = {r.name: r for r in reversed(template.reads or ()) if not r.guarded and r.name not in optional}
    for read in reversed(first.values()):
        missing = [i + 1 for i, row in enumerate(train) if read.name not in row]
        if missing:
            problems.append(_train_problem(f"{_place(template, read, display)}: {template.name}", read, train, missing))
    return problems


def _train_problem(which: str, read: FieldRead, train: Sequence[Mapping[str, Any]], missing: list[int]) -> str:
    """Say which train rows lack a field an ICE template reads."""
    known = sorted({k for row in train for k in row})
    hint = nearest(read.name, known)
    return (
        f"{which} reads the field {read.name!r}, which "
        f"{len(missing)} of {len(train)} train rows ([suite] train) lack"
        + (f" (did you mean {hint!r}?)" if hint else "")
        + f": rows {', '.join(map(str, missing[:SHOWN_CASES]))}"
        + (f" and {len(missing) - SHOWN_CASES} more" if len(missing) > SHOWN_CASES else "")
    )


def check_fields(
    cases: Sequence[PromptCase],
    templates: Mapping[str | None, tuple[Sequence[TemplateReads], frozenset[str]]],
    *,
    file_shown: str,
    display: Any = str,
    train: Sequence[Mapping[str, Any]] = (),
) -> FieldReport:
    """Compare what each template of each variant (None: no variants) reads with what the cases
    of a file provide, and an ICE template's reads with the ``train`` rows: one problem per
    template and field; a ``vars`` field that no template reads is a warning."""
    report = FieldReport()
    provided = {name for case in cases for name in case.vars}
    for variant, (reads, optional) in templates.items():
        for template in reads:
            report.problems.extend(_one_template(template, cases, provided, optional, file_shown, variant, display))
            if template.cases == "train" and train:
                report.problems.extend(
                    p for p in _train_problems(template, train, optional, display) if p not in report.problems
                )
            report.add_reads(template.reads)
    if report.read is not None:
        report.warnings += [_unread(name, cases, file_shown) for name in sorted(provided - report.read)]
    return report


def _unread(name: str, cases: Sequence[PromptCase], file_shown: str) -> str:
    """Warn of a ``vars`` field that no template reads: where it first is, and in how many cases."""
    first = next(c for c in cases if name in c.vars)
    count = sum(name in c.vars for c in cases)
    return (
        f"{file_shown}:{first.location.line}: vars field {name!r} (in {count} case{'s' if count != 1 else ''}, "
        f"first {first.case_id}) is read by no template of the suite"
    )
