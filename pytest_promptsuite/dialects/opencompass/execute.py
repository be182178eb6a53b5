"""OpenCompass Python configs run as OpenCompass runs them, in a limited child process (:mod:`.child`);
their names come back as plain values, imported classes as :class:`Ref`."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_promptsuite.config.suite import confine
from pytest_promptsuite.dialects.opencompass import child
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.safety.limits import CONFIG_MEMORY
from pytest_promptsuite.safety.limits import CONFIG_RESULT
from pytest_promptsuite.safety.limits import CONFIG_SECONDS
from pytest_promptsuite.safety.limits import DEPTH
from pytest_promptsuite.safety.limits import Limit


#: How long past its own time limit the child may take to start and answer before it is killed.
_GRACE_SECONDS = 5.0
#: How long the server may take to end its worker and exit once its stdin is closed.
_CLOSE_SECONDS = 2.0


@dataclass(frozen=True)
class Ref:
    """A name the config imported from OpenCompass (``PromptTemplate``, ``AccEvaluator``)."""

    module: str
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Opaque:
    """What calling an imported name gave (``get_data_path()``): OpenCompass code that does not run here."""

    name: str


@dataclass(frozen=True)
class Foreign:
    """An object of the config's own making that is not data (a function, a class, an instance)."""

    kind: str


def config_root(path: Path) -> Path:
    """Find the config tree: the nearest ancestor folder named ``configs``, else the config's folder."""
    for parent in path.resolve().parents:
        if parent.name == "configs":
            return parent
    return path.resolve().parent


def _strings(value: Any, count: int) -> list[str]:
    if not isinstance(value, list) or len(value) != count or not all(isinstance(v, str) for v in value):
        raise ValueError("not a mark of ours")
    return value


def _items(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError("not a mark of ours")
    return value


#: How each mark of :mod:`.child` is read back; the answer comes from the config's process, so a
#: mark that is not what the child writes is refused (ValueError), never taken as it is.
_MARKS: dict[str, Any] = {
    "$tuple": lambda v: tuple(_items(v)),
    "$set": lambda v: frozenset(_items(v)),
    "$ref": lambda v: Ref(*_strings(v, 2)),
    "$opaque": lambda v: Opaque(*_strings([v], 1)),
    "$object": lambda v: Foreign(*_strings([v], 1)),
}


def _decode(where: dict[int, str]) -> Any:
    def hook(item: dict[str, Any]) -> Any:
        if "$dict" in item:
            pairs = _items(item["$dict"])
            if not all(isinstance(pair, list) and len(pair) == 2 for pair in pairs):
                raise ValueError("not a mark of ours")
            value = {key: inner for key, inner in pairs}
            if "$at" in item:
                where.setdefault(id(value), *_strings([item["$at"]], 1))
            return value
        mark = next((mark for mark in _MARKS if mark in item), None)
        if mark is None:  # the answer itself and its names: {"names": {name: value}}
            return item
        if len(item) != 1:
            raise ValueError("not a mark of ours")
        return _MARKS[mark](item[mark])

    return hook


def _nesting(value: Any, limit: int) -> bool:
    """Tell whether ``value`` nests at most ``limit`` levels (walked without recursion: the answer
    may come from a config that wrote it itself, past the child's own depth check)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(item, Mapping):
            stack.extend((inner, depth + 1) for pair in item.items() for inner in pair)
        elif isinstance(item, (list, tuple, frozenset)):
            stack.extend((inner, depth + 1) for inner in item)
    return True


class _Server:
    """The process that runs configs (:mod:`.child`): started once, with an empty environment, and
    asked for one config at a time; it forks a fresh worker with its own limits for each."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-X", "utf8", str(child.__file__)],
            cwd=tempfile.gettempdir(),
            env={},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def ask(self, request: dict[str, Any], seconds: float) -> tuple[bytes, int, bool] | None:
        """Send ``request``: the worker's answer, exit status and lateness, or None when the server failed."""
        assert self.process.stdin is not None and self.process.stdout is not None
        replies = self.process.stdout
        got: list[Any] = []

        def read() -> None:
            try:
                header = json.loads(replies.readline(4096))
                size = int(header["size"])
                data = replies.read(size) if 0 <= size <= CONFIG_RESULT.value + 1 else b""
                if len(data) == size:
                    got.extend([data, int(header["status"]), bool(header["late"])])
            except (OSError, ValueError, KeyError, TypeError):
                pass  # got stays empty: the server failed

        reader = threading.Thread(target=read, daemon=True)
        try:
            self.process.stdin.write(json.dumps(request).encode("utf-8") + b"\n")
            self.process.stdin.flush()
            reader.start()
            reader.join(seconds)
        except OSError:
            pass
        if reader.is_alive():  # the server hangs: out of time
            self.close()
            return b"", -signal.SIGKILL, True
        if len(got) != 3:  # the server ended, or sent something else
            self.close()
            return None
        return got[0], got[1], got[2]

    def close(self) -> None:
        """End the server and the worker it runs: closing its stdin has it kill the worker and exit;
        one that does not is killed (once: a waited-for pid may be reused)."""
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if self.process.returncode is None:
            try:
                self.process.wait(_CLOSE_SECONDS)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.process.pid, signal.SIGKILL)
                except (OSError, AttributeError):
                    self.process.kill()
                self.process.wait()


