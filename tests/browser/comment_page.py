"""The pull request comment rendered as GitHub shows it, for the docs' screenshot and its test: two real runs
(a prompt change that breaks four refund cases), the comment, its HTML, and a headless Chromium screenshot.

Run ``python -m tests.browser.comment_page docs/getting-started/pr-comment.png`` to make the docs' image again.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from pathlib import Path

from pytest_promptsuite.cli.comment import run_comment


CASES = [
    *(
        {"case_id": f"refund-{i}", "input": f"refund {i}", "slice": "refund", "must_include": ["REFUND"]}
        for i in range(6)
    ),
    *(
        {"case_id": f"ship-{i}", "input": f"ship {i}", "slice": "shipping", "must_include": ["SHIPPED"]}
        for i in range(4)
    ),
]
GOOD = {"rules": [{"match": "refund", "reply": "REFUND issued"}, {"match": "ship", "reply": "SHIPPED today"}]}
WORSE = {"rules": [{"match": "refund [0-3]", "reply": "Sorry, I cannot help with that."}, *GOOD["rules"]]}
#: GitHub's look, near enough: its font stack, table borders and the comment box.
STYLE = """
body { font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; color: #1f2328;
       background: #fff; margin: 16px; }
.comment { border: 1px solid #d1d9e0; border-radius: 6px; max-width: 860px; }
.head { background: #f6f8fa; border-bottom: 1px solid #d1d9e0; padding: 8px 16px; color: #59636e; }
.body { padding: 16px; }
h3 { font-size: 1.25em; margin: 0 0 16px; }
table { border-collapse: collapse; margin: 0 0 16px; display: block; overflow: auto; }
th, td { border: 1px solid #d1d9e0; padding: 6px 13px; }
tr:nth-child(2n) { background: #f6f8fa; }
code { background: #eff1f3; border-radius: 6px; padding: .2em .4em; font-size: 85%; }
ul { padding-left: 2em; margin: 0 0 16px; }
"""


def comment_html(markdown_text: str) -> str:
    """Return the comment as a page: its Markdown rendered (tables on), in a box like GitHub's."""
    import markdown  # the docs extra's (mkdocs renders with it)

    body = markdown.markdown(markdown_text, extensions=["tables"])
    head = '<div class="head"><b>github-actions</b> bot commented</div>'
    box = f'<div class="comment">{head}<div class="body">{body}</div></div>'
    return f'<!doctype html><meta charset="utf-8"><style>{STYLE}</style>{box}'


def make_reports(folder: Path) -> tuple[Path, Path]:
    """Run the suite twice in ``folder`` (the baseline, then the broken prompt against it); return both reports."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    for name, rules, more in (("base", GOOD, []), ("report", WORSE, ["--prompt-baseline", "base"])):
        (folder / "rules.json").write_text(json.dumps(rules), encoding="utf-8")
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--prompt-suite", "cases.jsonl"]
        command += ["--prompt-model", "fake:rules.json", "--prompt-report", name, *more]
        subprocess.run(command, cwd=folder, capture_output=True, check=False, timeout=300)
    made = (datetime.now(UTC) - timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    origin = {"commit": "3f9c2a7e51d04b6c", "branch": "main", "created_at": made}
    (folder / "base" / "origin.json").write_text(json.dumps(origin), encoding="utf-8")
    return folder / "base", folder / "report"


def screenshot(chromium: str, page: Path, png: Path, profile: Path) -> None:
    """Take a screenshot of ``page`` in headless Chromium."""
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars"]
    command += ["--disable-background-networking", "--disable-component-update", "--disable-sync"]
    command += [f"--user-data-dir={profile}", "--window-size=900,800", f"--screenshot={png}", page.as_uri()]
    subprocess.run(command, capture_output=True, check=True, timeout=120)


def make_page(folder: Path) -> tuple[str, Path]:
    """Make the reports, the comment and its page in ``folder``; return the comment and the page."""
    base, report = make_reports(folder)
    text = run_comment(report, base)
    page = folder / "comment.html"
    page.write_text(comment_html(text), encoding="utf-8")
    return text, page


def main(png: str) -> None:
    """Make the docs' screenshot of the comment."""
    import shutil

    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    assert chromium is not None, "needs chromium"
    with tempfile.TemporaryDirectory() as tmp:
        _, page = make_page(Path(tmp) / "suite")
        screenshot(chromium, page, Path(png).resolve(), Path(tmp) / "profile")


if __name__ == "__main__":
    main(sys.argv[1])
