"""Hostile globs in a promptfoo config: links that loop back or lead out of the config's folder, and folders
too large to walk. A glob walks as promptfoo's glob library does by default (a leading ``**`` follows no
symlinked folder, a later one at most one), lists nothing outside the config's folder, and stops with a
``path:line`` error past its bound."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_promptsuite.dialects.promptfoo import config_glob
from pytest_promptsuite.dialects.promptfoo.import_promptfoo import promptfoo_suite
from pytest_promptsuite.errors import ConfigError


pytestmark = pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")

TEST = "- vars: {q: QUESTION}\n  assert: [{type: contains, value: QUESTION}]\n"


class Listings:
    """Record every folder ``os.scandir`` lists; stop the walk (an error) past ``limit`` listings."""

    def __init__(self, limit: int = 5_000) -> None:
        self.folders: list[Path] = []
        self.limit = limit
        self._scandir = os.scandir

    def __call__(self, path: Any = ".") -> Any:
        self.folders.append(Path(os.fspath(path)).resolve())
        if len(self.folders) > self.limit:
            raise RuntimeError(f"more than {self.limit} folders listed: the walk does not end")
        return self._scandir(path)


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> Iterator[Listings]:
    made = Listings()
    monkeypatch.setattr(os, "scandir", made)
    yield made


def _config(folder: Path, tests: str, prompts: str = "['Q: {{ q }}']") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "promptfooconfig.yaml"
    config.write_text(f"prompts: {prompts}\nproviders: [echo]\ntests: {tests}\n", encoding="utf-8")
    return config


def _write(path: Path, question: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(TEST.replace("QUESTION", question), encoding="utf-8")


def _questions(config: Path) -> list[str]:
    cases = promptfoo_suite(config).files["cases.jsonl"]
    return [line.split('"q": "')[1].split('"')[0] for line in cases.splitlines()]


@pytest.mark.parametrize("pattern", ["file://**/*.yml", "file://tests/**/*.yml", "file://**/t*/*.yml"])
def test_links_back_to_the_config_folder_end_the_walk_at_once(tmp_path: Path, listings: Listings, pattern: str) -> None:
    config = _config(tmp_path / "cfg", f"'{pattern}'")
    _write(tmp_path / "cfg" / "tests" / "one.yml", "one")
    for name in "abcdefgh":  # each a loop: 8 ** 40 paths when links are followed
        (tmp_path / "cfg" / name).symlink_to(".")
        (tmp_path / "cfg" / "tests" / name).symlink_to("..")
    assert _questions(config) == ["one"]
    assert len(listings.folders) < 100


@pytest.mark.parametrize("pattern", ["file://**/*.yml", "file://*/*.yml", "file://sub/**/*.yml"])
def test_a_glob_lists_no_folder_outside_the_config_folder(tmp_path: Path, listings: Listings, pattern: str) -> None:
    outside = tmp_path / "outside"
    _write(outside / "secret.yml", "secret")
    config = _config(tmp_path / "cfg", f"'{pattern}'")
    _write(tmp_path / "cfg" / "sub" / "mine.yml", "mine")
    (tmp_path / "cfg" / "out").symlink_to(outside)
    (tmp_path / "cfg" / "sub" / "out").symlink_to(outside)
    (tmp_path / "cfg" / "sub" / "root").symlink_to("/")
    (tmp_path / "cfg" / "loop").symlink_to("loop")  # a link to itself: no folder to list
    assert _questions(config) == ["mine"]
    assert listings.folders
    assert all(folder.is_relative_to((tmp_path / "cfg").resolve()) for folder in listings.folders), listings.folders


def test_a_later_globstar_follows_one_link_inside_the_folder_as_node_glob_does(tmp_path: Path) -> None:
    config = _config(tmp_path / "cfg", "'file://tests/**/*.yaml'")
    _write(tmp_path / "cfg" / "shared" / "deep" / "two.yaml", "deep")
    _write(tmp_path / "cfg" / "shared" / "one.yaml", "linked")
    _write(tmp_path / "cfg" / "tests" / "own.yaml", "own")
    (tmp_path / "cfg" / "tests" / "link").symlink_to("../shared")
    assert _questions(config) == ["linked", "own"]  # the link ends the **: shared/deep is not walked


def test_a_glob_past_its_bound_stops_naming_the_glob_and_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config_glob, "MAX_VISITED", 50)
    config = _config(tmp_path / "cfg", "\n  - 'file://data/**/*.yaml'")
    for i in range(60):
        (tmp_path / "cfg" / "data" / f"d{i}").mkdir(parents=True)
    with pytest.raises(ConfigError) as caught:
        promptfoo_suite(config)
    assert str(caught.value) == (
        f"{config}:4: file://data/**/*.yaml: the glob visited more than 50 paths; name the files with a narrower glob"
    )


def test_a_prompt_glob_walks_the_same_way(tmp_path: Path, listings: Listings) -> None:
    config = _config(tmp_path / "cfg", "[{vars: {q: x}}]", prompts="['file://**/*.txt']")
    (tmp_path / "cfg" / "p.txt").write_text("Q: {{ q }}", encoding="utf-8")
    for name in "abcdefgh":
        (tmp_path / "cfg" / name).symlink_to(".")
    (tmp_path / "cfg" / "out").symlink_to("/")
    suite = promptfoo_suite(config)
    assert [name for name in suite.files if name.startswith("prompts/")] == ["prompts/prompt-1.txt"]
    assert all(folder.is_relative_to((tmp_path / "cfg").resolve()) for folder in listings.folders)