_server: _Server | None = None
_server_lock = threading.Lock()


def _ask(request: dict[str, Any], seconds: float) -> tuple[bytes, int, bool]:
    """Have the server run ``request``: the answer, the worker's exit status, and whether it was late."""
    global _server
    with _server_lock:
        if _server is not None and _server.process.poll() is not None:
            _server.close()
            _server = None
        if _server is None:
            _server = _Server()
            atexit.register(_server.close)
        try:
            reply = _server.ask(request, seconds + _GRACE_SECONDS)
        except BaseException:  # Ctrl-C: the config's process and its worker end now, with us
            _server.close()
            _server = None
            raise
        if reply is None:
            status = _server.process.returncode
            _server = None
            return b"", status, False
        return reply


def _ended(path: Path, status: int, late: bool, stopped: str) -> ConfigError:
    """Give the error for a worker that sent no names: out of time, ended by a signal, or exited."""
    if late or status == -getattr(signal, "SIGXCPU", 0):
        return ConfigError(f"{path}: evaluation stopped at {stopped}")
    if status < 0:
        name = signal.Signals(-status).name if -status in signal.valid_signals() else f"signal {-status}"
        return ConfigError(f"{path}: the config's process was ended by {name}")
    return ConfigError(f"{path}: the config's process exited with status {status} before sending its names")


def run_config(
    path: Path, *, root: Path | None = None, seconds: float | None = None, where: dict[int, str] | None = None
) -> dict[str, Any]:
    """Run the config at ``path`` and return its top-level names (a ``path:line`` ConfigError when it fails).

    Base configs must lie inside ``root`` (:func:`config_root`); the run stops after ``seconds`` (default
    :data:`CONFIG_SECONDS`); ``where`` gets the ``path:line`` that built each dict, by ``id``.
    """
    resolved = path.resolve()
    tree = (root or config_root(path)).resolve()
    if confine(tree, resolved) is None:
        raise ConfigError(f"{path}: the config is not inside its config tree {tree}")
    limit = CONFIG_SECONDS if seconds is None else Limit(CONFIG_SECONDS.name, seconds, CONFIG_SECONDS.unit)
    request = _request(resolved, tree, limit)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="promptsuite-config-", ignore_cleanup_errors=True) as cwd:
        answer, status, late = _ask({**request, "cwd": cwd}, limit.value)
    if len(answer) > CONFIG_RESULT.value:
        raise ConfigError(f"{path}: the config's names are larger than {CONFIG_RESULT}")
    names = _names(path, answer, where, late) if answer else None
    if names is not None:
        return names
    killed = status == -signal.SIGKILL and time.monotonic() - started >= limit.value
    raise _ended(resolved, status, late or killed, str(limit))


def _request(resolved: Path, tree: Path, limit: Limit) -> dict[str, Any]:
    """Return the request the config process answers: the config, its tree and every limit."""
    return {
        "path": str(resolved),
        "root": str(tree),
        "seconds": limit.value,
        "time_limit": str(limit),
        "memory": CONFIG_MEMORY.value,
        "memory_limit": str(CONFIG_MEMORY),
        "depth": DEPTH.value,
        "depth_limit": str(DEPTH),
        "result_bytes": CONFIG_RESULT.value,
        "result_limit": str(CONFIG_RESULT),
    }


def _names(path: Path, answer: bytes, where: dict[int, str] | None, late: bool) -> dict[str, Any] | None:
    """Read the config process's answer: the config's names, or its error raised; None when a late worker
    sent something else."""
    try:
        reply = json.loads(answer, object_hook=_decode(where if where is not None else {}))
    except (ValueError, KeyError, TypeError, RecursionError):
        reply = None
    if not _nesting(reply, int(DEPTH.value) + 2):  # {"names": {name: value}}
        raise ConfigError(f"{path}: the config's names are nested deeper than {DEPTH}")
    if isinstance(reply, dict) and isinstance(reply.get("error"), str):
        raise ConfigError(reply["error"])
    if isinstance(reply, dict) and isinstance(reply.get("names"), dict):
        names: dict[str, Any] = reply["names"]
        return names
    if not late:
        raise ConfigError(f"{path}: the config's process sent something that is not its names")
    return None


def plain(value: Any, where: str) -> Any:
    """Convert a config's value to what TOML can hold: class names as strings, keys as strings."""
    if isinstance(value, Ref):
        return value.name
    if isinstance(value, Opaque):
        raise ConfigError(f"{where}: {value.name} is computed by code that is not evaluated")
    if isinstance(value, Mapping):
        return {str(k): plain(v, f"{where}[{k!r}]") for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, (set, frozenset)):
        return sorted(plain(v, where) for v in value)
    return _plain_scalar(value, where)


def _plain_scalar(value: Any, where: str) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    kind = value.kind if isinstance(value, Foreign) else type(value).__name__
    raise ConfigError(f"{where}: a {kind} has no place in a suite config")
