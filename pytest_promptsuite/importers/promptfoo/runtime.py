"""Forward the imports of suites written by earlier ``promptsuite import promptfoo`` runs to the runtime's home."""

from pytest_promptsuite.dialects.promptfoo.code_asserts import javascript as javascript
from pytest_promptsuite.dialects.promptfoo.code_asserts import not_carried as not_carried
from pytest_promptsuite.dialects.promptfoo.code_asserts import python_assert as python_assert
from pytest_promptsuite.dialects.promptfoo.code_asserts import transformed as transformed
from pytest_promptsuite.dialects.promptfoo.prompt_code import Transform as Transform
