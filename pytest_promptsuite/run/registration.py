"""Which plugins implement our hooks: the built-ins, the dialects' default plugins, installed packages and
conftest files, for pytest's plugin manager and for the ``promptsuite`` command's own."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import pluggy

from pytest_promptsuite import hookspecs
from pytest_promptsuite.dialects import nemo
from pytest_promptsuite.dialects import opencompass
from pytest_promptsuite.dialects import promptfoo
from pytest_promptsuite.errors import PromptSuiteError
from pytest_promptsuite.run import defaults as builtins


#: The dialects' default plugins, asked in this order (pluggy calls ``trylast`` implementations in the order
#: they were registered), then the built-ins.
DIALECTS = {"promptsuite-nemo": nemo, "promptsuite-promptfoo": promptfoo, "promptsuite-opencompass": opencompass}


def register_builtins(manager: pluggy.PluginManager) -> None:
    """Add our hookspecs, the built-in implementations and the dialects' default plugins (each loads its
    stage when asked); all ``trylast``, so a conftest or an installed plugin answers first."""
    manager.add_hookspecs(hookspecs)
    for name, plugin in DIALECTS.items():
        manager.register(plugin, name)
    manager.register(builtins, "promptsuite-builtins")


def register_installed(manager: pluggy.PluginManager) -> None:
    """Add the plugins of the ``promptsuite.plugins`` entry point group.

    A blocked name (``-p no:NAME``) and a module that is also a ``pytest11`` plugin are skipped.
    """
    for entry_point in importlib.metadata.entry_points(group=hookspecs.ENTRY_POINT_GROUP):
        if manager.get_plugin(entry_point.name) is not None or manager.is_blocked(entry_point.name):
            continue
        plugin = entry_point.load()
        if not manager.is_registered(plugin):
            manager.register(plugin, name=entry_point.name)


class _Manager(pluggy.PluginManager):
    """pluggy's manager, taking plain ``pytest_promptsuite_*`` functions as pytest does."""

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith("pytest_promptsuite_") and callable(getattr(plugin, name)):
            flags = ("wrapper", "hookwrapper", "optionalhook", "tryfirst", "trylast")
            return {**dict.fromkeys(flags, False), "specname": None}
        return opts


def plugin_manager(conftests: Iterable[ModuleType] = ()) -> pluggy.PluginManager:
    """Build our hooks' manager outside pytest: the built-ins, installed plugins and ``conftests``."""
    manager = _Manager("pytest")
    register_builtins(manager)
    register_installed(manager)
    for module in conftests:
        manager.register(module, f"conftest:{module.__file__}")
    return manager


def conftest_modules(case_files: Iterable[Path], *, root: Path) -> list[ModuleType]:
    """Import the ``conftest.py`` modules pytest would load for these case files, outermost first.

    Those in each file's folder and its parents up to ``root`` (only the file's own folder when it is outside
    ``root``). A conftest that fails to import is a PromptSuiteError.
    """
    root = root.resolve()
    found: dict[Path, ModuleType] = {}
    for case_file in case_files:
        folder = case_file.resolve().parent
        chain = [folder, *folder.parents]
        chain = chain[: chain.index(root) + 1] if root in chain else [folder]
        for directory in reversed(chain):
            path = directory / "conftest.py"
            if path not in found and path.is_file():
                found[path] = _import(path, f"_promptsuite_conftest_{len(found)}")
    return list(found.values())


def _import(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise PromptSuiteError(f"{path}: cannot import the conftest")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's conftest does not import: say so, as pytest would
        raise PromptSuiteError(f"{path}: importing the conftest failed: {exc!r}") from exc
    return module
