"""Hostile import configs: OpenCompass code that loops, sleeps, allocates, recurses, forks, prints into
the protocol, exits or kills the process that runs it ends with a clear error after its limit, the next
import still works, and ``promptsuite import`` writes nothing; no import writes outside ``--out`` or
builds past its limits, and Ctrl-C ends one with a line."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_promptsuite.cli.main import main
from pytest_promptsuite.dialects.opencompass import execute
from pytest_promptsuite.dialects.opencompass.execute import run_config
from pytest_promptsuite.dialects.promptfoo import promptfoo_tests
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.imported_suite import ImportedSuite
from pytest_promptsuite.formats.imported_suite import write_import
from pytest_promptsuite.safety.limits import Limit
from tests.suite import default_sigint


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


def _ended(pid: int) -> bool:
    """Tell whether process ``pid`` has ended (gone, or a zombie waiting for its parent)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in "ZX"
    except FileNotFoundError:
        return True


def _wait_ended(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not _ended(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


#: One evaluation step that runs in C, where the config's time limit cannot raise: the worker is killed.
ONE_STEP = [
    "x = sum([[0] * 1000] * 100000, [])\n",  # a quadratic sum of lists
    "x = 10 ** 10 ** 10\n",  # a huge power (CPython checks for signals inside it)
]


@pytest.mark.parametrize("text", ONE_STEP, ids=["sum-of-lists", "huge-power"])
def test_one_long_step_is_stopped_at_the_limit(tmp_path: Path, text: str) -> None:
    path = _config(tmp_path, text + DATASETS)
    start = time.monotonic()
    with pytest.raises(ConfigError, match=f"{re.escape(str(path))}(:1)?: {STOPPED}$"):
        run_config(path, seconds=0.5)
    assert time.monotonic() - start < 0.5 + 2 + 2  # the limit, the worker's grace to answer, slack


def test_a_fifo_read_is_stopped_at_the_limit(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    path = _config(tmp_path, f"x = open({str(fifo)!r}).read()\n" + DATASETS)
    with pytest.raises(ConfigError, match=f"{re.escape(str(path))}:1: {STOPPED}$"):
        run_config(path, seconds=0.5)


def test_a_worker_outlives_neither_its_server_nor_its_limit(tmp_path: Path) -> None:
    # The config kills the process that serves it, then swallows every stop while it sleeps: with no
    # server left to kill it, the importer ends it (else it would end itself at its limit).
    marker = tmp_path / "pid"
    path = _config(
        tmp_path,
        f"import os, time\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\nos.kill(os.getppid(), 9)\n"
        "while True:\n    try:\n        time.sleep(100)\n    except BaseException:\n        pass\n",
    )
    with pytest.raises(ConfigError, match="the config's process was ended by SIGKILL"):
        run_config(path, seconds=60)  # its own limit far off: a slow start under load must not reach it first
    pid = int(marker.read_text(encoding="utf-8"))
    try:
        assert _wait_ended(pid, 5), "the worker still runs"
    finally:
        if not _ended(pid):
            os.kill(pid, signal.SIGKILL)


def _forging(tmp_path: Path, answer: str) -> Path:
    """A config that writes its own answer into the pipe its worker answers on, and exits."""
    return _config(
        tmp_path,
        "import os, stat\nfor fd in range(3, 64):\n    try:\n"
        f"        if stat.S_ISFIFO(os.fstat(fd).st_mode):\n            os.write(fd, {answer.encode()!r})\n"
        "    except OSError:\n        pass\nos._exit(0)\n",
    )


def _dataset(template: str, retriever: str = '{"$dict": [["type", "ZeroRetriever"]]}') -> str:
    infer = f'{{"$dict": [["retriever", {retriever}], ["prompt_template", {{"$dict": [["template", {template}]]}}]]}}'
    return f'{{"names": {{"x_datasets": [{{"$dict": [["abbr", "x"], ["infer_cfg", {infer}]]}}]}}}}'


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (_dataset("[" * 900 + "]" * 900), "the config's names are nested deeper than the depth limit of 64 levels"),
        (
            _dataset('"q"', '{"$dict": [["type", {"$ref": [[1], [2]]}]]}'),
            "the config's process sent something that is not its names",
        ),
        (_dataset('{"$dict": [[[1], 2]]}'), "the config's process sent something that is not its names"),
        (_dataset('{"$tuple": 1}'), "the config's process sent something that is not its names"),
    ],
    ids=["deep", "ref-of-lists", "list-key", "tuple-of-int"],
)
def test_a_forged_answer_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], answer: str, message: str
) -> None:
    json.loads(answer)  # JSON, as the worker's answer is
    path = _forging(tmp_path, answer)
    out = tmp_path / "out"
    assert main(["import", "opencompass", str(path), "--out", str(out)]) == 1
    assert f"{path}: {message}" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x = {}\nx['self'] = x\n" + DATASETS, "cfg.py: x: nested deeper than the depth limit of 64 levels"),
        (
            "r = dict(input_columns=['q'])\nr['r'] = r\nx_datasets = [dict(abbr='x', reader_cfg=r,"
            " infer_cfg=dict(prompt_template=dict(template='{q}')))]\n",
            "cfg.py: r: nested deeper than the depth limit of 64 levels",
        ),
        ("f = " + "lambda: " * 3000 + "1\n", "cfg.py:1: not valid Python: nested too deeply for the parser"),
        (
            "f = lambda: 1\nfor _ in range(100000):\n    f = (lambda g: lambda: g())(f)\ny = f()\n",
            "cfg.py:3: RecursionError: maximum recursion depth exceeded",
        ),
    ],
    ids=["self-dict", "self-reader", "nested-lambdas", "lambda-chain"],
)
def test_nested_values_and_code_are_clear_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    path = _config(tmp_path, text)
    out = tmp_path / "out"
    assert main(["import", "opencompass", str(path), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()


FEW_SHOT = (
    "x_datasets = [dict(abbr='x', reader_cfg=dict(input_columns=['q']), infer_cfg=dict(\n"
    "    ice_template=dict(template='{q}'), prompt_template=dict(template='</E>{q}', ice_token='</E>'),\n"
    "    retriever=dict(type=KIND, SETTING)))]\n"
)
RETRIEVERS = [
    ("FixKRetriever", "fix_id_list=[10 ** 9]", "1,000,000,001 in-context examples would be written as placeholders"),
    ("RandomRetriever", "ice_num=10 ** 9", "1,000,000,000 in-context examples would be written as placeholders"),
    ("FixKRetriever", "fix_id_list=['a']", "an index of fix_id_list is 'a'; it is a whole number, 0 or more"),
    ("FixKRetriever", "fix_id_list=3", "fix_id_list is 3; it is a list of row indices"),
    ("RandomRetriever", "ice_num='many'", "ice_num is 'many'; it is a whole number, 0 or more"),
    ("RandomRetriever", "ice_num=-1", "ice_num is -1; it is a whole number, 0 or more"),
]


@pytest.mark.parametrize(("kind", "setting", "message"), RETRIEVERS, ids=[r[1] for r in RETRIEVERS])
def test_placeholder_examples_are_counted_before_they_are_built(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, setting: str, message: str
) -> None:
    path = _config(tmp_path, FEW_SHOT.replace("KIND", repr(kind)).replace("SETTING", setting))
    out = tmp_path / "out"
    assert main(["import", "opencompass", str(path), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:1: infer_cfg.retriever: {message}"), err
    assert not out.exists()


def test_placeholder_examples_up_to_the_limit_are_written(tmp_path: Path) -> None:
    path = _config(tmp_path, FEW_SHOT.replace("KIND", "'FixKRetriever'").replace("SETTING", "fix_id_list=[0, 9999]"))
    out = tmp_path / "out"
    assert main(["import", "opencompass", str(path), "--out", str(out)]) == 0
    assert len((out / "x" / "train.jsonl").read_text(encoding="utf-8").splitlines()) == 10_000


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("retriever=1", "infer_cfg.retriever: expected dict(type=..., ...), not int"),
        ("inferencer=1", "infer_cfg.inferencer: expected dict(type=..., ...), not int"),
        ("ice_template=dict(type='RawPromptTemplate', messages=1)", "infer_cfg.ice_template.messages: expected a list"),
    ],
)
def test_parts_of_the_wrong_type_are_clear_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    path = _config(
        tmp_path, f"x_datasets = [dict(abbr='x', infer_cfg=dict(prompt_template=dict(template='q'), {text}))]\n"
    )
    out = tmp_path / "out"
    assert main(["import", "opencompass", str(path), "--out", str(out)]) == 1
    assert f"{path}:1: {message}" in capsys.readouterr().err
    assert not out.exists()


def test_ctrl_c_ends_an_import_with_a_line(tmp_path: Path) -> None:
    # The config's worker is inside one long C step (no Python code runs to see a signal there).
    marker = tmp_path / "pid"
    path = _config(
        tmp_path, f"import os\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\nx = sum([[0] * 1000] * 100000, [])\n"
    )
    out = tmp_path / "out"
    command = [sys.executable, "-m", "pytest_promptsuite", "import", "opencompass", str(path), "--out", str(out)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    try:
        deadline = time.monotonic() + 30
        while not (marker.exists() and marker.read_text(encoding="utf-8")) and time.monotonic() < deadline:
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=5)
    finally:
        process.kill()
    assert process.returncode == 130
    assert err.strip() == "promptsuite import: interrupted; nothing was written", err
    assert _wait_ended(int(marker.read_text(encoding="utf-8")), 3), "the config's worker still runs"
    assert not out.exists()


def _promptfoo(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "promptfooconfig.yaml"
    config.write_text(text, encoding="utf-8")
    return config


@pytest.mark.parametrize(
    ("entry", "line"),
    [
        ("vars: {x: 1}\n    assert: [{type: python, value: 'file://link/../../../.bashrc'}]", 4),
        ("vars: {x: 'file://link/../../../.bashrc'}", 4),
    ],
    ids=["assert-file", "var-file"],
)
def test_a_link_in_the_config_folder_carries_no_write_outside_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: str, line: int
) -> None:
    # link/../../../.bashrc lies inside the folder once the link is followed (a/b/c/../../..), and
    # two levels above --out as written: it is refused, and nothing is written anywhere.
    folder = tmp_path / "cfg"
    (folder / "a" / "b" / "c").mkdir(parents=True)
    (folder / "link").symlink_to("a/b/c")
    (folder / ".bashrc").write_text("def get_assert(output, context):\n    return True\n", encoding="utf-8")
    config = _promptfoo(folder, f"prompts: ['hi']\nproviders: [echo]\ntests:\n  - {entry}\n")
    out = tmp_path / "deep" / "er" / "out"
    out.parent.mkdir(parents=True)
    assert main(["import", "promptfoo", str(config), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{config}:{line}: " in err and "file://link/../../../.bashrc lies outside the config's folder" in err
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()) == [
        "cfg/.bashrc",
        "cfg/promptfooconfig.yaml",
    ]


@pytest.mark.parametrize("name", ["../x.txt", "a/../../x.txt", "/tmp/x.txt", "a/../.."])
def test_the_writer_refuses_a_path_that_leaves_out(tmp_path: Path, name: str) -> None:
    out = tmp_path / "deep" / "out"
    suite = ImportedSuite(name="s", config={"suite": {}}, files={name: "x"})
    with pytest.raises(ConfigError, match=f"^{re.escape(name)}: a path that leaves --out"):
        write_import(out, [suite], flat=True)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_a_code_assert_file_never_replaces_a_written_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "cfg"
    config = _promptfoo(
        folder,
        "prompts: ['hi']\nproviders: [echo]\ntests:\n  - assert: [{type: python, value: 'file://cases.jsonl'}]\n",
    )
    (folder / "cases.jsonl").write_text("{}\n", encoding="utf-8")
    assert main(["import", "promptfoo", str(config), "--out", str(tmp_path / "out")]) == 1
    assert "file://cases.jsonl: a code assert's file may not be named cases.jsonl" in capsys.readouterr().err


def _arrays(count: int, values: int = 10) -> str:
    """Return ``count`` array vars of ``values`` strings each (promptfoo expands only arrays of strings)."""
    return ", ".join(f"v{i}: [{', '.join(repr(str(v)) for v in range(values))}]" for i in range(count))


def test_eight_array_vars_are_refused_before_any_case_is_built(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _promptfoo(
        tmp_path / "cfg",
        f"prompts: ['hi']\nproviders: [echo]\ntests:\n  - vars: {{x: 1}}\n  - vars: {{{_arrays(8)}}}\n",
    )
    out = tmp_path / "out"
    assert main(["import", "promptfoo", str(config), "--out", str(out)]) == 1
    assert capsys.readouterr().err.startswith(
        f"{config}:5: the tests expand to more than the imported case count limit of 100,000 cases"
    )
    assert not out.exists()


def test_expansions_up_to_the_case_limit_are_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(promptfoo_tests, "IMPORT_CASES", Limit("imported case count", 100, "cases"))
    config = _promptfoo(tmp_path / "cfg", f"prompts: ['hi']\nproviders: [echo]\ntests:\n  - vars: {{{_arrays(2)}}}\n")
    assert main(["import", "promptfoo", str(config), "--out", str(tmp_path / "out")]) == 0
    assert len((tmp_path / "out" / "cases.jsonl").read_text(encoding="utf-8").splitlines()) == 100
    config.write_text(config.read_text(encoding="utf-8") + "  - vars: {x: 1}\n", encoding="utf-8")
    assert main(["import", "promptfoo", str(config), "--out", str(tmp_path / "out2")]) == 1
    assert f"{config}:5: the tests expand to more than the imported case count limit of 100 cases" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("test", "message"),
    [
        (f"vars: {{s: {'x' * 2000}, {_arrays(2)}}}", "the cases are larger than the imported cases size limit"),
        (
            f"vars: {{s: {'x' * 2000}}}\n    assert: [{{type: contains, value: '{'{{s}}' * 100}'}}]",
            "assert[0]: the value filled from the vars is longer than the imported cases size limit",
        ),
    ],
    ids=["repeated-var", "filled-assert"],
)
def test_the_cases_text_is_bounded_as_it_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], test: str, message: str
) -> None:
    monkeypatch.setattr(promptfoo_tests, "IMPORT_CASES_BYTES", Limit("imported cases size", 100_000, "bytes"))
    config = _promptfoo(tmp_path / "cfg", f"prompts: ['hi']\nproviders: [echo]\ntests:\n  - {test}\n")
    assert main(["import", "promptfoo", str(config), "--out", str(tmp_path / "out")]) == 1
    assert f"{config}:4: {message} of 100,000 bytes" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("test", "message"),
    [
        ("vars: [1, 2]", "vars is a mapping of names to values"),
        ("metadata: 1", "metadata is a mapping of names to values"),
        ("assert: 1", "assert is a list"),
        ("assert: [{type: assert-set, assert: 1}]", "assert[0]: assert is a list"),
    ],
)
def test_test_keys_of_the_wrong_type_are_path_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], test: str, message: str
) -> None:
    config = _promptfoo(tmp_path / "cfg", f"prompts: ['hi']\nproviders: [echo]\ntests:\n  - {test}\n")
    assert main(["import", "promptfoo", str(config), "--out", str(tmp_path / "out")]) == 1
    assert f"{config}:4: {message}" in capsys.readouterr().err


