"""A small Chrome DevTools Protocol client over ``--remote-debugging-pipe`` (stdlib only).

Headless Chromium reads commands from fd 3 and writes replies and events to fd 4, each a JSON
message ended by a NUL byte. Enough to open a page, run script in it, size the window, take a
screenshot and catch a download: what the dashboard's browser tests need to click and type.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest


#: The headless browser the dashboard tests drive (None: not installed).
CHROMIUM = next(
    (found for name in ("chromium", "chromium-browser", "google-chrome") if (found := shutil.which(name))), None
)
#: The mark of a test that needs it.
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="needs Debian chromium (apt-get install -y chromium); .ci/run installs it when missing"
)


class Browser:
    """One headless Chromium with one page; use as a context manager."""

    def __init__(self, chromium: str, profile: Path) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def fds() -> None:  # the child sees our pipes as fd 3 (its input) and fd 4 (its output)
            os.dup2(to_chrome_r, 100)  # by way of high numbers: either pipe end may be fd 3 or 4
            os.dup2(from_chrome_w, 101)
            os.dup2(100, 3)
            os.dup2(101, 4)

        self.process = subprocess.Popen(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--hide-scrollbars",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={profile}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            preexec_fn=fds,
            pass_fds=(3, 4, to_chrome_r, from_chrome_w),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        page = next(t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the browser."""
        try:
            self.call("Browser.close")
        except (OSError, RuntimeError, TimeoutError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_chrome)
        os.close(self._from_chrome)

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        result: dict[str, Any] = json.loads(message)
        return result

    def call(self, method: str, *, session: bool = False, timeout: float = 60, **params: Any) -> dict[str, Any]:
        """Send one command (to the page with ``session``) and return its result."""
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                value: dict[str, Any] = reply.get("result", {})
                return value
            self.events.append(reply)

    def evaluate(self, expression: str) -> Any:
        """The value of a script expression in the page (promises awaited)."""
        result = self.call(
            "Runtime.evaluate", session=True, expression=expression, awaitPromise=True, returnByValue=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"the page raised: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, url: str, *, width: int = 1400, height: int = 900) -> None:
        """Size the viewport and load ``url``, waiting until the dashboard says it rendered."""
        self.call(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=width < 600,
        )
        self.call("Page.navigate", session=True, url=url)
        self.wait_for("document.documentElement && document.documentElement.getAttribute('data-rendered') === '1'")

    def wait_for(self, expression: str, timeout: float = 60) -> None:
        """Poll until ``expression`` is true in the page."""
        deadline = time.monotonic() + timeout
        while not self.evaluate(f"!!({expression})"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"never true: {expression}")
            time.sleep(0.05)

    def screenshot(self, path: Path) -> None:
        """A PNG of the whole page at the current width."""
        data = self.call("Page.captureScreenshot", session=True, format="png", captureBeyondViewport=True)["data"]
        path.write_bytes(base64.b64decode(data))

    def allow_downloads(self, folder: Path) -> None:
        """Save downloads into ``folder`` (with progress events to wait on)."""
        self.call("Browser.setDownloadBehavior", behavior="allow", downloadPath=str(folder), eventsEnabled=True)

    def wait_download(self, timeout: float = 30) -> None:
        """Until a download has completed."""
        deadline = time.monotonic() + timeout
        while True:
            if any(
                e.get("method") == "Browser.downloadProgress" and e["params"].get("state") == "completed"
                for e in self.events
            ):
                return
            self.events.append(self._read(deadline))
