"""``promptsuite import opencompass``: configs in the upstream idioms become suites that render and
run with no edits; bad input is a ``path:line`` error and writes nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.cli.main import main
from pytest_promptsuite.formats.tomlio import parse_toml
from tests.suite import Suite


FIXTURES = Path(__file__).parent / "fixtures" / "opencompass"
DEMO = FIXTURES / "configs" / "datasets" / "demo"
MODELS = FIXTURES / "configs" / "models"


def _import(tmp_path: Path, config: Path, *extra: str, out: str = "out") -> tuple[int, Path]:
    status = main(["import", "opencompass", str(config), "--out", str(tmp_path / out), *extra])
    return status, tmp_path / out


def _render(suite: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert main(["render", "--prompt-suite", str(suite)]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def _template_of(suite: Path) -> Any:
    return parse_toml((suite / "promptsuite.toml").read_bytes(), "promptsuite.toml")[0]["template"]


def test_gen_config_with_model_and_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = FIXTURES / "data" / "demo.jsonl"
    status, out = _import(
        tmp_path,
        DEMO / "demo_gen_1shot.py",
        "--model",
        str(MODELS / "demo_model.py"),
        "--data",
        str(data),
        "--train",
        str(data),
    )
    assert status == 0
    assert "eval_cfg: AccEvaluator not carried over" in capsys.readouterr().out
    suite = out / "demo-gen"
    config = parse_toml((suite / "promptsuite.toml").read_bytes(), "promptsuite.toml")[0]
    assert config["model"]["params"] == {"max_tokens": 32, "stop": ["Q:"]}  # the inferencer's, over the model's
    assert config["model"]["endpoint"] == "completions"
    cases = [json.loads(line) for line in (suite / "cases.jsonl").read_text(encoding="utf-8").splitlines()]
    assert (cases[0]["answer"], cases[0]["vars"]) == ("4", {"question": "2+2?"})  # the integer as a string
    shown = _render(suite, capsys)
    assert shown[1]["prompt"] == "<|User|>: Q: 2+2?\n<|Bot|>: A: 4<eob>\n<|User|>: Q: 3+3?\n<|Bot|>: "


def test_ppl_config_with_integer_labels_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str], suite: Suite) -> None:
    status, out = _import(tmp_path, DEMO / "demo_ppl_int_labels.py", "--data", str(FIXTURES / "data" / "choice.csv"))
    assert status == 0
    imported = out / "choice"
    config = parse_toml((imported / "promptsuite.toml").read_bytes(), "promptsuite.toml")[0]
    assert config["template"]["inferencer"] == "ppl"
    assert list(config["template"]["prompt_template"]["template"]) == ["0", "1"]
    shown = _render(imported, capsys)
    assert shown[0]["labels"] == {"0": "The sky is\nblue", "1": "The sky is\ngreen"}
    shutil.copytree(imported, suite.path / "suite")
    result = suite.run("--prompt-report", "report", "-p", "no:cacheprovider", paths=["suite"])
    result.stdout.fnmatch_lines(["*2 cases*"])
    rows = suite.rows()
    assert sorted(r["case_id"] for r in rows) == ["choice-1", "choice-2"]  # no label in the id
    for row in rows:
        (check,) = [c for c in row["checks"] if c["name"] == "ppl-label"]
        assert row["output"] in ("0", "1") and ("perplexity by label" in check["message"])


def test_label_map_dialogue_ice_has_opencompass_separators(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "train.jsonl").write_text(
        '{"question":"q0","A":"a0","B":"b0","answer":"A"}\n{"question":"q1","A":"a1","B":"b1","answer":"B"}\n',
        encoding="utf-8",
    )
    (tmp_path / "data.jsonl").write_text('{"question":"q","A":"qa","B":"qb","answer":"B"}\n', encoding="utf-8")
    status, out = _import(
        tmp_path,
        DEMO / "demo_ppl_fewshot.py",
        "--data",
        str(tmp_path / "data.jsonl"),
        "--train",
        str(tmp_path / "train.jsonl"),
    )
    assert status == 0
    (shown,) = _render(out / "mcq", capsys)
    # each example is followed by the separator "\n" and the examples by the eos "\n", as
    # OpenCompass's generate_ice does for a label map (prompt_type 'origin'); the LM parser
    # without a meta template then joins items with "\n"
    assert shown["labels"]["A"] == (
        "q0\nA. a0\nB. b0\nAnswer: \nA\n\n\nq1\nA. a1\nB. b1\nAnswer: \nB\n\n\n\n\nq\nA. qa\nB. qb\nAnswer: \nA"
    )


def test_subsets_and_prompt_files_give_one_suite_each(tmp_path: Path) -> None:
    status, out = _import(tmp_path, DEMO / "demo_subsets_gen.py")
    assert status == 0
    assert sorted(p.name for p in out.iterdir()) == ["task-task_a", "task-task_b"]
    assert "input" in (out / "task-task_a" / "CASES.md").read_text(encoding="utf-8")


def test_braces_that_are_no_column_stay_as_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """OpenCompass replaces each column's ``{column}`` and leaves any other ``{name}`` (LaTeX) as text."""
    status, out = _import(tmp_path, DEMO / "demo_latex_gen.py", "--data", str(FIXTURES / "data" / "latex.jsonl"))
    assert status == 0
    assert 'semantics = "opencompass"' in (out / "latex" / "promptsuite.toml").read_text(encoding="utf-8")
    shown = _render(out / "latex", capsys)
    assert shown[0]["prompt"] == "Example: $\\frac{a}{b}$ with {b} nonzero.\nProblem: 1+1?\nSolution:"


