"""Every public template vector (SPEC-templates.md §15) through ``render_request`` and the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.cli.main import main
from pytest_promptsuite.dialects.opencompass.render_request import render_request
from pytest_promptsuite.errors import TemplateError


VECTORS_FILE = Path(__file__).parent / "vectors" / "templates.public.jsonl"
VECTORS = [json.loads(line) for line in VECTORS_FILE.read_text(encoding="utf-8").splitlines() if line]
BY_ID = {v["id"]: v for v in VECTORS}


def _final(answer: dict[str, Any]) -> Any:
    return answer["requests"] if "requests" in answer else answer["prompt"]


def test_vector_file_is_complete() -> None:
    assert len(VECTORS) == 103
    assert len(BY_ID) == len(VECTORS)


@pytest.mark.parametrize("vector", VECTORS, ids=[v["id"] for v in VECTORS])
def test_vector(vector: dict[str, Any]) -> None:
    if vector["expect_error"]:
        with pytest.raises(TemplateError) as info:
            render_request(vector["request"])
        message = str(info.value)
        assert message
        for mention in vector.get("error_mentions", []):
            assert mention in message
        return
    answer = render_request(vector["request"])
    assert _final(answer) == vector["expected"]
    if "expected_intermediate" in vector:
        assert answer["intermediate"] == vector["expected_intermediate"]
    if "expected_retrieved" in vector:
        assert answer["retrieved"] == vector["expected_retrieved"]
    if "expected_chat" in vector:
        assert answer["chat"] == vector["expected_chat"]
    json.dumps(answer)  # the answer is JSON as it stands


SAMPLE = [
    "pt_seed_string_masked",
    "ice_seed_dialogue_2shot_api_gen",
    "new_real_chatml_fixk_2shot_gen",
    "mt_seed_every_api",
    "new_mm_seed_doc_row_url_template",
    "lm_doc_meta_begin_end_ppl",
] + [v["id"] for v in VECTORS if v["expect_error"]][:4]


@pytest.mark.parametrize("vector_id", SAMPLE)
def test_vector_through_cli(vector_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    vector = BY_ID[vector_id]
    request = tmp_path / "request.json"
    request.write_text(json.dumps(vector["request"], ensure_ascii=False), encoding="utf-8")
    status = main(["render", "--request", str(request)])
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == 1
    answer = json.loads(lines[0])
    if vector["expect_error"]:
        assert status == 1
        assert answer["error"]["type"] == "TemplateError"
        assert answer["error"]["message"]
        assert "Traceback" not in out + err
    else:
        assert status == 0
        assert _final(answer) == vector["expected"]


def test_cli_request_not_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    request = tmp_path / "request.json"
    request.write_text("{not json", encoding="utf-8")
    assert main(["render", "--request", str(request)]) == 1
    answer = json.loads(capsys.readouterr().out)
    assert answer["error"]["type"] == "TemplateError"
    assert "not valid JSON" in answer["error"]["message"]


def test_cli_request_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "--request", str(tmp_path / "nope.json")]) == 1
    answer = json.loads(capsys.readouterr().out)
    assert "nope.json" in answer["error"]["message"]
