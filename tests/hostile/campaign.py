"""A seeded attack campaign through the plugin's own stage functions: each attempt of each attack class is a
clear error, accepted, a traceback, a hang (:func:`hung`), a lost result or a leaked secret. test_campaign.py
runs it small and asserts the zeros; ``benchmarks/bench_hostile.py`` runs it large and prints the table."""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_promptsuite.cases.load import load_cases
from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.checks.builtin_checks import make_builtin_check
from pytest_promptsuite.checks.check_api import CheckScope
from pytest_promptsuite.checks.compile_checks import compile_cases
from pytest_promptsuite.checks.evaluator import Evaluator
from pytest_promptsuite.config.suite import load_config
from pytest_promptsuite.errors import PromptSuiteError
from pytest_promptsuite.models.cache import Cassette
from pytest_promptsuite.models.cache import ResponseCache
from pytest_promptsuite.models.fake import FakeModel
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.model_api import Response
from pytest_promptsuite.models.openai import OpenAIModel
from pytest_promptsuite.models.retry import RetryPolicy
from pytest_promptsuite.models.runner import ModelRunner
from pytest_promptsuite.prompts.files.jinja import compile_template
from pytest_promptsuite.prompts.files.jinja import render_template
from pytest_promptsuite.prompts.files.jinja import sandbox_environment
from pytest_promptsuite.prompts.task_prompts import TaskPrompts
from pytest_promptsuite.report.writer import write_report
from pytest_promptsuite.results.case_result import CaseResult
from pytest_promptsuite.results.io import load_results
from pytest_promptsuite.results.summary import summarize
from pytest_promptsuite.safety.scrub import register
from pytest_promptsuite.safety.scrub import scrub
from tests.loopback import LoopbackServer


#: An attempt that spends more CPU than this (every thread of the process) hung: a busy loop a limit missed.
HANG_SECONDS = 15.0
#: An attempt that waits longer than this by the wall clock hung too (a wait no limit ended). Ten times the
#: CPU bound: a loaded machine stretches an attempt's wall time, never its CPU time.
HANG_WALL_SECONDS = 10 * HANG_SECONDS
KEY = "sk-campaign-NEVER-WRITE-ME-4b7e1f09"
COLUMNS = ("tried", "clear error", "accepted", "traceback", "hang", "lost", "leak")


@dataclass
class Tally:
    """One attack class's counts."""

    name: str
    tried: int = 0
    clear: int = 0
    accepted: int = 0
    traceback: int = 0
    hang: int = 0
    lost: int = 0
    leak: int = 0

    def row(self) -> tuple[Any, ...]:
        """The table row."""
        return (self.name, self.tried, self.clear, self.accepted, self.traceback, self.hang, self.lost, self.leak)


#: What an attempt reports besides raising: "ok", "lost" or "leak".
Attempt = Callable[[], str]


def run_class(name: str, attempts: Iterator[Attempt]) -> Tally:
    """Run every attempt of one class and classify it."""
    tally = Tally(name)
    for attempt in attempts:
        tally.tried += 1
        start = (time.process_time(), time.monotonic())
        try:
            verdict = attempt()
        except PromptSuiteError as exc:
            verdict = "clear" if str(exc).strip() else "traceback"
        except Exception:  # not ours: what a user would have seen as a traceback
            verdict = "traceback"
        if hung(start):
            tally.hang += 1
        field = "accepted" if verdict == "ok" else verdict
        setattr(tally, field, getattr(tally, field) + 1)
    return tally


def hung(start: tuple[float, float]) -> bool:
    """Tell whether an attempt begun at ``start`` (process CPU time, monotonic time) hung: more CPU than
    :data:`HANG_SECONDS` or more wall time than :data:`HANG_WALL_SECONDS`. Not wall time alone: on a loaded
    machine an attempt that a limit ends on time still takes longer by the clock."""
    cpu, wall = start
    return time.process_time() - cpu > HANG_SECONDS or time.monotonic() - wall > HANG_WALL_SECONDS


# -- mutations --------------------------------------------------------------------------------

