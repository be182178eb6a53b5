"""promptfoo's template rules (``[template] semantics = "promptfoo"``, written by ``promptsuite import
promptfoo``): Nunjucks' over our Jinja sandbox, so an imported prompt renders as promptfoo renders it."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from pytest_promptsuite.dialects.promptfoo.node import NodeFilters
from pytest_promptsuite.errors import TemplateError
from pytest_promptsuite.formats.jsonio import encode
from pytest_promptsuite.prompts.core import Message
from pytest_promptsuite.prompts.fields import FieldRead
from pytest_promptsuite.prompts.fields import TemplateReads
from pytest_promptsuite.prompts.fields import jinja_reads
from pytest_promptsuite.prompts.files.history_filters import MakeFilter
from pytest_promptsuite.prompts.files.renderers import JinjaRenderer


if TYPE_CHECKING:
    from jinja2.sandbox import SandboxedEnvironment

#: A var that names another (``'tweet about {{topic}}'``), as promptfoo's ``resolveVariables`` finds it.
_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")
#: The case var that carries a test's ``transformVars`` (written by the import): ``{code, vars, uuid, where}``,
#: ``vars`` naming the test's own vars (the ones the transform is given).
TRANSFORM_VARS = "promptfoo_transform_vars"


def js_string(value: Any) -> str:
    """Return ``value`` as Nunjucks prints it (JavaScript's ``String``): ``true``, ``1`` for 1.0,
    ``a,b`` for a list, empty for null."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, (list, tuple)):
        return ",".join("" if v is None else js_string(v) for v in value)
    if isinstance(value, Mapping):
        return "[object Object]"
    return str(value)


def _js_number(value: float) -> str:
    """Return a float as JavaScript's ``String`` writes it: ``NaN``, ``Infinity``, ``1`` for 1.0."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)


def file_and_function(written: str) -> tuple[str, str | None]:
    """Split ``FILE:NAME`` at its last colon, as promptfoo's ``parseFilePathAndFunctionName`` does (a colon at
    1, a Windows drive, splits nothing); no name gives None."""
    cut = written.rfind(":")
    return (written[:cut], written[cut + 1 :] or None) if cut > 1 else (written, None)


def js_json(value: Any, indent: int | None = None) -> str:
    """Write ``value`` as JavaScript's ``JSON.stringify(value, null, indent)`` does (``1`` for 1.0, ``null`` for
    NaN); also Nunjucks' ``dump`` filter."""

    def numbers(item: Any) -> Any:
        if isinstance(item, float) and item.is_integer() and abs(item) < 1e21:
            return int(item)
        if isinstance(item, list):
            return [numbers(x) for x in item]
        if isinstance(item, dict):
            return {key: numbers(x) for key, x in item.items()}
        return item

    return encode(numbers(value), indent=indent or None, compact=not indent, scrub=False)


def _load(text: Any) -> Any:
    """promptfoo's ``load`` filter: ``JSON.parse``."""
    try:
        return json.loads(str(text))
    except json.JSONDecodeError as exc:
        raise TemplateError(f"load: {str(text)[:40]!r} is not JSON: {exc.msg}") from None


def resolve_vars(row: Mapping[str, Any]) -> dict[str, Any]:
    """Fill the vars that name other vars, as promptfoo's ``resolveVariables`` does: each pass fills the
    first ``{{ name }}`` of each string var whose name is defined, at most five passes."""
    variables = dict(row)
    for _ in range(5):
        resolved = True
        for key, value in variables.items():
            if not isinstance(value, str):
                continue
            match = _PLACEHOLDER.search(value)
            if match and match.group(1) in variables:
                named = variables[match.group(1)]
                filled = "null" if named is None else js_string(named)  # String(null), as replace() makes it
                variables[key] = value[: match.start()] + filled + value[match.end() :]
                resolved = False
        if resolved:
            break
    return variables


def promptfoo_environment() -> SandboxedEnvironment:
    """Make our sandbox with Nunjucks' rules: an undefined variable (or attribute of one) renders
    empty, every value prints as JavaScript prints it, and ``dump`` and ``load`` are promptfoo's."""
    import jinja2

    from pytest_promptsuite.prompts.files.jinja import sandbox_environment

    env = sandbox_environment()
    env.undefined = jinja2.ChainableUndefined
    env.finalize = js_string
    env.filters["dump"] = js_json
    env.filters["load"] = _load
    return env


