"""promptfoo ``tests`` into cases: ``defaultTest`` merged in, ``vars`` expanded, ``assert`` entries mapped
one to one where the names are shared (a table of mappers), ``metadata`` as tags, and a slice from a metadata key."""

from __future__ import annotations

import itertools
import math
import re
import uuid
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from typing import Any

from pytest_promptsuite.dialects.promptfoo.nunjucks import TRANSFORM_VARS
from pytest_promptsuite.dialects.promptfoo.nunjucks import file_and_function
from pytest_promptsuite.dialects.promptfoo.nunjucks import js_string
from pytest_promptsuite.dialects.promptfoo.nunjucks import resolve_vars
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.imported_suite import inside
from pytest_promptsuite.formats.imported_suite import jsonl
from pytest_promptsuite.formats.jsonio import decode
from pytest_promptsuite.safety.limits import IMPORT_CASES
from pytest_promptsuite.safety.limits import IMPORT_CASES_BYTES
from pytest_promptsuite.safety.scrub import register


_VAR = re.compile(r"\{\{\s*(\w+)\s*\}\}")


@dataclass
class AssertModule:
    """The generated ``promptfoo_asserts.py``: one function per javascript or python assert."""

    functions: list[str] = field(default_factory=list)
    #: The ``file://`` files the asserts name (relative to the config), copied beside the module.
    files: list[str] = field(default_factory=list)
    #: What reads an assert's ``file://`` value (a JSON, YAML or text file) as promptfoo reads it: (value, where).
    read_value: Callable[[Any, str], Any] | None = None

    def add(
        self,
        kind: str,
        value: Any,
        threshold: float | None,
        where: str,
        *,
        fill_vars: bool = False,
        config: Any = None,
        inverse: bool = False,
    ) -> str:
        """Add a function running one code assert (its inline code's ``{{ var }}`` filled at run time when
        ``fill_vars``; the assert's ``config`` in its context; ``inverse`` for its ``not-`` form); return the
        ``python`` check value naming it."""
        name = f"{kind.replace('-', '_')}_{len(self.functions) + 1}"
        runner = "javascript" if kind == "javascript" else "python_assert"
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}: a {kind} assert needs its code or a file:// function as 'value'")
        if value.startswith("file://"):
            call = self._file_call(value, where)
        else:
            call = f"{value!r}, output, case" + (", fill_vars=True" if fill_vars else "")
        if config is not None:
            call += f", config={config!r}"
        if inverse:
            call += ", inverse=True"
        self.functions.append(
            f"def {name}(output, case, context=None):\n"
            f"    return {runner}({call}, threshold={threshold!r}, name={f'{kind} assert ({where})'!r}, base=_HERE, "
            "sent=context)\n"
        )
        return f"file://promptfoo_asserts.py:{name}"

    def _file_call(self, value: str, where: str) -> str:
        """Return the arguments that run a ``file://PATH[:fn]`` assert; its file is copied beside the module."""
        written, _, fn = value[len("file://") :].partition(":")
        path = inside(written)  # copied beside the module under this name, so never outside --out
        if path is None:
            raise ConfigError(f"{where}: file://{written} lies outside the config's folder")
        if path not in self.files:
            self.files.append(path)
        return f"None, output, case, file=str(_HERE / {path!r}), fn={fn or None!r}"

    def transformed(self, entry: dict[str, Any], transforms: list[Any], where: str, *, fill_vars: bool = False) -> str:
        """Add a function running the assert ``entry`` (ours) on the output after ``transforms`` (the
        test's, then the assert's: code or ``file://``), its value's ``{{ var }}`` filled at run time when
        ``fill_vars``; return the ``python`` check value naming it."""
        name = f"transformed_{len(self.functions) + 1}"
        steps = [f"Transform({self.transform(t, where)!r}, {where!r}, _HERE)" for t in transforms]
        self.functions.append(
            f"def {name}(output, case, context=None):\n"
            f"    return transformed(output, case, {entry!r}, sent=context, "
            f"transforms=({', '.join(steps)}{',' if steps else ''}), "
            f"base=_HERE{', fill_vars=True' if fill_vars else ''})\n"
        )
        return f"file://promptfoo_asserts.py:{name}"

    def transform(self, transform: Any, where: str) -> str:
        """Return a transform (JavaScript code, or ``file://PATH[:function]``) as the imported suite runs it:
        its file inside the config's folder, copied beside the module."""
        if not isinstance(transform, str) or not transform.strip():
            raise ConfigError(f"{where}: a transform is JavaScript code or file://PATH[:function]")
        if not transform.startswith("file://"):
            return transform
        written, function = file_and_function(transform[len("file://") :])
        path = inside(written)
        if path is None:
            raise ConfigError(f"{where}: {transform} lies outside the config's folder")
        if path not in self.files:
            self.files.append(path)
        return f"file://{path}{f':{function}' if function else ''}"

    def markup(self, kind: str, value: Any, *, inverse: bool) -> str:
        """Add a function running promptfoo's own ``is-html``, ``contains-html``, ``is-sql`` or ``contains-sql``
        (``kind``, its ``not-`` form when ``inverse``); return the ``python`` check value naming it."""
        name = f"{kind.replace('-', '_')}_{len(self.functions) + 1}"
        self.functions.append(
            f"def {name}(output, case):\n"
            f"    return markup({kind!r}, output, case, value={value!r}, inverse={inverse!r}, base=_HERE)\n"
        )
        return f"file://promptfoo_asserts.py:{name}"

    def uncarried(self, what: str, where: str) -> str:
        """Add a function that fails the case for an assert (or test option) not carried over, so a
        case never passes on the checks that remain; return the ``python`` check value naming it."""
        name = f"not_carried_{len(self.functions) + 1}"
        self.functions.append(f"def {name}(output, case):\n    return not_carried({what!r}, {where!r})\n")
        return f"file://promptfoo_asserts.py:{name}"

    def text(self) -> str:
        """Return the module's source."""
        head = (
            '"""The javascript and python asserts of an imported promptfoo config, as python checks."""\n\n'
            "from pathlib import Path\n\n"
            "from pytest_promptsuite.dialects.promptfoo.code_asserts import javascript\n"
            "from pytest_promptsuite.dialects.promptfoo.code_asserts import markup\n"
            "from pytest_promptsuite.dialects.promptfoo.code_asserts import not_carried\n"
            "from pytest_promptsuite.dialects.promptfoo.code_asserts import python_assert\n"
            "from pytest_promptsuite.dialects.promptfoo.code_asserts import transformed\n"
            "from pytest_promptsuite.dialects.promptfoo.prompt_code import Transform\n\n\n"
            "_HERE = Path(__file__).resolve().parent\n\n\n"
        )
        return head + "\n\n".join(self.functions)