def test_a_variant_of_an_imported_suite_keeps_opencompass_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = _import(tmp_path, DEMO / "demo_latex_gen.py", "--data", str(FIXTURES / "data" / "latex.jsonl"))
    assert status == 0
    with (out / "latex" / "promptsuite.toml").open("a", encoding="utf-8") as config:
        config.write('\n[variants.v1]\nprompt_template = { template = "V: $\\\\frac{a}{b}$ {problem}" }\n')
    assert [line["prompt"] for line in _render(out / "latex", capsys)] == ["V: $\\frac{a}{b}$ 1+1?"]


def test_a_column_the_template_reads_is_carried_though_no_input_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """OpenCompass fills a template from the whole row, not its input columns alone."""
    status, out = _import(tmp_path, DEMO / "demo_other_column_ppl.py", "--data", str(FIXTURES / "data" / "other.jsonl"))
    assert status == 0
    case = json.loads((out / "other" / "cases.jsonl").read_text(encoding="utf-8"))
    assert sorted(case["vars"]) == ["label", "opt1", "opt2", "prompt", "pronoun"]
    (shown,) = _render(out / "other", capsys)
    assert (
        shown["labels"]["0"] == "The cat sat on the mat because it was tired. Q: what does 'it' refer to? A: the cat."
    )


def test_chat_inferencer_with_an_ice_template_alone_sends_the_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """OpenCompass's ChatInferencer renders no in-context example: the input column is the user's turn."""
    status, out = _import(tmp_path, DEMO / "demo_chat_gen.py", "--data", str(FIXTURES / "data" / "latex.jsonl"))
    assert status == 0
    assert "ice_template: not carried over (ChatInferencer" in capsys.readouterr().out
    config = parse_toml((out / "chat" / "promptsuite.toml").read_bytes(), "promptsuite.toml")[0]
    assert "ice_template" not in config["template"] and config["template"]["infer_mode"] == "last"
    assert [line["prompt"] for line in _render(out / "chat", capsys)] == ["1+1?"]


def test_a_dialogue_column_is_the_chat_of_a_multi_turn_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """OpenCompass's ChatInferencer with a ``dialogue`` input column sends that chat, a turn at a time."""
    status, out = _import(tmp_path, DEMO / "demo_dialogue_chat.py", "--data", str(FIXTURES / "data" / "dialogue.jsonl"))
    assert status == 0
    case = json.loads((out / "mt" / "cases.jsonl").read_text(encoding="utf-8"))
    assert (case["input"], case["answer"], case["vars"]) == (["Hi?", "Bye?"], ["Hello.", ""], {"capability": "chat"})
    assert _template_of(out / "mt") == {
        "retriever": {"type": "ZeroRetriever"},
        "output_column": "judge",
        "semantics": "opencompass",
        "infer_mode": "every_with_gt",
    }
    (shown,) = _render(out / "mt", capsys)
    assert shown["requests"] == [
        [{"role": "user", "content": "Hi?"}],
        [
            {"role": "user", "content": "Hi?"},
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "Bye?"},
        ],
    ]


def test_a_raw_prompt_of_an_expanded_column_sends_its_messages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """OpenCompass's ``RawPromptTemplate(messages=[{'expand_column': COLUMN}])`` sends the column's messages."""
    status, out = _import(tmp_path, DEMO / "demo_expand_gen.py", "--data", str(FIXTURES / "data" / "expand.jsonl"))
    assert status == 0
    assert _template_of(out / "expand")["infer_mode"] == "last"
    (shown,) = _render(out / "expand", capsys)
    assert shown["requests"] == [
        [
            {"role": "user", "content": "Hi?"},
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "Bye?"},
        ]
    ]
    rows = tmp_path / "system.jsonl"
    rows.write_text('{"dialogue": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}]}\n')
    status, out = _import(tmp_path, DEMO / "demo_expand_gen.py", "--data", str(rows), out="again")
    assert status == 1 and not out.exists()
    assert f"{rows}:1: the column 'dialogue' has the roles system, user; a chat imported as turns" in (
        capsys.readouterr().err
    )


