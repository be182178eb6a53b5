"""Long-lived Node.js processes (a line of JSON each way per call), so that promptfoo's ``nunjucksFilters``,
``javascript`` asserts and transforms cost a round trip each, not a Node start."""

from __future__ import annotations

import atexit
import collections
import contextlib
import json
import os
import queue
import secrets
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from collections.abc import Mapping
from pathlib import Path
from typing import IO
from typing import Any

from pytest_promptsuite.errors import TemplateError


#: Load each filter file (``module.exports`` or its ``default``), then answer ``{name, args}`` requests with
#: ``{value}`` or ``{error}``; the requests and answers travel as :data:`FRAMING` says.
_HARNESS = r"""
const files = JSON.parse(process.argv[1]);
const filters = {};
for (const [name, file] of Object.entries(files)) {
  const mod = require(file);
  filters[name] = typeof mod === 'function' ? mod : mod.default;
}
requests((id, { name, args }) => {
  try {
    if (typeof filters[name] !== 'function') throw new Error(`${files[name]} exports no function`);
    const value = filters[name](...args);
    answer(id, { value: value === undefined ? null : value });
  } catch (e) {
    answer(id, { error: String((e && e.message) || e) });
  }
});
"""

#: What every harness runs in: requests come on a descriptor of their own (stdin is empty), each answer goes
#: out on another as a line of JSON with its request's id (a nonce the user's code is never given), and
#: fd 1 is stderr's pipe, so nothing the code writes, at once or later, is taken for an answer. The harness
#: runs in a function of its own, so the code it runs cannot reach ``answer`` or the descriptors' numbers.
FRAMING = r"""(() => {
const fs = require('fs');
const readline = require('readline');
const writeSync = fs.writeSync, stringify = JSON.stringify, parse = JSON.parse, bytes = Buffer.from;
const [requestFd, answerFd] = process.argv.splice(1, 2).map(Number);
console.log = console.info = console.debug = (...args) => process.stderr.write(args.join(' ') + '\n');
const answer = (id, obj) => {
  const text = bytes('\n' + stringify({ ...obj, id }) + '\n');  // a line of its own, whatever came before
  for (let done = 0; done < text.length; ) done += writeSync(answerFd, text, done);
};
const requests = (handle) => readline.createInterface({ input: fs.createReadStream(null, { fd: requestFd }) })
  .on('line', (line) => { const { id, data } = parse(line); handle(id, data); });
HARNESS
})();
"""


def _read_lines(answers: IO[str], lines: queue.Queue[str]) -> None:
    """Put each line Node.js answers in ``lines``, then "" once it ends (the file closed)."""
    with answers:
        for line in answers:
            lines.put(line)
    lines.put("")


def _read_errors(stderr: IO[str], kept: collections.deque[str]) -> None:
    """Keep the last lines Node.js writes to stderr (what the code logs too), so that it never blocks on a full pipe."""
    for line in stderr:
        kept.append(line.rstrip("\n"))


def _answer_of(line: str, nonce: str) -> dict[str, Any] | None:
    """Return the answer a line holds when it answers the request ``nonce``; None for any other line."""
    try:
        answer = json.loads(line)
    except ValueError:
        return None
    if not isinstance(answer, dict) or answer.pop("id", None) != nonce:
        return None
    return answer