def fill(value: Any, variables: Mapping[str, Any], where: str) -> Any:
    """Fill ``{{ name }}`` in an assert's value from the test's vars, composed first (as promptfoo renders
    it after the prompt); its length is computed first, and past :data:`IMPORT_CASES_BYTES` it is refused."""
    if isinstance(value, str):
        return _fill_text(value, variables, where)
    if isinstance(value, list):
        return [fill(v, variables, where) for v in value]
    return value


def _fill_text(value: str, variables: Mapping[str, Any], where: str) -> str:
    found = list(_VAR.finditer(value))
    if not found:
        return value
    variables = resolve_vars(variables)
    texts = {name: js_string(variables[name]) for name in {m.group(1) for m in found} if name in variables}
    size = len(value) + sum(len(texts[m.group(1)]) - len(m.group(0)) for m in found if m.group(1) in texts)
    if size > IMPORT_CASES_BYTES.value:
        raise ConfigError(f"{where}: the value filled from the vars is longer than {IMPORT_CASES_BYTES}")
    return _VAR.sub(lambda m: texts.get(m.group(1), m.group(0)), value)


#: An assert's keys that are carried over (``metric`` only names it in promptfoo's report).
_ASSERT_KEYS = frozenset({"type", "value", "threshold", "weight", "metric", "assert"})
#: An assert's keys that change its verdict on any model: an assert with one is not carried over.
_VERDICT_KEYS = ("transform", "contextTransform")
#: A test's keys that are carried over.
_TEST_KEYS = frozenset({"description", "vars", "assert", "metadata", "threshold", "options", "providerOutput"})
#: A test's options that are carried over.
_CARRIED_OPTIONS = frozenset(
    {"disableDefaultAsserts", "disableVarExpansion", "prefix", "suffix", "transform", "postprocess", "transformVars"}
)
#: The shared types that read the call, not its output: a transform changes nothing for them.
_CALL_TYPES = frozenset({"latency", "cost"})
#: The shared types that need more than the output (a judge): not carried over after a transform.
_JUDGED_TYPES = frozenset({"llm-rubric"})


