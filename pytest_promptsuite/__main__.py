from __future__ import annotations

import sys

from pytest_promptsuite.cli.main import main


sys.exit(main())