def _alive_in_session(leader: int) -> list[int]:
    """Return the processes of the session ``leader`` led that still run (neither gone nor zombies), from /proc."""
    alive = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):  # ended meanwhile
            continue
        if fields[3] == str(leader) and fields[0] not in "ZX":
            alive.append(int(name))
    return alive


#: What the worker does before it kills its server, having ignored every signal a limit sends, and after.
RUNAWAY = {
    "sleeps": ("", "while True:\n    time.sleep(100)\n"),
    "computes": ("", "while True:\n    pass\n"),
    # as root (a user's fork fails: no processes): a copy that sleeps, in the worker's session
    "forks": ("if os.fork() == 0:\n    while True:\n        time.sleep(100)\n", "while True:\n    time.sleep(100)\n"),
}


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads /proc")
@pytest.mark.parametrize("runaway", list(RUNAWAY))
def test_a_worker_that_ignores_its_limits_and_kills_its_server_ends_before_the_import_returns(
    tmp_path: Path, runaway: str
) -> None:
    # The time limit's signals are ignored and its timer cancelled, then the server that would have ended the
    # worker is killed: the importer itself ends the worker (and what it forked) before run_config returns.
    marker = tmp_path / "pid"
    before, after = RUNAWAY[runaway]
    path = _config(
        tmp_path,
        "import os, signal, time\n"
        "for s in (signal.SIGALRM, signal.SIGXCPU, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):\n"
        "    signal.signal(s, signal.SIG_IGN)\n"
        f"signal.setitimer(signal.ITIMER_REAL, 0)\n{before}open({str(marker)!r}, 'w').write(str(os.getpid()))\n"
        f"os.kill(os.getppid(), 9)\n{after}",
    )
    try:
        run_config(path, seconds=60)
    except ConfigError as exc:
        assert "the config's process was ended by SIGKILL" in str(exc) or "BlockingIOError" in str(exc), exc
    worker = int(marker.read_text(encoding="utf-8")) if marker.exists() else 0
    alive = _alive_in_session(worker) if worker else []  # at once: no wait, the import has returned
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    assert alive == [], "the config's processes still run after the import returned"


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads /proc")
def test_without_pidfds_the_worker_is_ended_by_its_session_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No pidfd_open (an older kernel, another POSIX system): the worker's session is killed by its id, not
    # waited for.
    monkeypatch.delattr(os, "pidfd_open")
    marker = tmp_path / "pid"
    path = _config(
        tmp_path,
        f"import os, signal, time\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
        f"open({str(marker)!r}, 'w').write(str(os.getpid()))\nos.kill(os.getppid(), 9)\n" + RUNAWAY["sleeps"][1],
    )
    with pytest.raises(ConfigError, match="the config's process was ended by SIGKILL"):
        run_config(path, seconds=60)
    worker = int(marker.read_text(encoding="utf-8"))
    try:
        assert _wait_ended(worker, 5), "the worker still runs"
    finally:
        if not _ended(worker):
            os.kill(worker, signal.SIGKILL)