def _not_carried(kind: str, why: str, code: AssertModule, where: str, unsupported: list[str]) -> dict[str, Any]:
    """List an assert in ``unsupported`` and return the check that fails its case in its place."""
    what = f"{kind} ({why})" if why else kind
    unsupported.append(f"{where}: {what}")
    return {"type": "python", "value": code.uncarried(what, where)}


@dataclass(frozen=True)
class _Assert:
    """One promptfoo assert being mapped: as written, its type, its value filled from the vars, and where
    what it adds goes."""

    raw: Mapping[str, Any]
    kind: str
    value: Any
    variables: Mapping[str, Any]
    code: AssertModule
    where: str
    unsupported: list[str]
    fill_vars: bool

    @property
    def negated(self) -> bool:
        """Tell whether the type is ``not-`` one."""
        return self.kind.startswith("not-")

    @property
    def base(self) -> str:
        """Return the type without its ``not-``."""
        return self.kind[4:] if self.negated else self.kind

    def not_carried(self, why: str) -> dict[str, Any]:
        """List the assert as not carried over and return the check that fails its case in its place."""
        return _not_carried(self.kind, why, self.code, self.where, self.unsupported)


def _code_assert(entry: _Assert, out: dict[str, Any]) -> dict[str, Any]:
    """Map a ``javascript`` or ``python`` assert (or its ``not-`` form, which the runtime applies as promptfoo
    does: an assert whose code fails stays failed)."""
    threshold, config = entry.raw.get("threshold"), entry.raw.get("config")
    value = entry.code.add(
        entry.base, entry.value, threshold, entry.where, fill_vars=entry.fill_vars, config=config, inverse=entry.negated
    )
    out.update(type="python", value=value)
    return out


def _assert_set(entry: _Assert, out: dict[str, Any]) -> dict[str, Any]:
    inner = [
        map_assert(a, entry.variables, entry.code, f"{entry.where}.assert[{i}]", entry.unsupported)
        for i, a in enumerate(_list(entry.raw.get("assert"), "assert", entry.where))
    ]
    out.update(type="assert-set", **{"assert": inner})
    if "threshold" in entry.raw:
        out["threshold"] = entry.raw["threshold"]
    return out


#: promptfoo's embedding similarity types and ours (its ``similar`` is cosine; our ``similar`` is a string ratio).
_SIMILAR = {"similar": "similar:cosine", **{t: t for t in ("similar:cosine", "similar:dot", "similar:euclidean")}}


def _similar(entry: _Assert, out: dict[str, Any]) -> dict[str, Any]:
    """Map a promptfoo ``similar`` assert to our embedding check (it runs on ``[models.embedding]``)."""
    out["type"] = ("not-" if entry.negated else "") + _SIMILAR[entry.base]
    if entry.value is not None:
        out["value"] = entry.value
    threshold = entry.raw.get("threshold")
    if threshold is not None:
        out["threshold"] = threshold
    return out


def _shared(entry: _Assert, out: dict[str, Any]) -> dict[str, Any]:
    out["type"] = entry.kind
    if entry.value is not None:
        out["value"] = entry.value
    return out  # a threshold on such a type is one promptfoo ignores too


def _as_text(entry: _Assert, out: dict[str, Any]) -> dict[str, Any]:
    if isinstance(entry.value, (int, float)):  # promptfoo compares String(value)
        return _shared(replace(entry, value=str(entry.value)), out)
    return _shared(entry, out)


def _thresholded(entry: _Assert, out: dict[str, Any]) -> dict[str, Any]:
    out = _shared(entry, out)
    threshold = entry.raw.get("threshold")
    if threshold is not None:
        out["threshold"] = threshold
    return out


def _levenshtein(entry: _Assert, out: dict[str, Any]) -> dict[str, Any]:
    out = _shared(entry, out)
    threshold = entry.raw.get("threshold")  # promptfoo passes at distance <= threshold (default 5): whole edits
    out["threshold"] = 5 if threshold is None else max(0, math.floor(threshold))
    return out


