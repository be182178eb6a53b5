"""promptfoo's ``nunjucksFilters``: JavaScript filter files run in one long-lived Node.js process per
suite (a line of JSON each way per call), so a filter costs a round trip, not a Node start."""

from __future__ import annotations

import atexit
import json
import shutil
import subprocess
import threading
from collections.abc import Callable
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_promptsuite.errors import TemplateError


#: Load each filter file (``module.exports`` or its ``default``), then answer ``{name, args}`` lines
#: with ``{value}`` or ``{error}`` lines.
_HARNESS = r"""
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


class NodeFilters:
    """The ``nunjucksFilters`` of one suite (filter name -> JavaScript file), started on first use."""

    def __init__(self, files: Mapping[str, Path]) -> None:
        self.files = dict(files)
        self._process: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()

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
        with self._lock:
            process = self._started()
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(json.dumps({"name": name, "args": args}, default=str) + "\n")
            process.stdin.flush()
            line = process.stdout.readline()
        if not line:
            why = self._stderr()
            self.close()
            raise TemplateError(f"nunjucksFilters {name!r} ({self.files[name].name}): Node.js stopped: {why}")
        answer = json.loads(line)
        if "error" in answer:
            raise TemplateError(f"nunjucksFilters {name!r} ({self.files[name].name}) raised: {answer['error']}")
        return answer["value"]

    def _started(self) -> subprocess.Popen[str]:
        if self._process is None or self._process.poll() is not None:
            node = shutil.which("node") or "node"
            files = {name: str(path) for name, path in self.files.items()}
            self._process = subprocess.Popen(
                [node, "-e", _HARNESS, json.dumps(files)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
            )
            atexit.register(self.close)
        return self._process

    def _stderr(self) -> str:
        process = self._process
        if process is None or process.stderr is None:
            return "no output"
        process.wait(timeout=5)
        lines = process.stderr.read().strip().splitlines()
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
