"""Long-lived Node.js processes (a line of JSON each way per call), so that promptfoo's ``nunjucksFilters``,
``javascript`` asserts and transforms cost a round trip each, not a Node start."""

from __future__ import annotations

import atexit
import collections
import json
import queue
import shutil
import subprocess
import threading
from collections.abc import Callable
from collections.abc import Mapping
from pathlib import Path
from typing import IO
from typing import Any

from pytest_promptsuite.errors import TemplateError


#: Load each filter file (``module.exports`` or its ``default``), then answer ``{name, args}`` lines
#: with ``{value}`` or ``{error}`` lines; what a filter logs goes to stderr, so it cannot garble an answer.
_HARNESS = r"""
console.log = console.info = console.debug = (...args) => process.stderr.write(args.join(' ') + '\n');
const files = JSON.parse(process.argv[1]);
const filters = {};
for (const [name, file] of Object.entries(files)) {
  const mod = require(file);
  filters[name] = typeof mod === 'function' ? mod : mod.default;
}
const lines = require('readline').createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const { name, args } = JSON.parse(line);
  let answer;
  try {
    if (typeof filters[name] !== 'function') throw new Error(`${files[name]} exports no function`);
    const value = filters[name](...args);
    answer = { value: value === undefined ? null : value };
  } catch (e) {
    answer = { error: String((e && e.message) || e) };
  }
  process.stdout.write(JSON.stringify(answer) + '\n');
});
"""


def _read_lines(stdout: IO[str], lines: queue.Queue[str]) -> None:
    """Put each line Node.js answers in ``lines``, then "" once it ends."""
    for line in stdout:
        lines.put(line)
    lines.put("")


def _read_errors(stderr: IO[str], kept: collections.deque[str]) -> None:
    """Keep the last lines Node.js writes to stderr (what the code logs too), so that it never blocks on a full pipe."""
    for line in stderr:
        kept.append(line.rstrip("\n"))


class NodeProcess:
    """A long-lived Node.js process running ``harness`` (with ``argv``): each :meth:`request` writes a line of
    JSON and reads the line it answers, one request at a time; a process that ends is started again."""

    def __init__(self, harness: str, argv: tuple[str, ...] = ()) -> None:
        self.harness = harness
        self.argv = argv
        self._process: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str] = queue.Queue()
        self._lock = threading.Lock()
        self._why = ""
        self._errors: collections.deque[str] = collections.deque(maxlen=50)
        self._error_reader: threading.Thread | None = None

    def request(self, payload: Any, *, timeout_s: float | None = None) -> dict[str, Any] | None:
        """Send ``payload``; return its answer, or None when Node.js ended or took longer than ``timeout_s``
        (the process is then ended: :meth:`why` tells what it wrote last)."""
        with self._lock:
            process = self._started()
            assert process.stdin is not None
            try:
                process.stdin.write(json.dumps(payload, default=str) + "\n")
                process.stdin.flush()
                line = self._lines.get(timeout=timeout_s)
            except (OSError, queue.Empty):
                line = ""
            if not line:
                self._why = self._stderr()
                self.close()
                return None
        answer: dict[str, Any] = json.loads(line)
        return answer

    @property
    def pid(self) -> int | None:
        """The running Node.js process's id (None before the first request or after :meth:`close`)."""
        return None if self._process is None else self._process.pid

    def why(self) -> str:
        """Tell why the last request got no answer: the first error line Node.js wrote, or a timeout."""
        return self._why or "no answer"

    def _started(self) -> subprocess.Popen[str]:
        if self._process is None or self._process.poll() is not None:
            node = shutil.which("node") or "node"
            self._process = process = subprocess.Popen(
                [node, "-e", self.harness, *self.argv],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
            )
            self._lines = lines = queue.Queue[str]()
            self._errors = errors = collections.deque[str](maxlen=50)
            assert process.stdout is not None and process.stderr is not None
            # threads read the answers (a request waits for one no longer than its timeout) and stderr
            threading.Thread(target=_read_lines, args=(process.stdout, lines), daemon=True).start()
            self._error_reader = threading.Thread(target=_read_errors, args=(process.stderr, errors), daemon=True)
            self._error_reader.start()
            atexit.register(self.close)
        return self._process

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
        if process is not None:
            if process.poll() is None:
                process.kill()
            process.wait()
            for pipe in (process.stdin, process.stdout, process.stderr):
                if pipe is not None:
                    pipe.close()


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