def _markup(entry: _Assert, out: dict[str, Any]) -> dict[str, Any]:
    """Map ``is-html``, ``contains-html``, ``is-sql`` and ``contains-sql`` (and ``not-``) to promptfoo's own code."""
    out.update(type="python", value=entry.code.markup(entry.base, entry.value, inverse=entry.negated))
    return out


def _call_check(entry: _Assert, out: dict[str, Any]) -> dict[str, Any]:
    out["type"] = entry.base  # against the provider's functions or tools; promptfoo's handler ignores not-
    return out


#: How each promptfoo assert type carried over is mapped to ours (``not-`` removed): the rest are not carried.
ASSERT_MAPPERS: dict[str, Callable[[_Assert, dict[str, Any]], dict[str, Any]]] = {
    "javascript": _code_assert,
    "python": _code_assert,
    "assert-set": _assert_set,
    **dict.fromkeys(_SIMILAR, _similar),
    **dict.fromkeys(("equals", "contains", "icontains", "starts-with"), _as_text),
    **dict.fromkeys(("contains-any", "contains-all", "icontains-any", "icontains-all"), _shared),
    **dict.fromkeys(("regex", "is-json", "contains-json", "is-xml", "is-refusal", "word-count"), _shared),
    **dict.fromkeys(("latency", "cost", "llm-rubric", "rouge-n"), _thresholded),
    "levenshtein": _levenshtein,
    **dict.fromkeys(("is-html", "contains-html", "is-sql", "contains-sql"), _markup),
    **dict.fromkeys(("is-valid-openai-tools-call", "is-valid-openai-function-call"), _call_check),
}


def _assert_kind(raw: Any, where: str) -> str:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("type"), str):
        raise ConfigError(f"{where}: an assert is an object with a 'type'")
    return str(raw["type"])


def _extra_keys(raw: Mapping[str, Any], base: str) -> list[str]:
    """Return an assert's keys that are not carried over (a code assert's ``config`` is)."""
    return sorted(set(map(str, raw)) - _ASSERT_KEYS - ({"config"} if base in ("javascript", "python") else set()))


def map_assert(
    raw: Any,
    variables: Mapping[str, Any],
    code: AssertModule,
    where: str,
    unsupported: list[str],
    *,
    fill_vars: bool = False,
) -> dict[str, Any]:
    """Map one promptfoo assert to ours through :data:`ASSERT_MAPPERS`; one that is not carried over is
    listed in ``unsupported`` and becomes a check that fails the case, never a case that passes without it."""
    kind = _assert_kind(raw, where)
    changing = [k for k in _VERDICT_KEYS if k in raw]
    if changing:
        return _not_carried(kind, f"its {', '.join(changing)}", code, where, unsupported)
    entry = _Assert(raw, kind, None, variables, code, where, unsupported, fill_vars)
    extra = _extra_keys(raw, entry.base)
    if extra:
        unsupported.append(f"{where}: {kind} keys {', '.join(extra)}")
    value = raw.get("value")
    if entry.base not in ("javascript", "python") and code.read_value is not None:
        value = code.read_value(value, where)  # promptfoo's processFileReference
    entry = replace(entry, value=fill(value, variables, where))
    out: dict[str, Any] = {"weight": raw["weight"]} if "weight" in raw else {}
    mapper = ASSERT_MAPPERS.get(entry.base)
    return entry.not_carried("") if mapper is None else mapper(entry, out)


#: promptfoo's ids of an OpenAI embedding model: ``openai:embedding:MODEL`` (or ``embeddings``).
_EMBEDDING_ID = re.compile(r"openai:embeddings?:(.+)")


