"""Stage tests for ``plugin``'s parts that need no pytest run: SIGTERM as Ctrl-C, and what interrupted a run."""

from __future__ import annotations

import signal
import threading

import pytest

from pytest_promptsuite.plugin import _interrupted_by
from pytest_promptsuite.plugin import _TerminateAsInterrupt


needs_main_thread = pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(), reason="signal handlers are set in the main thread"
)


@needs_main_thread
def test_sigterm_interrupts_once_then_the_handler_before_is_back() -> None:
    before = signal.getsignal(signal.SIGTERM)
    terminate = _TerminateAsInterrupt()
    terminate.install()
    try:
        with pytest.raises(KeyboardInterrupt, match="^signal SIGTERM$"):
            signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGTERM)  # timeout(1) signals the process, then its group: no second stop
        assert terminate.quiet
    finally:
        terminate.restore()
    assert signal.getsignal(signal.SIGTERM) is before
    terminate.restore()  # twice: nothing left to put back
    assert signal.getsignal(signal.SIGTERM) is before


def test_outside_the_main_thread_nothing_is_installed() -> None:
    terminate = _TerminateAsInterrupt()
    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=terminate.install)
    thread.start()
    thread.join()
    assert not terminate.installed
    terminate.restore()
    assert signal.getsignal(signal.SIGTERM) is before


def test_what_interrupted_the_run() -> None:
    assert _interrupted_by("signal SIGTERM") == "stopped by SIGTERM"
    assert _interrupted_by("") == "interrupted"  # Ctrl-C
