"""What a check is: a ``Check`` (one ``assert`` entry, ready to run), the ``Verdict`` it returns, the
``CheckContext`` it reads, the ``Params`` its factory reads, the ``CheckScope`` its files and code come
from, and the helpers checks share."""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import sys
from abc import ABC
from abc import abstractmethod
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any
from typing import ClassVar

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.outcome import Layer
from pytest_promptsuite.config.suite import Prices
from pytest_promptsuite.config.suite import confine
from pytest_promptsuite.errors import CheckError
from pytest_promptsuite.errors import describe_type
from pytest_promptsuite.errors import did_you_mean
from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.models.model_api import Response
from pytest_promptsuite.models.tool_calls import Step
from pytest_promptsuite.prompts.core import Prompt
from pytest_promptsuite.prompts.tool_set import ToolSet
from pytest_promptsuite.safety.scrub import scrub_cut


#: What a check graded by a judge says when the suite has none (at collection, and at run time).
NO_JUDGE = "no judge model: configure [models.judge] in the suite config or pass --prompt-judge SPEC"

#: Sends a prompt to the judge model and returns its reply text (raises ``ModelError``).
Judge = Callable[[str], str]
#: Embeds texts with the suite's embedding model: one vector per text (raises ``ModelError``).
Embed = Callable[[Sequence[str]], Sequence[Sequence[float]]]

_UNREAD = object()


@dataclass(frozen=True)
class Verdict:
    """One check's answer: ``expected`` as a predicate (``contains 'refund'``), what the value showed
    (``found``: ``no match in 120 chars``), and with ``skip`` why the check could not run (it neither
    passes nor fails). The evaluator words the message, negated for a ``not-`` type."""

    passed: bool
    expected: str = ""
    found: str = ""
    score: float | None = None
    details: dict[str, Any] | None = None
    skip: str | None = None

    @classmethod
    def skipped(cls, reason: str, **details: Any) -> Verdict:
        """Return the verdict of a check that could not run, and why (reported as skipped, not failed)."""
        return cls(passed=False, skip=reason, details=details or None)


@dataclass
class CheckContext:
    """What a check may read besides its value: the case, the output the checks see (after any
    ``pytest_promptsuite_transform_output``), the response (None for a bare output) and the judge."""

    case: PromptCase
    output: str
    response: Response | None = None
    judge: Judge | None = None
    judge_name: str | None = None
    #: The JSON path the current check reads (set by the evaluator), or None for the whole output.
    path: str | None = None
    #: The ``[model] prices`` of the model that answered (a ``cost`` check without its own).
    prices: Prices | None = None
    #: Every model step of the run (empty: one step, the response); the tool checks read it.
    trajectory: tuple[Step, ...] = ()
    #: The tools the requests offered (``is-valid-openai-tools-call`` checks calls against them).
    tools: ToolSet | None = None
    #: Embeds texts with ``[models.embedding]`` (the ``similar:cosine`` checks); None without one.
    embed: Embed | None = None
    #: The prompt the case sent (a string or chat messages); None for a bare output.
    prompt: Prompt | None = None
    #: A conversation's transcript: a row's ``turns`` (each turn's ``user``, ``reply``, ...); empty otherwise.
    transcript: tuple[dict[str, Any], ...] = ()
    _json: Any = field(default=_UNREAD, repr=False)
    _json_error: str | None = field(default=None, repr=False)

    def output_json(self) -> Any:
        """Return the output parsed as JSON (once); ``ValueError`` names the parse error."""
        if self._json is _UNREAD:
            try:
                self._json = decode(self.output, strict=False)
            except JsonError as exc:
                self._json_error = json_problem(exc)
        if self._json_error is not None:
            raise ValueError(f"output is not JSON ({self._json_error})")
        return self._json


class Check(ABC):
    """A compiled ``assert`` entry; subclass it to add a check type from a plugin: set ``layer`` and
    implement :meth:`evaluate`, which returns a failing :class:`Verdict` for a bad output (it raises
    nothing). Validate the params when the check is made and raise ``CheckError`` naming the field."""

    layer: Layer = Layer.CONTENT
    #: False for types where ``not-`` makes no sense (``human-review``).
    negatable: ClassVar[bool] = True
    #: False for checks of the response rather than its text (latency, tokens): ``path`` does not apply.
    reads_output: ClassVar[bool] = True
    #: True for checks a judge model grades (``llm-rubric``): a suite with one and no judge stops at collection.
    needs_judge: ClassVar[bool] = False

    def negated(self) -> Check:
        """Return the check a ``not-`` entry runs before its verdict is flipped: this one, for most types
        (``trajectory:tool-used`` with a list: any of them used, so ``not-`` means none is)."""
        return self

    @abstractmethod
    def evaluate(self, value: Any, ctx: CheckContext) -> Verdict:
        """Check ``value`` (the output, or the JSON value at the entry's ``path``) and say what was found."""


