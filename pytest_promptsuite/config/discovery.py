"""Which suites a run holds: ``--prompt-suite`` targets, the config of each case file, the variants a
suite runs in, and how paths are shown (one index for the plugin, ``validate`` and ``render``)."""

from __future__ import annotations

import os
from collections.abc import Collection
from collections.abc import Iterator
from collections.abc import Sequence
from pathlib import Path

from pytest_promptsuite.cases.files import iter_case_files
from pytest_promptsuite.cases.files import output_kind
from pytest_promptsuite.config.suite import SuiteConfig
from pytest_promptsuite.config.suite import find_config
from pytest_promptsuite.config.suite import load_config
from pytest_promptsuite.config.suite import suite_targets
from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import did_you_mean
from pytest_promptsuite.safety.scrub import register


#: A suite's identity: its config file (resolved), or None for case files without a config.
SuiteKey = Path | None


class SuiteIndex:
    """The suites of one run: targets → configs → variants → shown paths.

    Args:
        invocation_dir: where the command runs; relative targets resolve here, and paths are
            shown relative to it. None (``promptsuite``) shows paths as they were given, and an
            absolute path under the current folder relative to it.
        rootpath: the highest folder a ``pyproject.toml`` with ``[tool.promptsuite]`` is
            looked for in (pytest's rootdir).
        config: ``--prompt-config``: one config for every case file.
    """

    def __init__(self, *, invocation_dir: Path | None, rootpath: Path, config: str | None = None) -> None:
        self.invocation_dir = invocation_dir
        self.rootpath = rootpath
        self._configs: dict[SuiteKey, SuiteConfig] = {}
        #: Resolved targets, each with the config that named it (if one did).
        self._roots: list[tuple[Path, SuiteKey]] = []
        self._given: list[Path] = []
        #: Files under a target that are not case files (a suite's train rows).
        self._excluded: set[Path] = set()
        self._shown: dict[Path, str] = {}
        #: Each suite's case files (:meth:`suite_files`), found once.
        self._files: dict[SuiteKey, set[Path]] = {}
        self._explicit: SuiteKey = None
        if config:
            self._explicit = self._load(Path(config)).path  # shown in messages as given

    def _absolute(self, path: Path) -> Path:
        if self.invocation_dir is None or path.is_absolute():
            return path
        return self.invocation_dir / path

    def _load(self, path: Path) -> SuiteConfig:
        resolved = path.resolve()
        if resolved not in self._configs:
            suite = load_config(path)
            for model in (suite.model, *suite.models.values()):  # scrubbed from now on, wherever shown
                register(os.environ.get(model.api_key_env))
            self._configs[resolved] = suite
            if suite.suite.train is not None:
                self._excluded.add(suite.resolve(suite.suite.train, key="suite.train"))
        return self._configs[resolved]

    def add_target(self, raw: str) -> list[Path]:
        """Return what to collect for a ``--prompt-suite RAW``, loading its config now (errors before collection)."""
        path = self._absolute(Path(raw))
        if not path.exists():
            raise ConfigError(f"--prompt-suite {raw}: no such file or folder")
        suite, targets = suite_targets(path, load=self._load)
        owner = suite.path if suite is not None else None
        if suite is None and path.is_file() and self._explicit is None:
            found = find_config(path, self.rootpath)
            if found is not None:
                self._load(found)
        for target in targets:
            self._roots.append((target.resolve(), owner))
            self._given.append(target)
        return targets

    def wants(self, file_path: Path) -> bool:
        """Tell whether a ``*.jsonl`` pytest found is a case file of a target: not a train or output file.
        A link under a target that leads outside it is wanted, so that collecting it says so."""
        resolved = file_path.resolve()
        if resolved in self._excluded:
            return False
        if self._root_of(resolved) is None and self._given_under(file_path) is None:
            return False
        return output_kind(file_path) is None

    def check_file(self, case_file: Path) -> None:
        """Refuse (ConfigError) a case file reached through a link that leaves its target's folder."""
        resolved = case_file.resolve()
        if self._root_of(resolved) is not None:
            return
        given = self._given_under(case_file)
        if given is not None:
            raise ConfigError(
                f"{self.display(case_file)}: a link to {resolved}, outside the suite's folder "
                f"{given.resolve()}; case files are read inside the folder --prompt-suite names "
                "(copy the file in, or name it with its own --prompt-suite)"
            )

    def _given_under(self, file_path: Path) -> Path | None:
        """Return the given (not resolved) target that ``file_path`` is under, as found by walking it."""
        path = self._absolute(file_path)
        for target in self._given:
            base = self._absolute(target)
            if path == base or base in path.parents:
                return target
        return None

    def case_files(self) -> Iterator[Path]:
        """Yield every case file under the targets, in order (what pytest would collect)."""
        for target in self._given:
            yield from iter_case_files(target, exclude=self._excluded)

    def _root_of(self, resolved: Path) -> tuple[Path, SuiteKey] | None:
        for root, owner in self._roots:
            if resolved == root or root in resolved.parents:
                return root, owner
        return None

    def folder_of(self, case_file: Path) -> Path:
        """Return the folder a case file may read files and code from: its config's, else its target's, else its own."""
        key, suite = self.suite_of(case_file)
        if suite.path is not None:
            return suite.root
        found = self._root_of(case_file.resolve())
        if found is not None and found[0].is_dir():
            return found[0]
        return case_file.resolve().parent

    def suite_of(self, case_file: Path) -> tuple[SuiteKey, SuiteConfig]:
        """Return the config a case file belongs to, with its key.

        ``--prompt-config``, else the config that named its target, else ``promptsuite.toml`` beside it or
        ``[tool.promptsuite]`` above it, else the defaults (key None).
        """
        root = self._root_of(case_file.resolve())
        if self._explicit is not None:
            key: SuiteKey = self._explicit
        elif root is not None and root[1] is not None:
            key = root[1]
        else:
            found = find_config(case_file, self.rootpath)
            key = found.resolve() if found is not None else None
            if found is not None:
                self._load(found)
            else:
                self._configs.setdefault(None, SuiteConfig())
        return key, self._configs[key]

    def suite_files(self, key: SuiteKey) -> set[Path]:
        """Return every case file (resolved) of the suite of ``key``: under its ``[suite] cases``, else its folder."""
        if key not in self._files:
            suite = self._configs[key]
            targets = suite.case_paths() or [suite.root]
            found = (path.resolve() for target in targets for path in iter_case_files(target, exclude=self._excluded))
            self._files[key] = set(found)
        return self._files[key]

    def slice_problems(self, key: SuiteKey, slices: Collection[str], collected: set[Path]) -> list[str]:
        """Return a problem for each slice the config of ``key`` names that no case has (``slices``), once every
        case file of the suite is ``collected`` (a part of a suite cannot tell; no config names none)."""
        if key is None or not self.suite_files(key) <= collected:
            return []
        return self._configs[key].slice_problems(slices)

    def configs(self) -> list[SuiteConfig]:
        """Return every config loaded so far, in the order they were first needed."""
        return list(self._configs.values())

    def variant_order(self) -> list[str]:
        """Return every variant name of the loaded configs, in config order (the comparison order)."""
        return list(dict.fromkeys(name for suite in self._configs.values() for name in suite.variants))

    def variants(self, key: SuiteKey, wanted: Sequence[str] = ()) -> list[str | None]:
        """Return the prompt versions a suite's cases run in: its ``[variants]``, or those ``wanted``.
        ``[None]`` for a suite without variants."""
        suite = self._configs[key]
        if not suite.variants and wanted:  # its one prompt is no version of that name: say so
            where = self.display(suite.path) if suite.path else "a case file without a suite config"
            raise ConfigError(f"--prompt-variant {wanted[0]}: {where} has no [variants] table, so no such variant")
        if not suite.variants:
            return [None]
        if not wanted:
            return list(suite.variants)
        unknown = [name for name in wanted if name not in suite.variants]
        if unknown:
            raise self._no_variant(suite, unknown[0])
        return [name for name in wanted if name in suite.variants]

    def _no_variant(self, suite: SuiteConfig, name: str) -> ConfigError:
        """Say that a suite has no variant ``name``: the nearest, and its variants."""
        where = self.display(suite.path) if suite.path else "the config"
        return ConfigError(
            f"--prompt-variant {name}: {where} has no such variant"
            + did_you_mean(name, list(suite.variants))
            + f"; its variants: {', '.join(suite.variants)}"
        )

    def display(self, path: Path) -> str:
        """Show a path as the user would write it: relative to where the command was invoked."""
        shown = self._shown.get(path)
        if shown is None:  # once per file: this is on the per-case path
            shown = str(path)
            base = self.invocation_dir
            if base is None and path.is_absolute() and Path.cwd() in path.parents:
                base = Path.cwd()  # a path the command found (a config): shown as pytest shows it
            if base is not None:
                try:
                    shown = os.path.relpath(path, base)
                except ValueError:  # another drive on Windows
                    pass
            self._shown[path] = shown
        return shown
