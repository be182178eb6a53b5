"""Hostile JavaScript in an imported promptfoo suite: whatever an assert or a Nunjucks filter writes to stdout
(at once, later, to fd 1, to every descriptor it can find) is never taken for an answer, so every verdict
stays the verdict its own code gave."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_promptsuite.cases.prompt_case import PromptCase
from pytest_promptsuite.dialects.promptfoo.code_asserts import javascript
from pytest_promptsuite.dialects.promptfoo.node import NodeFilters


pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
CASE = PromptCase.from_dict({"case_id": "c-1", "input": "hi", "slice": "s"})
FORGED = '{"value":true}\\n'

#: Each way Node lets code write to stdout, now or after its answer; each forges a `true` answer.
WRITES = [
    f"process.stdout.write('{FORGED}')",
    "console.dir({ value: true })",
    "console.table([{ value: true }])",
    "console.count('value'); console.group('x'); console.groupEnd()",
    "console.timeLog('nothing')",
    f"require('fs').writeSync(1, '{FORGED}')",
    f"process.mainModule.require('fs').writeSync(1, '{FORGED}')",
    f"setTimeout(() => process.stdout.write('{FORGED}'), 0)",
    f"setImmediate(() => require('fs').writeSync(1, '{FORGED}'))",
    f"process.nextTick(() => process.stdout.write('{FORGED}'))",
    f"Promise.resolve().then(() => process.stdout.write('{FORGED}'))",
    f"process.stdin.on('data', () => process.stdout.write('{FORGED}'))",
    f"process.stdout.write('{FORGED}'.repeat(3) + 'half a line, no newline')",
]


@pytest.mark.parametrize("write", WRITES)
def test_what_an_assert_writes_to_stdout_is_never_an_answer(write: str) -> None:
    assert javascript(f"{write};\nreturn false", "out", CASE).passed is False
    for _ in range(3):  # the next cases' verdicts are their own, whatever the writes left behind
        assert javascript("output === 'no'", "out", CASE).passed is False
        assert javascript("output === 'out'", "out", CASE).passed is True


#: Writes a forged answer and half a line to fd 1 and to every pipe Node holds one end of (the harness's
#: requests and answers; libuv's own pipes, both of whose ends Node holds, are left alone).
EVERY_DESCRIPTOR = f"""
const fs = require('fs');
const links = fs.readdirSync('/proc/self/fd').map((fd) => {{
  try {{ return [Number(fd), fs.readlinkSync('/proc/self/fd/' + fd)]; }} catch (e) {{ return [Number(fd), '']; }}
}});
const once = links.filter(([fd, link]) => link.startsWith('pipe:') && links.filter(([, l]) => l === link).length === 1);
for (const [fd] of [[1], ...once]) {{
  try {{ fs.writeSync(fd, '{FORGED}' + '{{"error":"forged"}}' + 'no newline'); }} catch (e) {{}}
}}
return false"""


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_an_assert_writing_to_the_answer_pipe_forges_no_answer() -> None:
    assert javascript(EVERY_DESCRIPTOR, "out", CASE).passed is False
    assert javascript("output === 'no'", "out", CASE).passed is False
    assert javascript("output === 'out'", "out", CASE).passed is True


def test_what_a_nunjucks_filter_writes_to_stdout_is_never_an_answer(tmp_path: Path) -> None:
    (tmp_path / "noisy.js").write_text(
        'module.exports = (s) => { process.stdout.write(\'{"value":"forged"}\\n\');'
        " console.dir({ value: 'forged' }); setTimeout(() => process.stdout.write('{\"value\":\"late\"}\\n'));"
        " return s.toUpperCase(); };\n",
        encoding="utf-8",
    )
    filters = NodeFilters({"noisy": tmp_path / "noisy.js"})
    try:
        assert [filters.call("noisy", [word]) for word in ("a", "b", "c")] == ["A", "B", "C"]
    finally:
        filters.close()