def json_problem(exc: JsonError) -> str:
    """Say why a text is not JSON we read: ``Expecting value at line 1 column 1``."""
    if not exc.places:
        return exc.message
    line, column = exc.places[0]
    return f"{exc.message} at line {line} column {column}"


def json_text(value: Any) -> str:
    """Return a value as text checks read it: a string as it is, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def shorten(value: Any, limit: int = 80) -> str:
    """Show a value in a message: ``repr`` of a string, compact JSON of anything else, cut to ``limit``."""
    text = repr(value) if isinstance(value, str) else json_text(value)
    if len(text) <= limit:
        return text  # whole: scrubbed with the rest of the message wherever it is shown
    kept, _, after = scrub_cut(text, limit)
    if not after:  # short once scrubbed
        return kept
    size = f"{len(value)} chars" if isinstance(value, str) else f"{len(text)} chars of JSON"
    return f"{kept}... ({size})"


def json_kind(value: Any) -> str:
    """Name a JSON value's kind in a message: ``a string``, ``an array``, ``null``..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def json_equal(a: Any, b: Any) -> bool:
    """Compare as JSON values: ``12`` is not ``"12"`` and ``true`` is not ``1``; ``12`` equals ``12.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if type(a) is not type(b):
        return False
    return _same_json(a, b)


def _same_json(a: Any, b: Any) -> bool:
    """Compare two values of one type: objects key by key, arrays item by item."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def resolve_file(value: str, base_dir: Path) -> Path:
    """Resolve a ``file://`` value (or a plain relative path) against ``base_dir``."""
    raw = value[len("file://") :] if value.startswith("file://") else value
    path = Path(raw)
    return path if path.is_absolute() else base_dir / path


@dataclass(frozen=True)
class CheckScope:
    """Where the files and code an ``assert`` entry names may come from: inside ``root`` (the suite's
    folder, links followed) and the config's ``[checks] python_modules`` with their submodules."""

    root: Path
    python_modules: tuple[str, ...] = ()

    def file(self, value: str, base_dir: Path, *, field: str, name: str) -> Path:
        """Resolve ``value`` (``file://x`` or a path) against ``base_dir``; CheckError if it leaves :attr:`root`."""
        path = confine(self.root, resolve_file(value, base_dir))
        if path is None:
            raise CheckError(
                f"{field!r} of {name!r}: {value!r} is outside the suite's folder {self.root.resolve()}; "
                "a check reads files inside it only"
            )
        return path

    def check_module(self, module: str, *, field: str, name: str) -> None:
        """Raise CheckError unless ``module`` is one of :attr:`python_modules` or inside one."""
        if any(module == m or module.startswith(m + ".") for m in self.python_modules):
            return
        listed = ", ".join(self.python_modules) or "none"
        raise CheckError(
            f"{field!r} of {name!r}: module {module!r} is not in the suite config's [checks] "
            f"python_modules (listed: {listed}); list it there, or put the function in a file "
            "inside the suite's folder (file://checks.py:name)"
        )


