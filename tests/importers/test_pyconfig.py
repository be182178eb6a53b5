"""OpenCompass Python configs are evaluated, never executed: the idioms work, nothing else runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.importers.opencompass.pyconfig import config_root
from pytest_promptsuite.importers.opencompass.pyconfig import evaluate_config
from pytest_promptsuite.importers.opencompass.pyexpr import Ref


DEMO = Path(__file__).parent / "fixtures" / "opencompass" / "configs" / "datasets" / "demo"


def _config(tmp_path: Path, text: str, name: str = "cfg.py") -> Path:
    folder = tmp_path / "configs" / "datasets" / "x"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_idioms_evaluate(tmp_path: Path) -> None:
    names = evaluate_config(DEMO / "demo_subsets_gen.py")
    datasets = names["task_datasets"]
    assert [d["abbr"] for d in datasets] == ["task-task_a", "task-task_b"]
    prompt = datasets[1]["infer_cfg"]["prompt_template"]["template"]["round"][0]["prompt"]
    assert prompt == "Follow the examples.\nQ: red or blue?\nA: red\n\n\nQ: {input}\nA:"
    assert datasets[0]["infer_cfg"]["prompt_template"]["type"] == Ref(
        "opencompass.openicl.icl_prompt_template", "PromptTemplate")
    assert "_name" not in names  # del works
    labels = evaluate_config(DEMO / "demo_ppl_int_labels.py")["choice_infer_cfg"]["prompt_template"]["template"]
    assert list(labels) == [0, 1] and labels[1]["round"][1]["prompt"] == "{B}"


def test_read_base_imports_a_config_beside_it() -> None:
    names = evaluate_config(DEMO / "demo_ppl_fewshot.py")
    assert names["mcq_datasets"][0]["reader_cfg"]["train_split"] == "dev"
    assert config_root(DEMO / "demo_ppl_fewshot.py") == DEMO.parents[1]


def test_locals_gathering_and_comprehensions(tmp_path: Path) -> None:
    path = _config(tmp_path, (
        "a_datasets = [dict(abbr=f'a{i}', n=i ** 2) for i in range(3) if i != 1]\n"
        "b_datasets = [dict(abbr='b', tags={k: v for k, v in zip('xy', [1, 2])})]\n"
        "datasets = sum((v for k, v in locals().items() if k.endswith('_datasets')), [])\n"
    ))
    assert [d["abbr"] for d in evaluate_config(path)["datasets"]] == ["a0", "a2", "b"]


@pytest.mark.parametrize(("text", "message"), [
    ("import os\nos.system('touch /tmp/pwned')\n", "is not evaluated"),
    ("x = __import__('os')\n", "__import__() is not evaluated"),
    ("x = (1).__class__\n", "'__class__'"),
    ("x = '{0.__class__}'.format(1)\n", "attribute or item access"),
    ("x = 'a' * 10 ** 9\n", "config value size"),
    ("x = list(range(10 ** 8))\n", "range()"),
    ("while True:\n    pass\n", "While statement is not evaluated"),
    ("x = eval('1')\n", "eval() is not evaluated"),
    ("x = open('/etc/passwd').read()\n", "outside the config tree"),
    ("from ...outside import y\n", "inside"),
    ("x = (\n", "not valid Python"),
    ("x = y\n", "name 'y' is not defined"),
])
def test_anything_else_is_a_path_line_error(tmp_path: Path, text: str, message: str) -> None:
    path = _config(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        evaluate_config(path)
    assert str(info.value).startswith(f"{path}:")
    assert message in str(info.value)
    assert not Path("/tmp/pwned").exists()


def test_a_link_out_of_the_tree_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("key", encoding="utf-8")
    path = _config(tmp_path, "import os\nx = open(os.path.join(os.path.dirname(__file__), 'link.txt')).read()\n")
    os.symlink(secret, path.parent / "link.txt")
    with pytest.raises(ConfigError, match="outside the config tree"):
        evaluate_config(path)


def test_time_is_bounded(tmp_path: Path) -> None:
    path = _config(tmp_path, "x = 0\nfor i in range(999999):\n    for j in range(999999):\n        x += 1\n")
    with pytest.raises(ConfigError, match=r"cfg.py:\d+: evaluation stopped at the config evaluation time limit"):
        evaluate_config(path, seconds=0.2)
