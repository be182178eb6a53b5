"""``promptsuite import opencompass|promptfoo``: the arguments, and the run that prints what was
written and what could not be carried over (exit 1 with ``path:line`` messages, nothing written)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from pytest_promptsuite.safety.scrub import printable
from pytest_promptsuite.safety.scrub import register


__all__ = ["add_import_command"]


def _opencompass(args: argparse.Namespace) -> int:
    from pytest_promptsuite.importers.opencompass.convert import import_opencompass

    result = import_opencompass(
        Path(args.config), out=Path(args.out), model=Path(args.model) if args.model else None,
        data=Path(args.data) if args.data else None, train=Path(args.train) if args.train else None,
        root=Path(args.config_root) if args.config_root else None,
    )
    print(printable(result.report()))
    return 0


def _promptfoo(args: argparse.Namespace) -> int:
    from pytest_promptsuite.importers.promptfoo.convert import import_promptfoo

    register(os.environ.get("OPENAI_API_KEY"))
    result = import_promptfoo(Path(args.config), out=Path(args.out), slice_key=args.slice_key)
    print(printable(result.report()))
    return 0


def add_import_command(commands: Any) -> None:
    """Add ``import opencompass`` and ``import promptfoo`` to the ``promptsuite`` command."""
    command = commands.add_parser("import", help="write a suite from an OpenCompass or promptfoo config")
    kinds = command.add_subparsers(dest="kind", required=True)
    oc = kinds.add_parser("opencompass", help="an OpenCompass dataset config (.py), run as OpenCompass runs it")
    oc.add_argument("config", metavar="CONFIG.py")
    oc.add_argument("--model", metavar="MODEL.py", help="an OpenCompass model config: its meta template and settings")
    oc.add_argument("--data", metavar="FILE", help="rows to map to cases: JSONL, CSV or a dataset folder on disk")
    oc.add_argument("--train", metavar="FILE", help="rows for in-context examples (JSONL or CSV)")
    oc.add_argument("--config-root", metavar="DIR",
                    help="the folder base configs must lie in (default: the nearest 'configs' "
                    "folder above the config, else its folder)")
    oc.add_argument("--out", required=True, metavar="DIR", help="a new or empty folder")
    oc.set_defaults(func=_opencompass)
    pf = kinds.add_parser("promptfoo", help="a promptfooconfig.yaml")
    pf.add_argument("config", metavar="CONFIG.yaml")
    pf.add_argument("--slice-key", metavar="KEY", help="the metadata key whose value is each case's slice")
    pf.add_argument("--out", required=True, metavar="DIR", help="a new or empty folder")
    pf.set_defaults(func=_promptfoo)
