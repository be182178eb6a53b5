"""A run's calls answered in batch mode before its cases run: the request file written
(``--prompt-batch-file``), a results file read (``--prompt-batch-results``), or one Batch job per
model and endpoint sent and waited for (cancelled on Ctrl-C, SIGTERM, its time limit or any failure)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import signal
import threading
from collections.abc import Callable
from collections.abc import Coroutine
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import TypeVar

from pytest_promptsuite.config.settings import DEFAULT_BATCH_TIMEOUT_S
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import EndpointError
from pytest_promptsuite.errors import ModelError
from pytest_promptsuite.models.batch.requests import BatchAnswers
from pytest_promptsuite.models.batch.requests import BatchLine
from pytest_promptsuite.models.batch.requests import BatchOutputs
from pytest_promptsuite.models.batch.requests import NotSent
from pytest_promptsuite.models.batch.requests import answers_from
from pytest_promptsuite.models.batch.requests import read_outputs
from pytest_promptsuite.models.batch.requests import write_requests
from pytest_promptsuite.models.model_api import Model
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.model_api import Response
from pytest_promptsuite.models.spend import Allowance
from pytest_promptsuite.models.spend import BudgetExhausted
from pytest_promptsuite.safety.scrub import scrub


if TYPE_CHECKING:
    from pytest_promptsuite.models.runner import Attached

T = TypeVar("T")
#: Starts a coroutine on the run's event loop; a future the caller's thread can wait on.
Submit = Callable[[Coroutine[Any, Any, T]], "concurrent.futures.Future[T]"]
#: The batch lines of a run's calls: by model (its id), then endpoint, then ``custom_id``.
Groups = dict[int, dict[str, dict[str, BatchLine]]]
Progress = Callable[[str], None] | None
_NOT_IN = "the request is not in it (its prompt, params or model changed?)"


def batch_lines(
    attached: Mapping[int, Attached], allowance: Allowance, calls: Iterable[tuple[Model, ModelRequest]], *, send: bool
) -> Groups:
    """Return the batch lines of ``calls`` by model and endpoint, each ``custom_id`` once, but those of a model
    not in batch mode, answered by the stores or (``send``) beyond the budget, which refuses them as they run."""
    groups: Groups = {}
    for model, request in calls:
        layers = attached.get(id(model))
        if layers is None or not _batched(layers, request):
            continue
        assert layers.answers is not None
        line = layers.answers.line(request)
        by_url = groups.setdefault(id(model), {}).setdefault(line.url, {})
        if line.custom_id in by_url:
            continue
        if send:
            try:
                allowance.take(layers.budget, request)
            except BudgetExhausted:
                continue
        by_url[line.custom_id] = line
    return groups


def _batched(layers: Attached, request: ModelRequest) -> bool:
    """Tell whether a call goes into a batch: its model is in batch mode and no store answers it."""
    if layers.answers is None or not layers.answers.batchable:
        return False
    return layers.caching is None or not layers.caching.stored(request)


def answer_in_batches(
    attached: Mapping[int, Attached],
    allowance: Allowance,
    calls: Iterable[tuple[Model, ModelRequest]],
    *,
    submit: Submit[Any],
    write_to: Path | None = None,
    results: Path | None = None,
    progress: Progress = None,
    time_limit_s: float = DEFAULT_BATCH_TIMEOUT_S,
) -> int:
    """Answer ``calls`` from batch jobs (one per model and endpoint, run through ``submit``, each cancelled
    past ``time_limit_s``), a results file or not at all (``write_to``); return how many requests went into
    jobs or the file."""
    groups = batch_lines(attached, allowance, calls, send=write_to is None and results is None)
    every = [line for by_url in groups.values() for lines in by_url.values() for line in lines.values()]
    if write_to is not None:
        return len(every) - _write_file(attached, groups, every, write_to)
    outputs = None if results is None else _read_results(results)
    for ident, by_url in groups.items():
        layers = attached[ident]
        answers = layers.answers
        assert answers is not None
        for url, lines in by_url.items():
            if outputs is not None:
                found = answers_from(answers, lines, outputs, str(results), _NOT_IN)
            else:
                model, todo = layers.budget.inner, list(lines.values())
                found = _run_job(model, answers, todo, url, submit, progress, time_limit_s)
            answers.answers.update(found)
    return len(every)


def _write_file(attached: Mapping[int, Attached], groups: Groups, every: list[BatchLine], write_to: Path) -> int:
    """Write every request to ``write_to`` (``--prompt-batch-file``), each call answered "not sent"; return how
    many were refused."""
    refused = write_requests(write_to, every)
    note = NotSent(f"written to {write_to} (--prompt-batch-file), not sent")
    for ident, by_url in groups.items():
        answers = attached[ident].answers
        assert answers is not None
        answers.answers.update({cid: refused.get(cid, note) for lines in by_url.values() for cid in lines})
    return len(refused)


def _read_results(results: Path) -> BatchOutputs:
    """Read a batch results file (``--prompt-batch-results``); ConfigError when it cannot be read."""
    try:
        outputs = read_outputs(results.read_bytes(), str(results))
    except OSError as exc:
        raise ConfigError(f"--prompt-batch-results {results}: cannot read ({exc.strerror or exc})") from exc
    if outputs.unreadable:
        raise ConfigError(outputs.unreadable[0])
    return outputs


def _run_job(
    model: Model,
    answers: BatchAnswers,
    lines: list[BatchLine],
    url: str,
    submit: Submit[Any],
    progress: Progress,
    time_limit_s: float,
) -> dict[str, Response | ModelError]:
    """Run one batch job to its end; return each line's answer or error. Ctrl-C and SIGTERM cancel the job and
    interrupt the run; any failure (its time limit too) cancels it where it still runs and ends its lines with
    the reason."""
    from pytest_promptsuite.models.batch.job import BatchJob  # httpx: imported when a job is sent, never at start-up

    job = BatchJob(model, progress=progress, time_limit_s=time_limit_s)
    if progress is not None:
        progress(f"batch: sending {len(lines):,} requests to {url}")
    future = submit(job.run(lines, url))
    try:
        with _terminate_interrupts():
            result = future.result()
    except KeyboardInterrupt:
        future.cancel()
        with contextlib.suppress(Exception):
            submit(job.cancel()).result(timeout=10)
        raise
    except Exception as exc:  # any failure: the job cancelled where it still runs, its lines end with the reason
        with contextlib.suppress(Exception):
            submit(job.cancel()).result(timeout=10)
        if not isinstance(exc, ModelError):
            scrubbed: Callable[[str], str] = getattr(model, "scrub", scrub)
            where = f"batch {job.batch_id}" if job.batch_id else f"the batch to {url}"
            exc = EndpointError(f"{where} failed: {type(exc).__name__}: {scrubbed(str(exc))}")
        return {line.custom_id: exc for line in lines}
    where = f"batch {result.batch_id} ({result.status})"
    return answers_from(answers, (line.custom_id for line in lines), result.outputs, where, result.reason)


@contextlib.contextmanager
def _terminate_interrupts() -> Iterator[None]:
    """Make SIGTERM (a CI runner's cancel) interrupt the main thread as Ctrl-C does, while a job runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