VALID_CASE = {
    "case_id": "c1",
    "input": "hello",
    "slice": "s",
    "must_include": ["hello"],
    "assert": [{"type": "is-json"}, {"type": "regex", "value": "h.llo", "weight": 1}],
    "vars": {"a": [1, {"b": 2}]},
    "metadata": {"note": "x"},
    "threshold": 0.5,
}
INSERTS = [
    "\u2028",
    "\u2029",
    "\x85",
    "\\ud800",
    "\\udfff",
    "NaN",
    "Infinity",
    "1e999",
    "[" * 200,
    '{"a":' * 80,
    "\x00",
    "\xff",
    '"',
    "\\",
    ',"must_not_include": []',
    "\ufeff",
    "null",
    "[]",
    "-",
    "9" * 5000,
]


def _mutate(rng: random.Random, text: str) -> bytes:
    data = bytearray(text.encode("utf-8"))
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(4)
        at = rng.randrange(len(data) + 1)
        if kind == 0:
            data[at:at] = rng.choice(INSERTS).encode("utf-8", "surrogatepass")
        elif kind == 1 and data:
            data[at % len(data)] = rng.randrange(256)
        elif kind == 2:
            del data[at : at + rng.randint(1, 8)]
        else:
            data[at:at] = data[: rng.randint(0, 30)]
    return bytes(data)


def case_file_attacks(folder: Path, count: int, seed: int) -> Iterator[Attempt]:
    """Mutated case files through the loader and the check compiler."""
    rng = random.Random(seed)
    base = "\n".join(json.dumps({**VALID_CASE, "case_id": f"c{i}"}, ensure_ascii=False) for i in range(3))
    for i in range(count):
        path = folder / f"cases-{i}.jsonl"
        path.write_bytes(_mutate(rng, base))

        def attempt(path: Path = path) -> str:
            cases = load_cases(path, display=path.name)
            compile_cases(cases, make_builtin_check, display=path.name, scope=CheckScope(folder))
            return "ok"

        yield attempt


VALID_TOML = """[suite]
cases = ["cases.jsonl"]
[model]
spec = "fake"
params = { temperature = 0, max_tokens = 16 }
timeout_s = 5
[thresholds]
default = 0.8
[thresholds.slices]
"s" = 1.0
[[checks]]
slice = "*"
assert = [{ type = "not-contains", value = "sk-", weight = 1 }]
"""
TOML_INSERTS = [
    "nan",
    "inf",
    "-inf",
    "1979-05-27",
    "07:32:00",
    "[" * 500,
    "\xff",
    "\\ud800",
    "= 1",
    "\n[[checks]]\n",
    '\n[checks]\npython_modules = ["os"]\n',
    "user:pw@",
    "99999",
    '"""',
    "'''",
    "-1",
    "5.0",
]


def config_attacks(folder: Path, count: int, seed: int) -> Iterator[Attempt]:
    """Mutated ``promptsuite.toml`` files through the config loader."""
    rng = random.Random(seed)
    for i in range(count):
        sub = folder / f"config-{i}"
        sub.mkdir()
        data = bytearray(VALID_TOML.encode())
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(data) + 1)
            data[at:at] = rng.choice(TOML_INSERTS).encode("utf-8", "surrogatepass") if rng.random() < 0.8 else b""
            if rng.random() < 0.3:
                del data[at : at + rng.randint(1, 6)]
        (sub / "promptsuite.toml").write_bytes(bytes(data))
        yield lambda sub=sub: load_config(sub / "promptsuite.toml") and "ok"


YAML_ATTACKS = [
    "prompts:\n  - task: t\n    content: '{{ input }}'\n",
    "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    + "".join(f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True))
    + "prompts: []\n",
    "prompts:\n  - task: t\n    task: u\n    content: x\n",
    "a: &a [*a]\nprompts: []\n",
    "prompts: " + "[" * 3000 + "]" * 3000 + "\n",
    "prompts:\n  - task: t\n    content: '{{ 10 ** 10000000 }}'\n",
    "prompts:\n  - task: t\n    content: '{% for i in range(10**9) %}x{% endfor %}'\n",
    "prompts:\n  - task: t\n    content: '{{ \"\".__class__.__mro__ }}'\n",
    "prompts: !!python/object/apply:os.system ['echo pwned']\n",
    "\xff\xfe",
    "prompts:\n  - {task: t, content: x, models: x}\n",
]


