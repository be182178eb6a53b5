"""OpenCompass Python configs run as OpenCompass runs them (in a child process, OpenCompass and
mmengine stood in for): the idioms work, base configs resolve as mmengine resolves them, and a bad
config is a ``path:line`` error."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from pytest_promptsuite.dialects.opencompass import execute
from pytest_promptsuite.dialects.opencompass.execute import Foreign
from pytest_promptsuite.dialects.opencompass.execute import Opaque
from pytest_promptsuite.dialects.opencompass.execute import Ref
from pytest_promptsuite.dialects.opencompass.execute import config_root
from pytest_promptsuite.dialects.opencompass.execute import plain
from pytest_promptsuite.dialects.opencompass.execute import run_config
from pytest_promptsuite.errors import ConfigError
from tests.hostile.support import SECRET


DEMO = Path(__file__).parent / "fixtures" / "opencompass" / "configs" / "datasets" / "demo"


def _config(tmp_path: Path, text: str, name: str = "cfg.py", folder: str = "configs/datasets/x") -> Path:
    path = tmp_path / folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_idioms_run() -> None:
    names = run_config(DEMO / "demo_subsets_gen.py")
    datasets = names["task_datasets"]
    assert [d["abbr"] for d in datasets] == ["task-task_a", "task-task_b"]
    prompt = datasets[1]["infer_cfg"]["prompt_template"]["template"]["round"][0]["prompt"]
    assert prompt == "Follow the examples.\nQ: red or blue?\nA: red\n\n\nQ: {input}\nA:"
    assert datasets[0]["infer_cfg"]["prompt_template"]["type"] == Ref(
        "opencompass.openicl.icl_prompt_template", "PromptTemplate"
    )
    assert "_name" not in names  # del works
    labels = run_config(DEMO / "demo_ppl_int_labels.py")["choice_infer_cfg"]["prompt_template"]["template"]
    assert list(labels) == [0, 1] and labels[1]["round"][1]["prompt"] == "{B}"


def test_read_base_imports_a_config_beside_it() -> None:
    names = run_config(DEMO / "demo_ppl_fewshot.py")
    assert names["mcq_datasets"][0]["reader_cfg"]["train_split"] == "dev"
    assert config_root(DEMO / "demo_ppl_fewshot.py") == DEMO.parents[1]


def test_locals_gathering_and_comprehensions(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        (
            "a_datasets = [dict(abbr=f'a{i}', n=i ** 2) for i in range(3) if i != 1]\n"
            "b_datasets = [dict(abbr='b', tags={k: v for k, v in zip('xy', [1, 2])})]\n"
            "datasets = sum((v for k, v in locals().items() if k.endswith('_datasets')), [])\n"
        ),
    )
    assert [d["abbr"] for d in run_config(path)["datasets"]] == ["a0", "a2", "b"]


def test_base_configs_resolve_as_mmengine_resolves_them(tmp_path: Path) -> None:
    _config(
        tmp_path,
        "_shared = dict(x=1)\nbase_datasets = [dict(abbr='b', cfg=dict(k=dict(a=1, b=2)))]\n",
        name="base.py",
        folder="configs/datasets/common",
    )
    path = _config(
        tmp_path,
        (
            "from mmengine.config import read_base\n"
            "with read_base():\n"
            "    from opencompass.configs.datasets.common.base import *\n"
            "    from ..common.base import base_datasets as again\n"
            "copy = base_datasets[0].deepcopy()\n"
            "copy.abbr = 'c'\n"
            "copy.cfg.update(dict(k=dict(b=3)))\n"
            "x_datasets = [copy]\n"
            "shared = _shared.x\n"
            "separate = again is not base_datasets\n"
        ),
    )
    names = run_config(path)
    assert names["x_datasets"] == [{"abbr": "c", "cfg": {"k": {"a": 1, "b": 3}}}]  # ConfigDict.update merges
    assert names["base_datasets"][0]["abbr"] == "b"
    assert names["shared"] == 1  # import * takes the base's _private names, as mmengine's does
    assert names["separate"] is True  # each import of a base runs it again, as mmengine does


def test_stand_ins_are_names_and_calls_are_opaque(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        (
            "import torch\n"
            "from opencompass.datasets import XDataset, get_data_path\n"
            "from opencompass.utils.text_postprocessors import first_capital_postprocess as post\n"
            "class Local(XDataset):\n"
            "    pass\n"
            "x = dict(type=XDataset, dtype=torch.float16, path=get_data_path('x'), post=post, local=Local)\n"
        ),
    )
    x = run_config(path)["x"]
    assert x["type"] == Ref("opencompass.datasets", "XDataset")
    assert x["dtype"] == Ref("torch", "float16") and x["post"].name == "first_capital_postprocess"
    assert x["path"] == Opaque("get_data_path()") and x["local"] == Foreign("type")
    with pytest.raises(ConfigError, match=r"x\['path'\]: get_data_path\(\) is computed by code that is not"):
        plain(x, "x")
    with pytest.raises(ConfigError, match=r"x\['local'\]: a type has no place in a suite config"):
        plain({"local": x["local"]}, "x")


def test_where_each_dict_was_built(tmp_path: Path) -> None:
    _config(tmp_path, "reader = dict(\n    input_columns=['q'])\n", name="base.py")
    path = _config(
        tmp_path,
        (
            "from mmengine.config import read_base\n"
            "with read_base():\n"
            "    from .base import reader\n"
            "import copy\n"
            "x = {'a': 1}\n"
            "y = copy.deepcopy(x)\n"
        ),
    )
    where: dict[int, str] = {}
    names = run_config(path, where=where)
    assert where[id(names["x"])] == f"{path}:5" and where[id(names["y"])] == f"{path}:6"
    assert where[id(names["reader"])] == f"{path.parent / 'base.py'}:1"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x = (\n", "cfg.py:1: not valid Python: '(' was never closed"),
        ("x = 1\ny = [dict(a=1,\n    b=undefined)]\n", "cfg.py:3: name 'undefined' is not defined"),
        ("x = {}['k']\n", "cfg.py:1: KeyError: 'k'"),
        ("from ...outside import y\n", "cfg.py:1: outside: no config file outside.py inside "),
        ("from .missing import y\n", "cfg.py:1: missing: no config file missing.py inside "),
        ("from . import y\n", "cfg.py:1: a bare relative import is not evaluated"),
        ("from .cfg import nothing\n", "cfg.py:1: cfg.py defines no 'nothing'"),
        ("from opencompass.datasets import *\n", "cfg.py:1: from opencompass.datasets import *: the names of"),
        ("import sys\nsys.exit(3)\n", "cfg.py:2: SystemExit: 3"),
    ],
)
def test_a_bad_config_is_a_path_line_error(tmp_path: Path, text: str, message: str) -> None:
    path = _config(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        run_config(path)
    assert str(info.value).startswith(str(path.parent) + os.sep)
    assert message in str(info.value)


def test_an_error_in_a_base_config_names_the_base(tmp_path: Path) -> None:
    base = _config(tmp_path, "x = 1\ny = 1 / 0\n", name="base.py")
    bad = _config(tmp_path, "z = (\n", name="bad.py")
    path = _config(tmp_path, "from mmengine.config import read_base\nwith read_base():\n    from .base import *\n")
    with pytest.raises(ConfigError, match=f"^{re.escape(str(base))}:2: ZeroDivisionError: division by zero$"):
        run_config(path)
    path.write_text("from .bad import z\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=f"^{re.escape(str(bad))}:1: not valid Python"):
        run_config(path)


def test_a_config_runs_as_code_with_no_secret_and_a_scratch_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A config is code, as it is for OpenCompass: it reads what it likes (the importer's confinement
    # is another issue's); it gets no environment of ours, so no API key, and an empty temporary
    # folder as its working directory, removed afterwards.
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    outside = tmp_path / "outside.txt"
    outside.write_text("read", encoding="utf-8")
    path = _config(
        tmp_path,
        (
            "import os\n"
            f"text = open({str(outside)!r}).read()\n"
            "key = os.environ.get('OPENAI_API_KEY')\n"
            "here = os.getcwd()\n"
            "listing = os.listdir('.')\n"
            "open('left.txt', 'w').write('x')\n"
        ),
    )
    names = run_config(path)
    assert names["text"] == "read" and names["key"] is None and names["listing"] == []
    assert Path(names["here"]) != path.parent and not Path(names["here"]).exists()


def test_the_time_limit_names_the_line(tmp_path: Path) -> None:
    path = _config(tmp_path, "x = 0\nfor i in range(999999):\n    for j in range(999999):\n        x += 1\n")
    with pytest.raises(ConfigError, match=r"cfg.py:\d+: evaluation stopped at the config evaluation time limit"):
        run_config(path, seconds=0.2)


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads /proc")
def test_a_process_is_read_from_proc_or_is_none() -> None:
    assert execute._stat(os.getpid())[1] == str(os.getppid()).encode()  # type: ignore[index]
    assert execute._stat(0) is None  # no such process
    assert os.getpid() in execute._session(os.getsid(0))  # this process runs in its session
