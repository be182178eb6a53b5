"""Run the ``promptsuite`` command as ``python -m pytest_promptsuite``."""

from __future__ import annotations

import sys

from pytest_promptsuite.cli.main import main


sys.exit(main())
