"""OpenCompass Python configs run as OpenCompass runs them, in a limited child process (:mod:`.child`);
their names come back as plain values, imported classes as :class:`Ref`."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
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


#: The variables ``promptsuite import opencompass`` keeps when it runs itself again before a config runs:
#: what Python, the locale, temporary files and coverage read. Every other one (an API key) is left behind.
KEPT_VARIABLES = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP", "TERM", "COLUMNS"}
    | {"NO_COLOR", "VIRTUAL_ENV", "SYSTEMROOT"}
)
#: The prefixes of further variables it keeps (``LC_ALL``, ``PYTHONPATH``, ``COVERAGE_PROCESS_START``).
KEPT_PREFIXES = ("LC_", "PYTHON", "COVERAGE_", "COV_CORE_")


def kept_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """Return the variables of ``environ`` an import keeps (:data:`KEPT_VARIABLES`, :data:`KEPT_PREFIXES`)."""
    return {name: value for name, value in environ.items() if name in KEPT_VARIABLES or name.startswith(KEPT_PREFIXES)}


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


def _pidfd(pid: int) -> int | None:
    """Open a handle on process ``pid`` that no later process given its pid is taken for (Linux 5.3 and
    later); None where there is none."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _stat(pid: int | str) -> list[bytes] | None:
    """Return the fields of ``/proc/PID/stat`` after the command's name (state, ppid, pgrp, session, ...);
    None when there is no such process, or no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _session(leader: int) -> list[int]:
    """Return the processes of ``leader``'s session that have not ended (zombies left out), as /proc lists them."""
    members = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        fields = _stat(name)
        if fields is not None and int(fields[3]) == leader and fields[0] not in b"ZX":
            members.append(int(name))
    return members


def _kill(handle: int) -> bool:
    """Send SIGKILL to the process behind a pidfd; False when it was reaped already."""
    try:
        signal.pidfd_send_signal(handle, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


def _wait(handles: list[int], deadline: float) -> None:
    """Wait until each pidfd's process has ended (its pidfd turns readable), or until ``deadline``."""
    while handles and (left := deadline - time.monotonic()) > 0:
        ready = select.select(handles, [], [], left)[0]
        handles = [handle for handle in handles if handle not in ready]


class _Worker:
    """The process that runs one config, held by the importer from before the config's code starts: it
    leads a session of its own, and the importer ends that session itself, even when the config killed
    the server that forked it."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.handle = _pidfd(pid)

    def end(self) -> None:
        """Kill the worker and every process of its session, and wait (at most :data:`_CLOSE_SECONDS`) until
        none runs; a worker the server has reaped already left nothing (the server ended its session)."""
        if self.handle is None:
            return self._end_by_pid()
        try:
            if _kill(self.handle):
                self._end_session(time.monotonic() + _CLOSE_SECONDS)
        finally:
            os.close(self.handle)

    def _end_session(self, deadline: float) -> None:
        """Kill what the session holds until it holds nothing that runs (a copy may fork until it is killed)."""
        assert self.handle is not None
        handles = [self.handle]
        while time.monotonic() < deadline:
            members = [handle for handle in map(_pidfd, _session(self.pid)) if handle is not None]
            for handle in members:
                _kill(handle)
            _wait(handles + members, deadline)
            for handle in members:
                os.close(handle)
            if not members:
                return

    def _end_by_pid(self) -> None:
        """Kill the worker's session by its id, where no pidfd holds the worker: only while a session with
        that id still exists (not waited for)."""
        with contextlib.suppress(OSError):
            if os.getsid(self.pid) == self.pid:
                os.killpg(self.pid, signal.SIGKILL)


class _Server:
    """The process that runs configs (:mod:`.child`): started once, with an empty environment, and
    asked for one config at a time; it forks a fresh worker with its own limits for each, and tells
    the importer the worker's pid before the config's code starts (:class:`_Worker`)."""

    def __init__(self) -> None:
        self.worker: _Worker | None = None
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
        assert self.process.stdin is not None
        got: list[Any] = []
        reader = threading.Thread(target=self._read, args=(got,), daemon=True)
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

    def _read(self, got: list[Any]) -> None:
        """Read the server's answer into ``got`` (data, status, lateness), taking hold of the worker on the
        way; ``got`` stays empty when the server fails."""
        assert self.process.stdin is not None and self.process.stdout is not None
        replies = self.process.stdout
        try:
            header = json.loads(replies.readline(4096))
            if "worker" in header:  # a forked worker waits for our go
                self.worker = self._hold(int(header["worker"]))
                self.process.stdin.write(b"go\n")
                self.process.stdin.flush()
                header = json.loads(replies.readline(4096))
            size = int(header["size"])
            data = replies.read(size) if 0 <= size <= CONFIG_RESULT.value + 1 else b""
            if len(data) == size:
                got.extend([data, int(header["status"]), bool(header["late"])])
        except (OSError, ValueError, KeyError, TypeError):
            pass

    def _hold(self, pid: int) -> _Worker:
        """Take hold of the worker the server says it forked: its child (where /proc tells), never a process
        named by a line a config wrote into the server's replies."""
        fields = _stat(pid)
        if fields is not None and int(fields[1]) != self.process.pid:
            raise ValueError(f"process {pid} is not the server's")
        return _Worker(pid)

    def end_worker(self) -> None:
        """End the last worker and its session, if anything of it is left."""
        worker, self.worker = self.worker, None
        if worker is not None:
            worker.end()

    def close(self) -> None:
        """End the server and the worker it runs: closing its stdin has it kill the worker and exit;
        one that does not is killed (once: a waited-for pid may be reused); then whatever is left of
        the worker (a config may have killed the server) is ended here."""
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
        self.end_worker()


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
        _server.end_worker()  # reaped by the server, normally: then this only closes our handle
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