class Params:
    """The fields of one ``assert`` entry, read by a check factory with type checks; :meth:`done`
    then rejects every field no read asked for."""

    def __init__(self, name: str, params: dict[str, Any], *, base_dir: Path, scope: CheckScope | None = None) -> None:
        self.name = name
        #: Where the entry's relative files resolve, and where its files and code may come from.
        self.base_dir = base_dir
        self.scope = scope
        self._data = dict(params)
        self._known: list[str] = []

    def has(self, key: str) -> bool:
        """Return whether the entry has ``key``."""
        return key in self._data

    def _get(self, key: str, required: bool, what: str) -> Any:
        self._known.append(key)
        if self._data.get(key) is None:
            if required:
                raise CheckError(f"{self.name!r} needs {key!r} ({what})")
            return None
        return self._data[key]

    def raw(self, key: str, *, required: bool = False, what: str = "a value") -> Any:
        """Return the value of ``key`` as written (any JSON type)."""
        return self._get(key, required, what)

    def string(self, key: str, *, required: bool = False, what: str = "a string") -> str | None:
        """Return the string value of ``key``; CheckError naming it when it is no string."""
        value = self._get(key, required, what)
        if value is not None and not isinstance(value, str):
            raise CheckError(f"{key!r} of {self.name!r} must be {what}, got {describe_type(value)}")
        return value

    def text(self, key: str, *, required: bool = False) -> str | None:
        """Return a string, or a number as its text (promptfoo's ``contains: 0``)."""
        value = self._get(key, required, "a string")
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise CheckError(f"{key!r} of {self.name!r} must be a string, got {describe_type(value)}")
        return value if isinstance(value, str) else json_text(value)

    def strings(self, key: str, *, required: bool = False) -> list[str] | None:
        """Return a non-empty list of strings (a single string counts as a list of one)."""
        value = self._get(key, required, "a list of strings")
        if value is None:
            return None
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not value:
            raise CheckError(
                f"{key!r} of {self.name!r} must be a non-empty list of strings, got {describe_type(value)}"
            )
        for i, item in enumerate(value):
            if isinstance(item, bool) or not isinstance(item, (str, int, float)):
                raise CheckError(f"'{key}[{i}]' of {self.name!r} must be a string, got {describe_type(item)}")
        return [json_text(v) for v in value]

    def number(
        self,
        key: str,
        *,
        required: bool = False,
        minimum: float | None = None,
        maximum: float | None = None,
        what: str = "a number",
    ) -> float | None:
        """Return the value of ``key`` as a number within the bounds; CheckError naming it otherwise."""
        value = self._get(key, required, what)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CheckError(f"{key!r} of {self.name!r} must be {what}, got {describe_type(value)}")
        if not math.isfinite(value):
            raise CheckError(f"{key!r} of {self.name!r} must be {what}, got {value!r}")
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise CheckError(f"{key!r} of {self.name!r} must be {what}, got {value!r}")
        return value

    def flag(self, key: str, *, default: bool = False) -> bool:
        """Return the value of ``key`` as true or false (``default`` when absent)."""
        value = self._get(key, False, "true or false")
        if value is None:
            return default
        if not isinstance(value, bool):
            raise CheckError(f"{key!r} of {self.name!r} must be true or false, got {describe_type(value)}")
        return value

    def import_object(self, spec: str) -> Any:
        """Import what ``spec`` (the entry's ``value``) names: ``pkg.module:attr``, ``pkg.module.attr`` or
        ``file://path.py:attr``, a file or module only from where :attr:`scope` allows."""
        where = f"'value' of {self.name!r}"
        if spec.startswith("file://") or ":" in spec and spec.split(":", 1)[0].endswith(".py"):
            module, attr = self._file_module(spec, where)
        else:
            module, attr = self._named_module(spec, where)
        try:
            return getattr(module, attr)
        except AttributeError:
            raise CheckError(f"{where}: {module.__name__!r} has no attribute {attr!r}") from None

    def _file_module(self, spec: str, where: str) -> tuple[Any, str]:
        """Import the file of ``file://path.py:attr`` (from where :attr:`scope` allows); return it and ``attr``."""
        file_part, sep, attr = spec.rpartition(":")
        if not sep or not attr:
            raise CheckError(f"{where} must look like 'file://checks.py:function', got {spec!r}")
        if self.scope is not None:
            path = self.scope.file(file_part, self.base_dir, field="value", name=self.name)
        else:
            path = resolve_file(file_part, self.base_dir)
        return _import_file(path, where), attr

    def _named_module(self, spec: str, where: str) -> tuple[Any, str]:
        """Import the module of ``pkg.module:attr`` or ``pkg.module.attr``; return it and ``attr``."""
        if ":" in spec:
            module_path, _, attr = spec.partition(":")
        else:
            module_path, _, attr = spec.rpartition(".")
        if not module_path or not attr:
            raise CheckError(f"{where} must be a dotted path like 'package.module:name', got {spec!r}")
        if self.scope is not None:
            self.scope.check_module(module_path, field="value", name=self.name)
        try:
            return importlib.import_module(module_path), attr
        except ImportError as exc:
            raise CheckError(f"{where}: cannot import module {module_path!r}: {exc}") from exc
        except (Exception, SystemExit) as exc:
            raise CheckError(f"{where}: importing {module_path!r} failed: {exc!r}") from exc

    def done(self) -> None:
        """Reject every field no read asked for."""
        for key in self._data:
            if key not in self._known:
                fields = ", ".join(repr(k) for k in sorted(set(self._known))) or "none"
                raise CheckError(
                    f"unknown field {key!r} for {self.name!r}"
                    + did_you_mean(key, self._known)
                    + f"; its fields: {fields} (and 'weight', 'path', 'metric')"
                )


def _import_file(path: Path, where: str) -> Any:
    module_name = f"_promptsuite_user_{abs(hash(str(path.resolve())))}"
    module = sys.modules.get(module_name)
    if module is None:
        location = importlib.util.spec_from_file_location(module_name, path)
        if location is None or location.loader is None or not path.is_file():
            raise CheckError(f"{where}: no Python file {str(path)!r}")
        module = importlib.util.module_from_spec(location)
        try:
            location.loader.exec_module(module)
        except (Exception, SystemExit) as exc:  # the user's module failed to import: say which and why
            raise CheckError(f"{where}: importing {str(path)!r} failed: {exc!r}") from exc
        sys.modules[module_name] = module
    return module