class NodeProcess:
    """A long-lived Node.js process running ``harness`` (with ``argv``) inside :data:`FRAMING`: each
    :meth:`request` sends a line of JSON and waits for the answer that carries its nonce, one request at a
    time; a process that ends is started again."""

    def __init__(self, harness: str, argv: tuple[str, ...] = ()) -> None:
        self.harness = harness
        self.argv = argv
        self._process: subprocess.Popen[str] | None = None
        self._requests: IO[str] | None = None
        self._lines: queue.Queue[str] = queue.Queue()
        self._lock = threading.Lock()
        self._why = ""
        self._errors: collections.deque[str] = collections.deque(maxlen=50)
        self._error_reader: threading.Thread | None = None

    def request(self, payload: Any, *, timeout_s: float | None = None) -> dict[str, Any] | None:
        """Send ``payload``; return its answer, or None when Node.js ended or took longer than ``timeout_s``
        (the process is then ended: :meth:`why` tells what it wrote last)."""
        nonce = secrets.token_hex(16)
        with self._lock:
            requests = self._started()
            try:
                requests.write(json.dumps({"id": nonce, "data": payload}, default=str) + "\n")
                requests.flush()
                answer = self._answer(nonce, timeout_s)
            except (OSError, queue.Empty):
                answer = None
            if answer is None:
                self._why = self._stderr()
                self.close()
        return answer

    def _answer(self, nonce: str, timeout_s: float | None) -> dict[str, Any] | None:
        """Wait for the answer to ``nonce``, passing over any other line; None when Node.js ended, queue.Empty
        when ``timeout_s`` passed first."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            line = self._lines.get(timeout=None if deadline is None else max(0.0, deadline - time.monotonic()))
            if not line:
                return None
            answer = _answer_of(line, nonce)
            if answer is not None:
                return answer

    @property
    def pid(self) -> int | None:
        """The running Node.js process's id (None before the first request or after :meth:`close`)."""
        return None if self._process is None else self._process.pid

    def why(self) -> str:
        """Tell why the last request got no answer: the first error line Node.js wrote, or a timeout."""
        return self._why or "no answer"

    def _started(self) -> IO[str]:
        """Return the pipe requests go to, starting Node.js when it does not run."""
        if self._process is None or self._process.poll() is not None or self._requests is None:
            self.close()
            self._requests = self._start()
        return self._requests

    def _start(self) -> IO[str]:
        """Start Node.js with a pipe for requests and one for answers; its stdout and stderr share one pipe."""
        node = shutil.which("node") or "node"
        request_read, request_write = os.pipe()
        answer_read, answer_write = os.pipe()
        try:
            self._process = process = subprocess.Popen(
                [
                    node,
                    "-e",
                    FRAMING.replace("HARNESS", self.harness),
                    str(request_read),
                    str(answer_write),
                    *self.argv,
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=(request_read, answer_write),
                text=True,
                encoding="utf-8",
            )
        finally:
            os.close(request_read)
            os.close(answer_write)
        self._lines = lines = queue.Queue[str]()
        self._errors = errors = collections.deque[str](maxlen=50)
        assert process.stdout is not None
        answers = open(answer_read, encoding="utf-8")  # noqa: SIM115 (its reader closes it at its end)
        # threads read the answers (a request waits for one no longer than its timeout) and stderr
        threading.Thread(target=_read_lines, args=(answers, lines), daemon=True).start()
        self._error_reader = threading.Thread(target=_read_errors, args=(process.stdout, errors), daemon=True)
        self._error_reader.start()
        atexit.register(self.close)
        return open(request_write, "w", encoding="utf-8")  # noqa: SIM115 (closed by close())

    def _stderr(self) -> str:
        process = self._process
        if process is None:
            return "no output"
        if process.poll() is None:
            return "no answer in time"
        process.wait()
        if self._error_reader is not None:
            self._error_reader.join(timeout=5)  # it ends at the pipe's end, with the last lines taken
        lines = [line for line in self._errors if line.strip()]
        return next((ln for ln in lines if "Error" in ln), lines[0] if lines else "no output")

    def close(self) -> None:
        """End the Node.js process, if it runs."""
        process, self._process = self._process, None
        requests, self._requests = self._requests, None
        if requests is not None:
            with contextlib.suppress(OSError):
                requests.close()
        if process is not None:
            if process.poll() is None:
                process.kill()
            process.wait()
            if self._error_reader is not None:
                self._error_reader.join(timeout=5)  # it ends at the pipe's end: closed under it, it would raise
            if process.stdout is not None:
                process.stdout.close()


class NodeFilters:
    """The ``nunjucksFilters`` of one suite (filter name -> JavaScript file), started on first use."""

    def __init__(self, files: Mapping[str, Path]) -> None:
        self.files = dict(files)
        self._node = NodeProcess(_HARNESS, (json.dumps({name: str(path) for name, path in self.files.items()}),))

    def filter(self, name: str) -> Callable[..., Any]:
        """Return the Jinja filter that calls the JavaScript filter ``name``; a TemplateError naming it
        when Node.js is not on PATH."""
        if shutil.which("node") is None:
            raise TemplateError(
                f"nunjucksFilters {name!r} ({self.files[name].name}) is JavaScript and needs Node.js; "
                "'node' is not on PATH (install Node.js to render this prompt)"
            )

        def call(value: Any, *args: Any) -> Any:
            return self.call(name, [value, *args])

        return call

    def call(self, name: str, args: list[Any]) -> Any:
        """Run the filter ``name`` on ``args`` in the Node.js process; TemplateError when it throws."""
        answer = self._node.request({"name": name, "args": args})
        if answer is None:
            raise TemplateError(
                f"nunjucksFilters {name!r} ({self.files[name].name}): Node.js stopped: {self._node.why()}"
            )
        if "error" in answer:
            raise TemplateError(f"nunjucksFilters {name!r} ({self.files[name].name}) raised: {answer['error']}")
        return answer["value"]

    @property
    def pid(self) -> int | None:
        """The id of the Node.js process the filters run in (None before the first call)."""
        return self._node.pid

    def close(self) -> None:
        """End the Node.js process, if it runs."""
        self._node.close()