def test_the_worker_cannot_outlive_a_hard_cpu_limit(tmp_path: Path) -> None:
    # If the importer itself is killed, a worker that computes is still ended: RLIMIT_CPU's hard limit is a
    # SIGKILL that no handler catches, a few seconds past the time limit.
    path = _config(tmp_path, "import resource\nx = resource.getrlimit(resource.RLIMIT_CPU)\n")
    soft, hard = run_config(path, seconds=3)["x"]
    assert soft == 5 and hard == 6


#: A config that reads the environment of every process it can (its ancestors' first), and writes down whose
#: holds one of ``KEYS``' values, and which it could read.
PEEKING = """\
import json, os
keys = KEYS
def parent(pid):
    with open(f'/proc/{pid}/stat') as stat:
        return int(stat.read().rsplit(')', 1)[1].split()[1])
ancestors, pid = [], os.getpid()
while pid > 1:
    ancestors.append(pid)
    pid = parent(pid)
read, holding = [], []
for name in [str(p) for p in ancestors] + [n for n in os.listdir('/proc') if n.isdigit()]:
    try:
        with open(f'/proc/{name}/environ', 'rb') as file:
            environ = file.read()
    except OSError:
        continue
    read.append(int(name))
    holding += [int(name)] * any(key.encode() in environ for key in keys)
with open(REPORT, 'w') as file:
    json.dump({'ancestors': ancestors, 'read': read, 'holding': sorted(set(holding))}, file)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="reads /proc")
def test_no_process_of_the_import_holds_a_key_its_config_can_read(tmp_path: Path) -> None:
    keys = {name: f"sk-{name.lower()}-{os.urandom(8).hex()}" for name in ("OPENAI_API_KEY", "ACME_SERVICE_TOKEN")}
    report = tmp_path / "report.json"
    text = PEEKING.replace("KEYS", repr(list(keys.values()))).replace("REPORT", repr(str(report)))
    path = _config(tmp_path, text + DATASETS)
    command = [sys.executable, "-m", "pytest_promptsuite", "import", "opencompass", str(path), "--out", "out"]
    process = subprocess.run(command, cwd=tmp_path, env={**os.environ, **keys}, capture_output=True, timeout=60)
    assert process.returncode == 0, process.stderr
    seen = json.loads(report.read_text(encoding="utf-8"))
    importer = seen["ancestors"][2]  # the worker, the server, the import
    assert importer in seen["read"] and os.getpid() in seen["ancestors"]
    assert seen["holding"] == [], f"processes holding a key: {seen['holding']}"


def test_the_command_runs_itself_again_with_only_the_variables_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    # What the test above sees done by exec, seen from inside: the command's own arguments, and no key.
    calls: list[tuple[str, list[str], dict[str, str]]] = []

    def execve(path: str, argv: list[str], env: dict[str, str]) -> None:
        calls.append((path, argv, env))
        raise SystemExit(0)

    monkeypatch.setattr(os, "execve", execve)
    monkeypatch.setattr(sys, "argv", ["/venv/bin/promptsuite", "import", "opencompass", "cfg.py", "--out", "o"])
    monkeypatch.setenv("OPENAI_API_KEY", "sk-in-the-environment-0001")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    with pytest.raises(SystemExit):
        main(sys.argv[1:])
    [(path, argv, env)] = calls
    assert argv[:3] == [sys.executable, "-X", "promptsuite-without-keys"]
    assert argv[3:] == ["-m", "pytest_promptsuite", "import", "opencompass", "cfg.py", "--out", "o"]
    assert path == sys.executable and "OPENAI_API_KEY" not in env
    assert env["LC_ALL"] == "C.UTF-8" and env["PATH"] == os.environ["PATH"]
    monkeypatch.setitem(sys._xoptions, "promptsuite-without-keys", True)  # run again: never a third time
    assert main(sys.argv[1:]) == 1 and len(calls) == 1


@pytest.mark.skipif(not os.path.exists("/proc/self/fdinfo"), reason="reads /proc")
def test_a_worker_pid_a_config_writes_into_the_replies_is_never_ended(tmp_path: Path) -> None:
    # The config opens its server's reply pipe through /proc and writes a whole answer, then a worker line
    # naming another process: the next import must not take that process for its worker (and kill it).
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    forging = (
        "import os\nppid = os.getppid()\nfor fd in os.listdir(f'/proc/{ppid}/fd'):\n"
        "    with open(f'/proc/{ppid}/fdinfo/{fd}') as info:\n"
        "        flags = int(info.read().split('flags:')[1].split()[0], 8)\n"
        "    if os.readlink(f'/proc/{ppid}/fd/{fd}').startswith('pipe:') and flags & 3 == 1:\n"
        '        answer = b\'{"names": {"x": 1}}\'\n'
        '        frame = b\'{"size": %d, "status": 0, "late": false}\\n\' % len(answer) + answer\n'
        f"        line = b'{{\"worker\": {victim.pid}}}\\n'\n"
        "        os.write(os.open(f'/proc/{ppid}/fd/{fd}', os.O_WRONLY), frame + line)\n"
        "x = 2\n"
    )
    try:
        run_config(_config(tmp_path, forging))
        try:
            names = run_config(_config(tmp_path, "y = 1\n"))
        except ConfigError:
            names = {}
        assert victim.poll() is None, "the process the config named was killed"
        assert names in ({}, {"y": 1})
        assert run_config(_config(tmp_path, "z = 1\n")) == {"z": 1}
    finally:
        victim.kill()
        victim.wait()