def embedding_table(provider: Any) -> tuple[dict[str, Any] | None, list[str]]:
    """Return the ``[models.embedding]`` table of a test's ``options.provider`` (promptfoo's grading provider:
    ``openai:embedding:MODEL``, ``{id, config}``, or ``{embedding: ...}`` beside the text grader's), None when
    it names no OpenAI embedding model, and what of it is not carried over."""
    inner, left = provider, []
    if isinstance(provider, dict) and "id" not in provider:  # {embedding: ..., text: ...}: a provider per kind
        inner = provider.get("embedding")
        left = [f"provider.{kind}" for kind in sorted(map(str, provider)) if kind != "embedding"]
    ident = inner.get("id") if isinstance(inner, dict) else inner
    match = _EMBEDDING_ID.fullmatch(ident) if isinstance(ident, str) else None
    if match is None:
        return None, ["provider"]
    table: dict[str, Any] = {"spec": f"openai:{match.group(1)}"}
    where = "provider" if inner is provider else "provider.embedding"
    return table, left + _embedding_settings(inner, table, where)


def _embedding_settings(inner: Any, table: dict[str, Any], where: str) -> list[str]:
    """Carry an embedding provider's ``config.apiBaseUrl`` into ``table``; return what else it sets."""
    settings = inner.get("config") if isinstance(inner, dict) else None
    settings = settings if isinstance(settings, dict) else {}
    if isinstance(settings.get("apiKey"), str):  # never carried over, and scrubbed wherever it shows
        register(settings["apiKey"])
    if isinstance(settings.get("apiBaseUrl"), str):
        table["base_url"] = settings["apiBaseUrl"]
    left = [f"{where}.config.{key}" for key in sorted(map(str, settings)) if key != "apiBaseUrl"]
    if isinstance(inner, dict):
        left += [f"{where}.{key}" for key in sorted(map(str, inner)) if key not in ("id", "config")]
    return left


def _with_transforms(
    raw: Any,
    variables: Mapping[str, Any],
    code: AssertModule,
    where: str,
    unsupported: list[str],
    test: Any,
    deferred: bool = False,
) -> dict[str, Any]:
    """Map one assert as :func:`map_assert` does, run on the output after the test's transform
    (``test``) and the assert's own ``transform``, in promptfoo's order; without either, as it is.
    ``deferred``: the test's ``transformVars`` makes its vars at run time, so a ``{{ var }}`` in the
    assert's value is filled then."""
    own = raw.get("transform") if isinstance(raw, Mapping) else None
    late = deferred and isinstance(raw, Mapping) and _reads_vars(raw.get("value"))
    if not test and own is None and not late:
        return map_assert(raw, variables, code, where, unsupported)
    return _after_transforms(raw, variables, code, where, unsupported, test, deferred, own, late)


def _after_transforms(
    raw: Mapping[str, Any],
    variables: Mapping[str, Any],
    code: AssertModule,
    where: str,
    unsupported: list[str],
    test: Any,
    deferred: bool,
    own: Any,
    late: bool,
) -> dict[str, Any]:
    """Map one assert run after the test's transform ``test`` and its own ``own`` (either may be None), or
    ``late`` (its value's vars filled at run time)."""
    kind = str(raw.get("type"))
    base = kind.removeprefix("not-")
    plain = {k: v for k, v in raw.items() if k != "transform"}
    if base in _CALL_TYPES:
        return map_assert(plain, variables, code, where, unsupported)
    if base == "assert-set":
        return _transformed_set(raw, variables, code, where, unsupported, test, deferred)
    if base in _JUDGED_TYPES:
        return _not_carried(kind, "after a transform", code, where, unsupported)
    transforms = [t for t in (test, own) if t is not None]
    return _transformed(plain, variables, code, where, unsupported, transforms, late)


def _transformed_set(
    raw: Mapping[str, Any],
    variables: Mapping[str, Any],
    code: AssertModule,
    where: str,
    unsupported: list[str],
    test: Any,
    deferred: bool,
) -> dict[str, Any]:
    """Map an ``assert-set`` after the test's transform: each of its asserts after it (its own is not carried)."""
    if raw.get("transform") is not None:
        return _not_carried(str(raw.get("type")), "its transform", code, where, unsupported)
    inner = [
        _with_transforms(a, variables, code, f"{where}.assert[{i}]", unsupported, test, deferred)
        for i, a in enumerate(_list(raw.get("assert"), "assert", where))
    ]
    out = {k: raw[k] for k in ("weight", "threshold") if k in raw}
    return {**out, "type": "assert-set", "assert": inner}


