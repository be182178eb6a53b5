"""The environment the benchmarks run pytest in: what a user who installed the plugin has.

Two things of a development machine would otherwise be timed that a user's never pays:

- ``PYTHONDONTWRITEBYTECODE``: where it is set (this workplace sets it), pytest rewrites the
  asserts of every autoloaded plugin's modules again on every run, as it may not cache them
  (about 0.15 s a run here for anyio and pytest-xdist). An installed package has its bytecode
  (pip compiles it), and the warm-up run a benchmark makes writes pytest's rewritten copies.
- the test extra's pytest plugins (pytest-xdist, hypothesis: hypothesis imports itself at every
  terminal summary), which a core install does not have. Autoloading is off; the plugins a core
  install autoloads are loaded by name instead: the plugin and anyio's (httpx depends on anyio).

The plain pytest runs a benchmark compares with get the same environment and plugins.
"""

from __future__ import annotations

import os


#: anyio's pytest plugin: every pytest run of a venv with httpx loads it, bare pytest's too.
ANYIO_PLUGIN = ["-p", "anyio.pytest_plugin"]
#: What a core install of the plugin autoloads, by name (autoloading is off in :func:`user_env`);
#: the test suite's example ``promptsuite.plugins`` package blocked.
CORE_PLUGINS = ["-p", "pytest_promptsuite.plugin", *ANYIO_PLUGIN, "-p", "no:thirdparty_example"]


def user_env(**extra: str) -> dict[str, str]:
    """``os.environ`` as a user's shell has it: bytecode cached, no test-extra plugins autoloaded;
    ``extra`` (``PYTHONPATH=...``) on top."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env.update(extra)
    return env
