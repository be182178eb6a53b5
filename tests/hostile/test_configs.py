"""Hostile OpenCompass configs: code that loops, sleeps, allocates, recurses, forks, prints into
the protocol, exits or kills the process that runs it ends with a clear error after its limit, the
next import still works, and ``promptsuite import`` writes nothing."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from pytest_promptsuite.cli.main import main
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.importers.opencompass import execute
from pytest_promptsuite.importers.opencompass.execute import run_config
from pytest_promptsuite.safety.limits import Limit


pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the limits need a POSIX system")

STOPPED = "evaluation stopped at the config evaluation time limit of 0.5 seconds"
MEMORY = "evaluation stopped at the config memory limit of 1,073,741,824 bytes"
DATASETS = "x_datasets = [dict(abbr='x', infer_cfg=dict(prompt_template=dict(template='{q}')))]\n"


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "configs" / "cfg.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


#: A config, the message its import ends with (a pattern), and the time limit it runs under.
HOSTILE: list[tuple[str, str, float]] = [
    ("x = 0\nwhile True:\n    x += 1\n", f"cfg.py:[23]: {STOPPED}", 0.5),
    ("import time\ntime.sleep(60)\n", f"cfg.py:2: {STOPPED}", 0.5),
    (
        "while True:\n    try:\n        while True:\n            pass\n    except Exception:\n        pass\n",
        f"cfg.py:[34]: {STOPPED}",
        0.5,
    ),
    ("x = ' ' * 2 ** 40\n", f"cfg.py:1: {MEMORY}", 10),
    ("x = []\nwhile True:\n    x.append(' ' * 10 ** 6)\n", f"cfg.py:3: {MEMORY}", 10),
    ("x = ['a' * 10 ** 6] * 20\n", "cfg.py: x: larger than the config result size limit of 16,777,216 bytes", 10),
    ("x = [1]\nfor _ in range(60):\n    x = [x, x]\n", f"cfg.py: {STOPPED}", 0.5),  # 2 ** 60 items to send
    ("x = []\nfor _ in range(100):\n    x = [x]\n", "cfg.py: x: nested deeper than the depth limit of 64 levels", 10),
    ("x = []\nx.append(x)\n", "cfg.py: x: nested deeper than the depth limit of 64 levels", 10),
    ("def f(n):\n    return f(n + 1)\nx = f(0)\n", "cfg.py:2: RecursionError: maximum recursion depth exceeded", 10),
    ("import sys\nsys.exit(3)\n", "cfg.py:2: SystemExit: 3", 10),
    ("import os\nos._exit(3)\n", "cfg.py: the config's process exited with status 3 before sending its names", 10),
    (
        "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
        "cfg.py: the config's process was ended by SIGSEGV",
        10,
    ),
    ("import os\nos.kill(os.getppid(), 9)\n", "cfg.py: the config's process was ended by SIGKILL", 10),
]


@pytest.mark.parametrize(("text", "message", "seconds"), HOSTILE, ids=[f"hostile-{i}" for i in range(len(HOSTILE))])
def test_a_hostile_config_ends_with_a_clear_error(tmp_path: Path, text: str, message: str, seconds: float) -> None:
    path = _config(tmp_path, text)
    start = time.monotonic()
    with pytest.raises(ConfigError) as info:
        run_config(path, seconds=seconds)
    assert str(info.value).startswith(str(path.parent))
    assert re.search(message.replace("(", r"\(").replace(")", r"\)"), str(info.value)), str(info.value)
    assert time.monotonic() - start < seconds + 10
    assert run_config(_config(tmp_path, "y = 1\n")) == {"y": 1}  # the next config runs


def test_a_config_that_swallows_every_stop_is_killed(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass\n",
    )
    with pytest.raises(ConfigError, match=f"^{re.escape(str(path))}: {STOPPED}$"):
        run_config(path, seconds=0.5)


def test_output_into_the_protocol_changes_nothing(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        "import os, sys\nprint('{\"names\": {}}')\nos.write(1, b'{}\\n')\nos.write(2, b'x')\n"
        "sys.stdout.flush()\nsys.stdin.read()\n" + DATASETS,
    )
    assert list(run_config(path)) == ["x_datasets"]


def test_a_forked_copy_is_ended_with_the_config(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    path = _config(
        tmp_path,
        "import os, time\nif os.fork() == 0:\n"
        f"    open({str(marker)!r}, 'w').write(str(os.getpid()))\n    time.sleep(60)\n"
        "x = 1\n",
    )
    try:
        names = run_config(path)
    except ConfigError as exc:  # a user other than root may start no process
        assert "cfg.py:2: BlockingIOError" in str(exc)
        return
    assert names == {"x": 1}
    deadline = time.monotonic() + 5
    while marker.exists() and time.monotonic() < deadline:
        pid = int(marker.read_text() or 0)
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().split()[2] in "ZX":
                    break
        except FileNotFoundError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the forked copy is still running")


def test_a_looping_config_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(execute, "CONFIG_SECONDS", Limit("config evaluation time", 0.5, "seconds"))
    path = _config(tmp_path, DATASETS + "while True:\n    pass\n")
    out = tmp_path / "out"
    assert main(["import", "opencompass", str(path), "--out", str(out)]) == 1
    assert f"{path}:2: {STOPPED}" in capsys.readouterr().err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["configs"]