def yaml_attacks(folder: Path, count: int, seed: int) -> Iterator[Attempt]:
    """Bombs and mutations of ``prompts.yml`` through the task prompt loader."""
    rng = random.Random(seed)
    for i in range(count):
        text = YAML_ATTACKS[i % len(YAML_ATTACKS)]
        if i >= len(YAML_ATTACKS):
            text = _mutate(rng, text).decode("utf-8", "replace")
        path = folder / f"prompts-{i}.yml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        yield lambda path=path: TaskPrompts.load(path, root=folder) and "ok"


JSON_CHECKS: list[dict[str, Any]] = [
    {"type": "is-json"},
    {"type": "is-json", "value": {"type": "array", "items": {"$ref": "#"}}},
    {"type": "contains-json"},
    {"type": "equals", "path": "$[0]", "value": 1},
    {"type": "is-json", "value": {"type": "object", "properties": {"a": {"pattern": "^(a+)+$"}}}},
]


def _answers(rng: random.Random) -> str:
    kind = rng.randrange(6)
    n = rng.choice([65, 1000, 5000])
    if kind == 0:
        return "[" * n + "]" * n
    if kind == 1:
        return '{"a":' * n + "1" + "}" * n
    if kind == 2:
        return 'say "' + "[" * n + '" ok'
    if kind == 3:
        return json.dumps({"a": "a" * 40 + "!"})
    if kind == 4:
        return "[NaN, Infinity, 1e999, " + "9" * 5000 + "]"
    return "".join(rng.choice('[]{}":,a1 \u2028\ud800') for _ in range(n))


def answer_attacks(count: int, seed: int) -> Iterator[Attempt]:
    """Hostile answers through every check that reads JSON: each case must keep its checks."""
    rng = random.Random(seed)
    case = PromptCase(case_id="c", input="i", slice="s", assert_=JSON_CHECKS)
    evaluator = Evaluator()
    compiled = evaluator.compile(case)
    for _ in range(count):
        answer = _answers(rng)
        yield lambda answer=answer: _judged(evaluator.evaluate(case, answer, compiled), len(JSON_CHECKS))


def _judged(results: tuple[Any, ...], expected: int) -> str:
    """Judge the results: "lost" when a check has no result, "clear" when one failed on a named limit."""
    if len(results) != expected:
        return "lost"
    return "clear" if any(" limit of " in r.message for r in results) else "ok"