def test_a_reader_cfg_that_is_no_dict_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out = _import(tmp_path, DEMO / "demo_reader_tuple.py")
    assert status == 1 and not out.exists()
    assert (
        f"{DEMO / 'demo_reader_tuple.py'}:8: dataset tuple: reader_cfg is a tuple, not dict(input_columns=..., "
        "output_column=...) (the comma after the dict makes it a tuple)"
    ) in capsys.readouterr().err


def test_mdl_retriever_and_the_chat_template_model_are_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = _import(tmp_path, DEMO / "demo_mdl_ppl.py", "--model", str(MODELS / "demo_chat_template.py"))
    printed = capsys.readouterr().out
    assert status == 0
    assert "MDLRetriever is not supported" in printed and "TopkRetriever" in printed
    assert "candidate_num" not in (out / "mdl" / "promptsuite.toml").read_text(encoding="utf-8")
    assert "VLLMwithChatTemplate's chat template imported as the built-in 'qwen' format" in printed
    assert main(["render", "--prompt-suite", str(out / "mdl")]) == 0


def test_bad_input_is_path_line_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "configs" / "bad.py"
    bad.parent.mkdir()
    bad.write_text(
        "x_datasets = [dict(abbr='x', infer_cfg=dict(\n    prompt_template=undefined_name))]\n", encoding="utf-8"
    )
    status, out = _import(tmp_path, bad)
    assert status == 1
    assert f"{bad}:2: name 'undefined_name' is not defined" in capsys.readouterr().err
    assert not out.exists()
    bad.write_text(
        "from opencompass.openicl.icl_retriever import SlidingKRetriever\n\n"
        "x_infer_cfg = dict(\n    prompt_template=dict(template='{q}'),\n"
        "    retriever=dict(type=SlidingKRetriever))\n"
        "x_datasets = [dict(abbr='x', infer_cfg=x_infer_cfg)]\n",
        encoding="utf-8",
    )
    status, out = _import(tmp_path, bad)
    assert status == 1 and not out.exists()
    assert f"{bad}:3: infer_cfg.retriever: SlidingKRetriever is not supported" in capsys.readouterr().err
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        '{"ctx": "a", "A": "x", "B": "y", "label": 0}\n{"ctx": "b", "A": "x", "B": "y", "label": 7}\n', encoding="utf-8"
    )
    status, out = _import(tmp_path, DEMO / "demo_ppl_int_labels.py", "--data", str(rows))
    assert status == 1
    assert f"{rows}:2: the answer '7' is not a label of the template (labels: 0, 1)" in capsys.readouterr().err
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".promptsuite-import")]


def test_a_dataset_folder_gives_the_test_and_train_splits(tmp_path: Path) -> None:
    folder = tmp_path / "hf" / "data"
    folder.mkdir(parents=True)
    (folder / "test-00000-of-00001.jsonl").write_text('{"question": "q", "answer": 1}\n', encoding="utf-8")
    (folder / "train-00000-of-00001.jsonl").write_text('{"question": "t", "answer": 2}\n', encoding="utf-8")
    status, out = _import(tmp_path, DEMO / "demo_gen_1shot.py", "--data", str(tmp_path / "hf"))
    assert status == 0
    suite = out / "demo-gen"
    assert json.loads((suite / "cases.jsonl").read_text(encoding="utf-8"))["answer"] == "1"
    assert json.loads((suite / "train.jsonl").read_text(encoding="utf-8")) == {"question": "t", "answer": 2}


def test_subsets_that_share_a_template_are_one_suite_a_slice_each(tmp_path: Path) -> None:
    config = tmp_path / "configs" / "shared_gen.py"
    config.parent.mkdir()
    config.write_text(
        "from opencompass.openicl.icl_prompt_template import PromptTemplate\n"
        "shared_datasets = [dict(abbr=f'part-{n}', reader_cfg=dict(input_columns=['q'], output_column='a'),\n"
        "    infer_cfg=dict(prompt_template=dict(type=PromptTemplate, template='Q: {q}\\nA:')))\n"
        "    for n in ('x', 'y')]\n",
        encoding="utf-8",
    )
    status, out = _import(tmp_path, config)
    assert status == 0
    assert [p.name for p in out.iterdir()] == ["shared_gen"]
    cases = [json.loads(x) for x in (out / "shared_gen" / "cases.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(c["case_id"], c["slice"]) for c in cases] == [("part-x-1", "part-x"), ("part-y-1", "part-y")]