@dataclass
class PromptfooRenderer(JinjaRenderer):
    """Renders a ``template_file`` under promptfoo's semantics: vars composed first, then the template
    in :func:`promptfoo_environment`; every field it reads may be missing (it renders empty). The
    config's ``nunjucksFilters`` (``node_filters``) run in Node.js."""

    node_filters: NodeFilters | None = None
    #: The suite's folder: a ``file://`` ``transformVars`` lies in it.
    base: Path | None = None
    #: What runs a test's ``transformVars`` (``row``, ``base``) -> vars (the import's runtime).
    vars_transform: Callable[[Mapping[str, Any], Path | None], dict[str, Any]] | None = None

    def _environment(self) -> SandboxedEnvironment:
        return promptfoo_environment()

    def _filter(self, name: str) -> Any:
        if self.node_filters is not None and name in self.node_filters.files:
            return self.node_filters.filter(name)
        return None if name in ("dump", "load") else super()._filter(name)

    def with_filters(self, make_filter: MakeFilter) -> JinjaRenderer:
        """Return this renderer if it has a filter lookup already, else a new one using ``make_filter``."""
        if self.make_filter is not None:
            return self
        return type(self)(make_filter, self.node_filters, self.base, self.vars_transform)

    def render(self, template: str, row: Mapping[str, Any]) -> str:
        """Render ``template`` with the row's vars, made by the test's ``transformVars`` when it has one,
        then composed, as its context."""
        if TRANSFORM_VARS in row and self.vars_transform is not None:
            row = {**row, **self.vars_transform(row, self.base)}
        return super().render(template, resolve_vars(row))

    def fields(self, template: str) -> list[FieldRead]:
        """Return the variables ``template`` reads, each one a case may lack (Nunjucks renders it empty),
        compiling it first: a syntax error, an unknown filter or a JavaScript filter without Node.js is a
        TemplateError at collection."""
        self._compiled(template)
        reads = [FieldRead(r.name, r.line, True) for r in jinja_reads(self._env, template)]
        return [*reads, FieldRead(TRANSFORM_VARS, 0, True)] if self.vars_transform is not None else reads


@dataclass(frozen=True)
class PromptfooChat:
    """A promptfoo chat prompt (``[template] task_prompts`` + ``task`` under ``semantics = "promptfoo"``):
    each message's content rendered by :class:`PromptfooRenderer`, as promptfoo renders each string of a
    JSON prompt; a message that renders empty is kept, as promptfoo keeps it."""

    messages: tuple[tuple[str, str], ...]
    renderer: PromptfooRenderer
    #: ``prompts.yml:LINE``, where the task's prompt is written.
    where: str
    task: str

    @property
    def name(self) -> str:
        """This prompt's name in errors: ``prompts.yml:3 (task 'prompt-1')``."""
        return f"{self.where} (task {self.task!r})"

    @property
    def params(self) -> dict[str, Any]:
        """Request params the prompt sets: none."""
        return {}

    def template_reads(self, provides: frozenset[str] = frozenset()) -> TemplateReads:
        """Return the variables the messages read (each one a case may lack: it renders empty)."""
        reads: list[FieldRead] = []
        for i, (_, source) in enumerate(self.messages):
            try:
                reads.extend(self.renderer.fields(source))
            except TemplateError as exc:
                raise TemplateError(f"{self.name} messages[{i}]: {exc}") from None
        file, _, line = self.where.rpartition(":")
        path, number = (Path(file), int(line)) if line.isdigit() else (None, 0)
        return TemplateReads(self.name, tuple(reads), path, number, provides=provides)

    def render(self, row: Mapping[str, Any], *, max_length: int | None = None) -> list[Message]:
        """Render every message for ``row`` (``max_length`` is not promptfoo's: ignored)."""
        messages: list[Message] = []
        for i, (role, source) in enumerate(self.messages):
            try:
                messages.append({"role": role, "content": self.renderer.render(source, row)})
            except TemplateError as exc:
                raise TemplateError(f"{self.name} messages[{i}]: {exc}") from None
        return messages

    def parse_output(self, text: str) -> str:
        """Return the output as it is."""
        return text
