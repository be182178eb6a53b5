"""Stage tests for ``models.builtin_models``: the model a spec names, made from the config."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from pytest_promptsuite.errors import ModelError
from pytest_promptsuite.models.builtin_models import make_model
from pytest_promptsuite.models.model_api import ModelRequest


def _rules(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def test_make_model_resolves_rules_against_root(tmp_path: Path) -> None:
    _rules(tmp_path, {"default": "hi"})
    model = make_model("fake:rules.json", root=tmp_path)
    assert asyncio.run(model.generate(ModelRequest("x"))).text == "hi"


def test_unknown_spec() -> None:
    with pytest.raises(ModelError, match="unknown model spec 'nope:x'"):
        make_model("nope:x")
