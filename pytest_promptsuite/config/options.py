"""The ``--prompt-*`` options: declared once, checked as they are parsed, read once into :class:`RunOptions`."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import Literal


if TYPE_CHECKING:
    from pytest_promptsuite.cases.shard import Shard


def _fraction(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number from 0 to 1 (write 0.95, not 95%)") from None
    if not 0 <= number <= 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not from 0 to 1 (write 0.95, not 95)")
    return number


def _shard(value: str) -> Shard:
    from pytest_promptsuite.cases.shard import parse_shard  # the cases stage loads for runs with cases only

    try:
        return parse_shard(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _alpha(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number between 0 and 1 (e.g. 0.05)") from None
    if not 0 < number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not between 0 and 1, both excluded (e.g. 0.05)")
    return number


def _results_path(value: str) -> Path:
    path = Path(value)
    if not path.exists():
        raise argparse.ArgumentTypeError(
            f"{value!r}: no such file or folder (give a results.jsonl or a --prompt-report folder)"
        )
    if path.is_dir() and not (path / "results.jsonl").is_file():
        raise argparse.ArgumentTypeError(f"{value!r}: this folder has no results.jsonl")
    return path


def _existing_file(value: str) -> Path:
    path = Path(value)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{value!r}: no such file")
    return path


def _existing(value: str) -> Path:
    path = Path(value)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{value!r}: no such file or folder")
    return path


def _seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not 0 < number <= 7 * 86400:
        raise argparse.ArgumentTypeError(f"{value!r} must be more than 0 and at most 604800 (7 days)")
    return number


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} must be at least 1")
    return number


def _concurrency(value: str) -> int | Literal["auto"]:
    if value == "auto":
        return "auto"
    try:
        return _positive(value)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{value!r} is neither auto nor a whole number of at least 1") from None


@dataclass(frozen=True)
class Option:
    """One command-line option: its flag, its help text (:data:`HELP`) and how argparse reads it."""

    flag: str
    metavar: str | None = None
    type: Callable[[str], Any] | None = None
    action: str | None = None
    default: Any = None

    @property
    def dest(self) -> str:
        """The attribute name argparse stores the value under (``prompt_min_pass_rate``)."""
        return self.flag.lstrip("-").replace("-", "_")

    @property
    def help(self) -> str:
        """The help text ``pytest --help`` shows."""
        return HELP[self.flag]

    @property
    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``addoption``."""
        given = {"metavar": self.metavar, "type": self.type, "action": self.action}
        return {**{k: v for k, v in given.items() if v is not None}, "default": self.default, "help": self.help}