def _transformed(
    plain: dict[str, Any],
    variables: Mapping[str, Any],
    code: AssertModule,
    where: str,
    unsupported: list[str],
    transforms: list[Any],
    late: bool,
) -> dict[str, Any]:
    """Map an assert (without its own ``transform``) to a check of the output after ``transforms``; ``late``:
    its value's ``{{ var }}`` are filled at run time (a code assert's where its code runs)."""
    filled_code = late and str(plain.get("type")).removeprefix("not-") in (
        "javascript",
        "python",
    )  # filled where it runs
    entry = map_assert(plain, {} if late else variables, code, where, unsupported, fill_vars=filled_code)
    if entry["type"] == "python" and entry["value"].rpartition(":")[2].startswith("not_carried_"):
        return entry
    if not transforms and filled_code:
        return entry
    weight = entry.pop("weight", None)
    out = {"type": "python", "value": code.transformed(entry, transforms, where, fill_vars=late and not filled_code)}
    return out if weight is None else {**out, "weight": weight}


def _reads_vars(value: Any) -> bool:
    """Tell whether an assert's value names a var (``{{ name }}``), in a string or a list of them."""
    if isinstance(value, str):
        return _VAR.search(value) is not None
    return isinstance(value, list) and any(_reads_vars(v) for v in value)


#: What reads a ``file://`` var: (path relative to the config, the var's name, the test's vars, where) -> value.
ReadVar = Callable[[str, str, dict[str, Any], str], Any]


@dataclass
class TestSource:
    """One test as read, with where it is (``path:line``) for messages."""

    test: dict[str, Any]
    where: str


def _expands(value: Any) -> bool:
    """Tell whether a var expands into one case per value: an array whose first value is a string
    (promptfoo's ``generateVarCombinations``; an array of objects or numbers is one value)."""
    return isinstance(value, list) and bool(value) and isinstance(value[0], str)


def _combinations(variables: Mapping[str, Any], options: Mapping[str, Any]) -> int:
    """Count the cases a test's array vars expand to, before any is built."""
    if options.get("disableVarExpansion"):
        return 1
    return math.prod(len(v) for v in variables.values() if _expands(v))


