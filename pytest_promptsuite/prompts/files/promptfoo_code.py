"""Forward the imports of suites written by earlier ``promptsuite import promptfoo`` runs to promptfoo's dialect."""

from pytest_promptsuite.dialects.promptfoo.prompt_code import Transform as Transform