REDOS = [r"^(a+)+$", r"(a|a)*$", r"(a|aa)+$", r"^(\w+\s?)*$", r"(x+x+)+y", r"^(([a-z])+.)+[A-Z]([a-z])+$"]
VICTIMS = ["a" * 41 + "!", "x" * 40, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!", "word " * 30 + "!"]


def regex_attacks(folder: Path, count: int, seed: int) -> Iterator[Attempt]:
    """Catastrophic regexes in a check and in fake-model rules: each ends within its budget."""
    rng = random.Random(seed)
    for i in range(count):
        pattern, victim = rng.choice(REDOS), rng.choice(VICTIMS)
        if i % 2:
            case = PromptCase(case_id="c", input="i", slice="s", assert_=[{"type": "regex", "value": pattern}])
            yield lambda case=case, victim=victim: _judged(Evaluator().evaluate(case, victim), 1)
        else:
            rules = folder / f"rules-{i}.json"
            rules.write_text(json.dumps({"rules": [{"match": pattern, "reply": "x"}]}), encoding="utf-8")
            yield (
                lambda rules=rules, victim=victim: (
                    FakeModel.from_rules_file(rules).generate_sync(ModelRequest(victim)).text and "ok"
                )
            )


JINJA = [
    "{{ 10 ** 10000000 }}",
    "{{ 'a' * 10**9 }}",
    "{{ [1] * 10**9 }}",
    "{% for i in range(10**8) %}{% endfor %}",
    "{% for a in range(9999) %}{% for b in range(9999) %}{% for c in range(9999) %}{% endfor %}{% endfor %}"
    "{% endfor %}",
    "{{ 'x'|center(10**9) }}",
    "{{ '%0999999999d' % 1 }}",
    "{{ ('a'*999999)|replace('', 'bb') }}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ cycler.__init__.__globals__.os }}",
    "{{ self._TemplateReference__context }}",
    "{{ lipsum.__globals__ }}",
    "{{ range.__self__ }}",
    "{{ input.__class__ }}",
    "{{ joiner.__init__.__globals__ }}",
    "{% set x = x %}{{ x }}",
    "{{ namespace.__init__.__globals__ }}",
    "{{ (999999999999 ** 999) }}",
    "{{ input * 10**7 }}",
    "{{ undefined_thing }}",
]


def jinja_attacks(count: int) -> Iterator[Attempt]:
    """Sandbox escapes and resource bombs: every one a TemplateError naming the limit or refusal."""
    env = sandbox_environment()
    for i in range(count):
        source = JINJA[i % len(JINJA)]

        def attempt(source: str = source) -> str:
            render_template(compile_template(env, source, "t"), {"input": "x" * 100}, "t")
            return "ok"

        yield attempt


def _odd_text(rng: random.Random) -> str:
    alphabet = 'a\u2028\u2029\x85\ud800\udfff\n\r\t"\\\x00\u0000é中😀<>&' + KEY[:6]
    text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
    text += KEY if rng.random() < 0.2 else ""
    return str(json.loads(json.dumps(text)))  # as received: JSON makes a high and a low surrogate one character


def roundtrip_attacks(folder: Path, count: int, seed: int) -> Iterator[Attempt]:
    """Odd answers through results.jsonl, the report files, a cassette and the cache, and back."""
    rng = random.Random(seed)
    for i in range(count):
        text = _odd_text(rng)

        def attempt(text: str = text, i: int = i) -> str:
            row = CaseResult(
                case_id=f"c{i}",
                slice="s",
                outcome="passed",
                output=text,  # type: ignore[arg-type]
                metadata={"m": text},
            )
            report = folder / f"report-{i}"
            write_report(report, [row], summarize([row]))
            [back] = load_results(report)
            cassette = Cassette(folder / f"cassette-{i}.jsonl", "record")
            cassette.start()
            cassette.add("k", ModelRequest(text), {"model": "m"}, Response(text))
            cassette.finalize()
            replaying = Cassette(folder / f"cassette-{i}.jsonl", "replay")
            replayed = replaying.get("k")
            cache = ResponseCache(folder / "cache")
            cache.put(f"{i:064d}", Response(text or "x"))
            cached = cache.get(f"{i:064d}")
            written = b"".join(p.read_bytes() for p in [*report.iterdir(), folder / f"cassette-{i}.jsonl"])
            if KEY.encode() in written:
                return "leak"
            if scrub(text) == text:  # the cassette and the cache give back what the model said
                same = replayed is not None and replayed.text == text and cached is not None
                same = same and cached.text == (text or "x")
            else:  # or nothing (the replay an error that says why), never a scrubbed copy
                same = replayed is None and replaying.withheld("k") and cached is None
            return "ok" if back.output == scrub(text) and same else "lost"

        yield attempt


ENDPOINT_SCRIPTS = [
    "ok",
    "500,429",
    "reset,reset",
    "truncated",
    "gzip",
    "latin1",
    "drip",
    "hang",
    "echo",
    "weird",
    "malformed",
    "nochoices",
    "quota",
    "400",
    "401",
    "500,500,500,500",
    "503,gzip,reset",
    "empty",
]


def endpoint_attacks(server: LoopbackServer, count: int) -> Iterator[Attempt]:
    """Every fault script through the HTTP client: a response or an EndpointError, never the key."""
    server.reset(api_key=KEY, retry_after_ms=1, hang_s=2, drip_s=0.05)
    runner = ModelRunner()
    try:
        yield from _endpoint_attempts(server, runner, count)
    finally:
        runner.close()


def _endpoint_attempts(server: LoopbackServer, runner: ModelRunner, count: int) -> Iterator[Attempt]:
    for i in range(count):
        prompt = f"call {i} [[{ENDPOINT_SCRIPTS[i % len(ENDPOINT_SCRIPTS)]}]]"
        # a model per call: a 401 or an exhausted quota makes a model unusable for the rest of a run
        model = OpenAIModel(
            "m",
            base_url=f"{server.base_url}?api-key={KEY}",
            api_key=KEY,
            timeout_s=0.5,
            retry=RetryPolicy(max_retries=3, base_s=0.01, cap_s=0.05),
        )

        def attempt(prompt: str = prompt, model: OpenAIModel = model) -> str:
            try:
                text = runner.call(model, ModelRequest(prompt)).text
            except PromptSuiteError as exc:
                return "leak" if KEY in str(exc) else "clear"
            return "leak" if KEY in scrub(text) else "ok"

        yield attempt


def secret_attacks(count: int, seed: int) -> Iterator[Attempt]:
    """The key hidden in the ways a message can carry it: every one scrubbed."""
    rng = random.Random(seed)
    shapes = [
        f"Bearer {KEY}",
        f"Authorization: Bearer {KEY}",
        f"http://u:{KEY}@h/v1",
        f"https://h/v1?api_key={KEY}",
        f"{{'authorization': 'Bearer {KEY}'}}",
        json.dumps({"key": KEY}),
        f"token={KEY}&x=1",
        KEY,
    ]
    for _ in range(count):
        text = "".join(rng.choice(["x ", "\n", "é", "\u2028", rng.choice(shapes)]) for _ in range(rng.randint(1, 8)))
        yield lambda text=text: "leak" if KEY in scrub(text) or KEY in json.dumps(scrub(text)) else "ok"


def path_attacks(folder: Path, outside: Path, count: int) -> Iterator[Attempt]:
    """Files and code named from outside the suite's folder: refused, never read or run."""
    marker = outside / "ran.txt"
    (outside / "evil.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\ndef f(o, c):\n    return True\n", encoding="utf-8"
    )
    (outside / "schema.json").write_text('{"type": "object"}', encoding="utf-8")
    if not (folder / "link.py").exists():
        os.symlink(outside / "evil.py", folder / "link.py")
    entries = [
        {"type": "python", "value": f"file://{outside / 'evil.py'}:f"},
        {"type": "python", "value": "file://../evil.py:f"},
        {"type": "python", "value": "file://link.py:f"},
        {"type": "python", "value": "evil:f"},
        {"type": "pydantic", "value": "os:PathLike"},
        {"type": "is-json", "value": str(outside / "schema.json")},
        {"type": "is-json", "value": "../schema.json"},
        {"type": "python", "value": "antigravity:x"},
    ]
    for i in range(count):
        case = PromptCase(case_id="c", input="i", slice="s", assert_=[entries[i % len(entries)]])

        def attempt(case: PromptCase = case) -> str:
            try:
                compile_cases([case], make_builtin_check, display="cases.jsonl", scope=CheckScope(folder))
                verdict = "ok"
            except PromptSuiteError:
                verdict = "clear"
            return "leak" if marker.exists() else verdict  # the outside code ran: that is the finding

        yield attempt


def campaign(folder: Path, server: LoopbackServer, *, scale: int = 1, seed: int = 20) -> list[Tally]:
    """Every attack class, ``scale`` times its base count; the table's rows."""
    register(KEY)
    for name in ("cases", "configs", "yaml", "regex", "roundtrip", "paths", "outside"):
        (folder / name).mkdir(parents=True, exist_ok=True)
    return [
        run_class("case-file mutations", case_file_attacks(folder / "cases", 200 * scale, seed)),
        run_class("suite config mutations", config_attacks(folder / "configs", 100 * scale, seed)),
        run_class("prompts.yml bombs and mutations", yaml_attacks(folder / "yaml", 22 * scale, seed)),
        run_class("hostile answers to JSON checks", answer_attacks(24 * scale, seed)),
        run_class("catastrophic regexes", regex_attacks(folder / "regex", 4 * scale, seed)),
        run_class("Jinja escapes and bombs", jinja_attacks(20 * scale)),
        run_class("odd characters through every file", roundtrip_attacks(folder / "roundtrip", 50 * scale, seed)),
        run_class("endpoint faults", endpoint_attacks(server, 36 * scale)),
        run_class("the key in messages", secret_attacks(200 * scale, seed)),
        run_class("files and code from outside", path_attacks(folder / "paths", folder / "outside", 16 * scale)),
    ]


def table(tallies: list[Tally]) -> str:
    """The counts as a Markdown table."""
    lines = ["| attack class | " + " | ".join(COLUMNS) + " |", "|---|" + "---:|" * len(COLUMNS)]
    lines += ["| " + " | ".join(str(cell) for cell in t.row()) + " |" for t in tallies]
    return "\n".join(lines)
