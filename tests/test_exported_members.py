"""The public surface: ``__all__`` lists exactly the public names (httpx's test of the same name),
and each exporting package's names resolve to what their modules define, whatever was imported
first."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys
import types

import pytest

import pytest_promptsuite


#: What the top-level namespace holds besides its public names (its name table and imports).
PLUMBING = {"annotations", "TYPE_CHECKING", "importlib", "Any"}
#: The packages whose ``__init__`` re-exports public names (the rest are empty).
EXPORTING_PACKAGES = ["pytest_promptsuite", "pytest_promptsuite.checks", "pytest_promptsuite.models"]


def test_all_lists_every_public_name() -> None:
    public = {
        name
        for name in dir(pytest_promptsuite)
        if not name.startswith("_")
        and name not in PLUMBING
        and not isinstance(getattr(pytest_promptsuite, name), types.ModuleType)
    }
    assert set(pytest_promptsuite.__all__) == public
    assert pytest_promptsuite.__all__ == sorted(pytest_promptsuite.__all__)


@pytest.mark.parametrize("name", EXPORTING_PACKAGES)
def test_every_exported_name_resolves(name: str) -> None:
    package = importlib.import_module(name)
    for public in package.__all__:
        value = getattr(package, public)
        assert not isinstance(value, types.ModuleType), f"{name}.{public} is a module"
        if inspect.isclass(value) or inspect.isfunction(value):
            assert value.__name__ == public or public.isupper(), f"{name}.{public} is {value!r}"
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        package.no_such_name  # noqa: B018


@pytest.mark.parametrize("name", EXPORTING_PACKAGES)
def test_names_hold_after_every_submodule_is_imported_first(name: str) -> None:
    """A submodule imported before a name is looked up must not shadow it (``checks.evaluate``
    is a function, never the module of that name): checked in a fresh interpreter."""
    script = (
        (
            f"import importlib, pkgutil, types, {name} as p\n"
            "for m in pkgutil.walk_packages(p.__path__, p.__name__ + '.'):\n"
            "    if not m.name.endswith('__main__'):\n"
            "        importlib.import_module(m.name)\n"
            "bad = [n for n in p.__all__ if isinstance(getattr(p, n), types.ModuleType)]\n"
            "print(bad)\n"
        )
        if hasattr(importlib.import_module(name), "__path__")
        else "print([])"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_every_package_module_is_importable_on_its_own() -> None:
    """Function-level imports hide no missing module: each module imports."""
    for module in pkgutil.walk_packages(pytest_promptsuite.__path__, "pytest_promptsuite."):
        if not module.name.endswith("__main__"):  # that one runs the command
            importlib.import_module(module.name)