#: Every option, in the order ``pytest --help`` lists them.
OPTIONS: tuple[Option, ...] = (
    Option("--prompt-suite", "PATH", action="append", default=[]),
    Option("--prompt-config", "PATH"),
    Option("--prompt-model", "SPEC"),
    Option("--prompt-judge", "SPEC"),
    Option("--prompt-judge-repeat", "K", _positive),
    Option("--prompt-rejudge", action="store_true", default=False),
    Option("--prompt-report", "DIR"),
    Option("--prompt-min-pass-rate", "X", _fraction),
    Option("--prompt-baseline", "PATH", _results_path),
    Option("--prompt-max-regression", "X", _fraction),
    Option("--prompt-alpha", "A", _alpha),
    Option("--prompt-baseline-variant", "NAME"),
    Option("--prompt-shard", "K/N", _shard),
    Option("--prompt-base-url", "URL"),
    Option("--prompt-concurrency", "N|auto", _concurrency),
    Option("--prompt-variant", "NAME", action="append", default=[]),
    Option("--prompt-repeat", "N", _positive, default=1),
    Option("--prompt-cache", "DIR"),
    Option("--prompt-no-cache", action="store_true", default=False),
    Option("--prompt-record", "PATH"),
    Option("--prompt-replay", "PATH"),
    Option("--prompt-max-calls", "N", _positive),
    Option("--prompt-batch", action="store_true", default=False),
    Option("--prompt-batch-file", "OUT.jsonl"),
    Option("--prompt-batch-results", "FILE", _existing_file),
    Option("--prompt-batch-timeout", "SECONDS", _seconds),
    Option("--prompt-history", "DIR", _existing),
    Option("--prompt-reviews", "FILE", _existing),
    Option("--prompt-sequential", action="store_true", default=False),
)
#: Each option's help text (capitalized, no period).
HELP: dict[str, str] = {
    "--prompt-suite": "Case file (*.jsonl), suite config (*.toml) or folder of them; repeatable. With no positional "
    "paths only the suites are collected",
    "--prompt-config": "Suite config (TOML); default: promptsuite.toml beside the case file, else [tool.promptsuite] "
    "in pyproject.toml",
    "--prompt-model": "fake (default), fake:RULES.json, echo (promptfoo's echo provider), openai:MODEL or a model "
    "named in the config",
    "--prompt-judge": "Judge model for llm-rubric checks: a model named in the config or a spec (default: "
    "[models.judge] of the config)",
    "--prompt-judge-repeat": "Ask the llm-rubric judge K times per check (at its temperature) and take the majority "
    "(default 1, or [judge] repeat)",
    "--prompt-rejudge": "Judge the --prompt-baseline's stored outputs again with this run's judge before comparing, "
    "so that a changed judge is not read as a changed prompt (the judge's calls cached)",
    "--prompt-report": "Write results.jsonl, summary.json, slices.csv, summary.md and dashboard.html into DIR",
    "--prompt-min-pass-rate": "Default per-slice pass-rate threshold, 0..1 (default 1.0, or the config's)",
    "--prompt-baseline": "results.jsonl (or report folder) of an earlier version to diff against",
    "--prompt-max-regression": "Largest allowed drop of a slice's pass rate against the baseline, 0..1 (default 0.0, "
    "or the config's)",
    "--prompt-alpha": "Level of the paired regression test against the baseline (default 0.05, or [gate] alpha)",
    "--prompt-baseline-variant": "Compare with the baseline's rows of prompt variant NAME (default: pair by case and "
    "variant)",
    "--prompt-shard": "Run only the K-th (from 1) of N deterministic shards of the cases",
    "--prompt-base-url": "Endpoint for openai: models, e.g. http://localhost:8000/v1 (else the config's, else "
    "OPENAI_BASE_URL); the key comes from the environment only",
    "--prompt-concurrency": "Model calls in flight at once (default 8, auto for https:// endpoints, or [model] "
    "concurrency); auto: found from the endpoint's 429s and rate-limit headers, up to [model] max_concurrency",
    "--prompt-variant": "Run only this prompt version ([variants.NAME] of the suite config); repeatable. Default: "
    "every variant",
    "--prompt-repeat": "Run every case N times (item ids get [repeat-0] .. [repeat-N-1])",
    "--prompt-cache": "Response cache folder (default .promptsuite_cache in the folder pytest is run from, whatever "
    "pytest's rootdir)",
    "--prompt-no-cache": "Neither read nor write the response cache",
    "--prompt-record": "Write every model answer of this run to a cassette file (JSONL) to commit",
    "--prompt-replay": "Answer from a cassette only, never calling the endpoint; a missing answer is an error",
    "--prompt-max-calls": "Issue at most N model calls (cache hits are free); the cases left end as skipped and the "
    "run fails",
    "--prompt-batch": "Send the run's calls as one OpenAI Batch job (or [model] batch = true)",
    "--prompt-batch-file": "Write the run's calls as a batch request file (OpenAI format, for vllm run-batch) without "
    "sending them",
    "--prompt-batch-results": "Answer the calls from a batch output file made elsewhere, then run the checks",
    "--prompt-batch-timeout": "Cancel a batch job not ended after SECONDS and end its cases as error (default 90000: "
    "the 24 h completion window and an hour)",
    "--prompt-history": "Folder of earlier report folders or summary.json files: per-slice trends in the reports",
    "--prompt-reviews": "Review decisions (JSONL, downloaded from the dashboard) applied to unchanged outputs",
    "--prompt-sequential": "Run the cases in a seeded order (stratified by slice) and stop calling once every "
    "verdict against the baseline (or the first variant) is settled; the cases left end as skipped",
}


#: Each option by its flag, for commands that share some (``promptsuite diff``).
BY_FLAG: dict[str, Option] = {option.flag: option for option in OPTIONS}


@dataclass(frozen=True)
class RunOptions:
    """The ``--prompt-*`` options of one run, parsed once (every field is an option's value)."""

    suite: tuple[str, ...] = ()
    config: str | None = None
    model: str | None = None
    judge: str | None = None
    judge_repeat: int | None = None
    rejudge: bool = False
    report: str | None = None
    min_pass_rate: float | None = None
    baseline: Path | None = None
    max_regression: float | None = None
    alpha: float | None = None
    baseline_variant: str | None = None
    shard: Shard | None = None
    base_url: str | None = None
    concurrency: int | Literal["auto"] | None = None
    variant: tuple[str, ...] = ()
    repeat: int = 1
    cache: str | None = None
    no_cache: bool = False
    record: str | None = None
    replay: str | None = None
    history: Path | None = None
    reviews: Path | None = None
    max_calls: int | None = None
    batch: bool = False
    batch_file: str | None = None
    batch_results: Path | None = None
    batch_timeout: float | None = None
    sequential: bool = False

    @property
    def batch_mode(self) -> bool:
        """True when calls go through a batch: sent as a job, written to a file, or read back."""
        return self.batch or self.batch_file is not None or self.batch_results is not None

    @classmethod
    def from_values(cls, get: Callable[[str], Any]) -> RunOptions:
        """Read every option with ``get(dest)`` (pytest's ``config.getoption``)."""
        values: dict[str, Any] = {}
        for option in OPTIONS:
            value = get(option.dest)
            values[option.dest.removeprefix("prompt_")] = tuple(value) if isinstance(value, list) else value
        return cls(**values)