def _expand(variables: Mapping[str, Any], options: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Expand the array vars: promptfoo runs a test once per combination of their values."""
    if options.get("disableVarExpansion"):
        yield dict(variables)
        return
    keys = [k for k, v in variables.items() if _expands(v)]
    for combo in itertools.product(*(variables[k] for k in keys)):
        yield {**variables, **dict(zip(keys, combo, strict=True))}


def _mapping(value: Any, key: str, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: {key} is a mapping of names to values")
    return value


def _list(value: Any, key: str, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"{where}: {key} is a list")
    return value


def _checked(test: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Check the types of a test's (or ``defaultTest``'s) keys, with ``path:line`` messages."""
    checked = dict(test)
    for key in ("vars", "metadata", "options"):
        checked[key] = _mapping(test.get(key), key, where)
    checked["assert"] = _list(test.get("assert"), "assert", where)
    return checked


def cases_of(
    tests: list[TestSource],
    default: Mapping[str, Any],
    *,
    read_var: ReadVar,
    slice_key: str | None,
    code: AssertModule,
    unsupported: list[str],
    default_where: str = "defaultTest",
    unset: frozenset[str] = frozenset(),
    expand_vars: Callable[[dict[str, Any], str], dict[str, Any]] | None = None,
) -> Cases:
    """Convert every test to a case (``defaultTest`` merged in as promptfoo's ``prepareTestCaseForEval``
    merges it), numbered in order: the text of ``cases.jsonl``. The number of cases is computed before
    any is built, and it and the text's size are refused past :data:`IMPORT_CASES` and
    :data:`IMPORT_CASES_BYTES`."""
    default = _checked(default, default_where)
    checked = [(_checked(source.test, source.where), source.where) for source in tests]
    if expand_vars is not None:  # file:// globs: a list of files, one test per file
        default["vars"] = expand_vars(dict(default["vars"]), default_where)
        checked = [({**test, "vars": expand_vars(dict(test["vars"]), where)}, where) for test, where in checked]
    _check_count(checked, default)
    writer = _CaseWriter(default, read_var, slice_key, code, unsupported, unset)
    for test, where in checked:
        writer.add_test(test, where)
    return writer.cases()


def _check_count(checked: list[tuple[dict[str, Any], str]], default: Mapping[str, Any]) -> None:
    """Refuse tests that expand to more than :data:`IMPORT_CASES` cases, before any is built."""
    total = 0
    for test, where in checked:
        total += _combinations({**default["vars"], **test["vars"]}, {**default["options"], **test["options"]})
        if total > IMPORT_CASES.value:
            raise ConfigError(
                f"{where}: the tests expand to more than {IMPORT_CASES} "
                "(a test runs once per combination of its array vars' values)"
            )


@dataclass
class _CaseWriter:
    """The lines of ``cases.jsonl`` as the tests are converted, numbered in order, and what they share: the
    ``file://`` vars read, whether a prefix or suffix was seen, the first test's embedding model."""

    default: Mapping[str, Any]
    read_var: ReadVar
    slice_key: str | None
    code: AssertModule
    unsupported: list[str]
    #: Fields our rows always have that the prompts read and promptfoo renders empty unless a var sets them.
    unset: frozenset[str] = frozenset()
    lines: list[str] = field(default_factory=list)
    size: int = 0
    number: int = 0
    affixed: list[str] = field(default_factory=list)
    embedding: dict[str, Any] | None = None

    def add_test(self, test: Mapping[str, Any], where: str) -> None:
        """Add a case per combination of a test's array vars."""
        options = {**self.default["options"], **test["options"]}  # merged as promptfoo merges them
        self.list_unsupported(test, options, where)
        transform_vars = test["options"].get("transformVars") or self.default["options"].get("transformVars")
        merged = {**self.default["vars"], **test["vars"]}
        spread = _combinations(merged, options)
        if transform_vars and spread > 1:
            self.unsupported.append(
                f"{where}: transformVars runs on each of the {spread} combinations of the array vars "
                "(promptfoo runs it once, on the arrays, before they expand)"
            )
        for variables in _expand(merged, options):
            self.add_case(test, variables, where, transform_vars)

    def list_unsupported(self, test: Mapping[str, Any], options: Mapping[str, Any], where: str) -> None:
        """List a test's keys and options that are not carried over; take its embedding model."""
        unknown = sorted(set(test) - _TEST_KEYS)
        if unknown:
            self.unsupported.append(f"{where}: test keys {', '.join(unknown)}")
        listed = sorted(set(map(str, options)) - _CARRIED_OPTIONS - {"provider"})
        if "provider" in options:  # its embedding model is the suite's [models.embedding] (the first test's)
            table, left = embedding_table(options["provider"])
            self.embedding = self.embedding or table
            if table is not None and table != self.embedding:
                left = ["provider (another embedding model than the first test's)"]
            listed += left
        if listed:
            self.unsupported.append(f"{where}: options ({', '.join(listed)})")

    def add_case(self, test: Mapping[str, Any], variables: dict[str, Any], where: str, transform_vars: Any) -> None:
        """Add the case of one combination of a test's vars."""
        self.read_files(variables, where)
        if transform_vars:  # run before the prompt renders, as promptfoo runs it (a uuid per test)
            variables[TRANSFORM_VARS] = {
                "code": self.code.transform(transform_vars, f"{where}: options.transformVars"),
                "vars": list(variables),
                "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"promptfoo:{where}:{self.number}")),
                "where": f"{where}: options.transformVars",
            }
        for name in sorted(self.unset - set(variables)):  # promptfoo renders a var no test sets as ""
            variables[name] = ""
        options = test["options"]
        affixes = {k: options.get(k) or self.default["options"].get(k) or "" for k in ("prefix", "suffix")}
        if any(affixes.values()) or self.affixed:
            self.affixed.append(where)
            variables.update({f"promptfoo_{k}": str(v) for k, v in affixes.items()})
        self.number += 1
        case = _case(self.number, test, self.default, variables, where, self.slice_key, self.code, self.unsupported)
        line = jsonl([case])
        self.size += len(line)
        if self.size > IMPORT_CASES_BYTES.value:
            raise ConfigError(f"{where}: the cases are larger than {IMPORT_CASES_BYTES}")
        self.lines.append(line)

    def read_files(self, variables: dict[str, Any], where: str) -> None:
        """Replace each ``file://`` var by what promptfoo loads from it, and drop a string's final newline."""
        for key, value in list(variables.items()):
            if isinstance(value, str) and value.startswith("file://"):
                variables[key] = self.read_var(value[len("file://") :], key, variables, where)
            elif isinstance(value, str):
                variables[key] = value[:-1] if value.endswith("\n") else value  # as promptfoo does

    def cases(self) -> Cases:
        """Return the text of ``cases.jsonl``, every case with the affix vars once one has them."""
        lines = self.lines
        if self.affixed:  # the first cases (before a prefix was seen) get empty ones too
            lines = [_with_affixes(line) for line in lines]
        return Cases("".join(lines), bool(self.affixed), self.embedding)


def _with_affixes(line: str) -> str:
    """Give a case empty ``promptfoo_prefix``/``promptfoo_suffix`` vars when it has none."""
    case = decode(line)
    case["vars"] = {"promptfoo_prefix": "", "promptfoo_suffix": "", **case["vars"]}
    return jsonl([case])


@dataclass
class Cases:
    """The text of ``cases.jsonl``, whether a test's ``prefix``/``suffix`` options wrap the prompts
    (as the ``promptfoo_prefix``/``promptfoo_suffix`` vars), and the tests' embedding model (``[models.embedding]``)."""

    text: str
    affixed: bool
    embedding: dict[str, Any] | None = None


def _case(
    number: int,
    test: Mapping[str, Any],
    default: Mapping[str, Any],
    variables: dict[str, Any],
    where: str,
    slice_key: str | None,
    code: AssertModule,
    unsupported: list[str],
) -> dict[str, Any]:
    mapped = _mapped_asserts(test, default, variables, where, code, unsupported)
    metadata = {**default["metadata"], **test["metadata"]}
    description = test.get("description")
    case: dict[str, Any] = {
        "case_id": f"test-{number}",
        "input": _input(variables, description, number),
        "slice": str(metadata.get(slice_key, "unsliced")) if slice_key else "promptfoo",
        "vars": variables,
        "assert": mapped,
        "tags": [f"{k}={v}" for k, v in metadata.items()],
        "metadata": {**({"description": description} if description else {}), **metadata, "promptfoo": where},
    }
    threshold = test.get("threshold", default.get("threshold"))
    if threshold is not None:
        case["threshold"] = threshold
    _row_fields(case, variables, where, unsupported)
    return case


def _row_fields(case: dict[str, Any], variables: Mapping[str, Any], where: str, unsupported: list[str]) -> None:
    """Carry a var named as a field our rows set (``answer``, ``history``) so that the prompt reads the var: an
    ``answer`` var of text is the case's ``answer``; any other is listed (the prompt would read ours)."""
    answer = variables.get("answer")
    if isinstance(answer, str):
        case["answer"] = answer
    elif "answer" in variables:
        unsupported.append(f"{where}: the var answer ({type(answer).__name__}: a prompt reads the case's answer)")
    if "history" in variables:
        unsupported.append(f"{where}: the var history (a prompt reads the case's turns)")


def _input(variables: Mapping[str, Any], description: Any, number: int) -> str:
    """Return a case's ``input``: its ``input`` var when it is text, else its description (a name for people;
    the prompts read the ``input`` var, which promptfoo renders empty when no var sets it)."""
    given = variables.get("input")
    return given if isinstance(given, str) and given.strip() else str(description or f"test {number}")


def _mapped_asserts(
    test: Mapping[str, Any],
    default: Mapping[str, Any],
    variables: dict[str, Any],
    where: str,
    code: AssertModule,
    unsupported: list[str],
) -> list[dict[str, Any]]:
    """Map a case's asserts: ``defaultTest``'s (unless ``disableDefaultAsserts``), then the test's, each after
    the test's transform; a ``providerOutput`` fails the case."""
    options = {**default["options"], **test["options"]}
    asserts = [*([] if test["options"].get("disableDefaultAsserts") is True else default["assert"]), *test["assert"]]
    transform = options.get("transform") or options.get("postprocess")  # promptfoo's test transform
    deferred = TRANSFORM_VARS in variables  # the vars an assert's value reads are known at run time
    mapped = [
        _with_transforms(a, variables, code, f"{where}: assert[{i}]", unsupported, transform, deferred)
        for i, a in enumerate(asserts)
    ]
    if "providerOutput" in test:
        mapped.append(_not_carried("providerOutput", "", code, where, unsupported))
    return mapped
