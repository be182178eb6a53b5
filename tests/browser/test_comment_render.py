"""The pull request comment rendered as Markdown to HTML and photographed in headless Chromium, as the docs'
screenshot is made: the tables and lists render, nothing escapes into markup."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .cdp import CHROMIUM
from .cdp import needs_chromium
from .comment_page import make_page
from .comment_page import screenshot


pytestmark = [needs_chromium, pytest.mark.slow]


def test_the_comment_renders_as_tables_and_a_screenshot(tmp_path: Path) -> None:
    pytest.importorskip("markdown")
    assert CHROMIUM is not None
    text, page = make_page(tmp_path / "suite")
    assert "**Newly failing (4)**" in text
    html = page.read_text(encoding="utf-8")
    assert html.count("<table>") == 3  # slices, newly failing, cost
    assert "<h3>❌ promptsuite: regressed</h3>" in html and "<!-- promptsuite-comment -->" in html
    assert "<td>must_include: " in html  # the escaped underscore shows as one
    png = tmp_path / "comment.png"
    screenshot(CHROMIUM, page, png, tmp_path / "profile")
    assert png.read_bytes().startswith(b"\x89PNG") and png.stat().st_size > 10_000
    dumped = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={tmp_path / 'p2'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert "refund-3" in dumped and "<script" not in dumped
