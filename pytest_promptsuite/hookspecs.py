"""Hooks that third parties implement to extend pytest-promptsuite, in a ``conftest.py`` or a plugin.

The ``make_*`` hooks are ``firstresult``: return None for a name you do not handle, so the next plugin answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import pluggy


#: pytest's own marker (``pytest.hookspec``), made here so that ``promptsuite`` loads the specs without pytest.
hookspec = pluggy.HookspecMarker("pytest")
#: The entry point group of installed plugins (pytest and ``promptsuite`` load it; ``pytest11`` is pytest's only).
ENTRY_POINT_GROUP = "promptsuite.plugins"

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    import pytest

    from pytest_promptsuite.cases.prompt_case import PromptCase
    from pytest_promptsuite.checks.check_api import Check
    from pytest_promptsuite.checks.check_api import CheckScope
    from pytest_promptsuite.config.suite import ModelConfig
    from pytest_promptsuite.config.suite import SuiteConfig
    from pytest_promptsuite.config.suite import TemplateConfig
    from pytest_promptsuite.models.model_api import Model
    from pytest_promptsuite.models.model_api import Response
    from pytest_promptsuite.prompts.prompt_sources import PromptMakers
    from pytest_promptsuite.prompts.prompt_sources import PromptSource
    from pytest_promptsuite.results.case_result import CaseResult


@hookspec(firstresult=True)
def pytest_promptsuite_make_model(config: pytest.Config, spec: str, settings: ModelConfig, root: Path) -> Model | None:
    """Make the model for a spec string, or return None to let another plugin answer.

    Args:
        spec: the model spec, e.g. ``fake``, ``fake:rules.json``, ``openai:gpt-4o-mini``, or your own scheme.
        settings: the model's table of the suite config (``[model]`` or ``[models.NAME]``).
        root: the folder relative paths in the spec resolve against (the suite config's folder).

    Example, in ``conftest.py``::

        from pytest_promptsuite.models import Response

        class Shouting:
            spec = "shout"
            async def generate(self, request):
                return Response(text=str(request.prompt).upper())

        def pytest_promptsuite_make_model(config, spec, settings, root):
            if spec == "shout":
                return Shouting()

    .. versionadded:: 0.1
    """


@hookspec
def pytest_promptsuite_case_finished(item: pytest.Item, result: CaseResult) -> None:
    """Called after a case ran, with its result (for logging or a custom sink).

    Example, in ``conftest.py``::

        def pytest_promptsuite_case_finished(item, result):
            if result.outcome == "error":
                print("endpoint trouble:", result.case_id, result.error)

    .. versionadded:: 0.1
    """


@hookspec(firstresult=True)
def pytest_promptsuite_make_check(
    name: str, params: dict[str, Any], case: PromptCase | None, base_dir: Path, scope: CheckScope | None
) -> Check | None:
    """Make the check for one ``assert`` entry, or return None if ``name`` is not yours.

    Called once per entry when a case file is collected (and by ``promptsuite validate``). The ``not-``
    prefix, ``weight``, ``path`` and ``metric`` are handled for you. Raise
    :class:`~pytest_promptsuite.errors.CheckError` naming a bad field; the error gains the file, line and case.

    Args:
        name: the check type without ``not-``, e.g. ``contains`` for ``{"type": "not-contains", ...}``.
        params: the entry's other fields (``value``, ``threshold``...).
        case: the case the entry belongs to; None for a suite-level ``[[checks]]`` entry.
        base_dir: the folder relative files resolve against (the case file's, or the config's).
        scope: ``scope.file(...)`` resolves a file inside the suite's folder, ``scope.check_module(...)``
            refuses a module ``[checks] python_modules`` does not list; None when trusted code compiles checks.

    Example, in ``conftest.py``::

        from pytest_promptsuite.checks import Check, Layer, Verdict

        class IsUpper(Check):
            layer = Layer.CONTENT

            def evaluate(self, value, ctx):
                return Verdict(value.isupper(), "all upper case", repr(value[:20]))

        def pytest_promptsuite_make_check(name, params):
            if name == "is-upper":
                return IsUpper()

    .. versionadded:: 0.1
    """


@hookspec(firstresult=True)
def pytest_promptsuite_make_retriever(name: str, params: dict[str, Any]) -> Any | None:
    """Make the in-context example retriever ``[template] retriever = {type = NAME, ...}``, or return None.

    ``params`` holds the retriever table's other keys.

    Example, in ``conftest.py``::

        from pytest_promptsuite.dialects.opencompass.retrievers import Retriever

        class LastK(Retriever):
            def __init__(self, k=2, **kwargs):
                super().__init__(**kwargs)
                self.k = k

            def retrieve(self, train, tests, *, output_column=None):
                return [list(range(len(train)))[-self.k:] for _ in tests]

        def pytest_promptsuite_make_retriever(name, params):
            if name == "LastKRetriever":
                return LastK(**params)

    .. versionadded:: 0.1
    """


@hookspec(firstresult=True)
def pytest_promptsuite_make_renderer(name: str, params: dict[str, Any]) -> Any | None:
    """Make the template-file renderer ``[template] renderer = {type = NAME, ...}``, or return None.

    ``params`` holds the renderer table's other keys (built-ins: ``format``, ``delimiters``, ``jinja``,
    ``none``). A renderer with a ``with_filters(make_filter)`` method gets the suite's Jinja filter lookup.

    Example, in ``conftest.py``::

        import string

        class Dollar:
            def render(self, template, row):
                return string.Template(template).substitute(row)

        def pytest_promptsuite_make_renderer(name, params):
            if name == "dollar":
                return Dollar()

    .. versionadded:: 0.1
    """


@hookspec(firstresult=True)
def pytest_promptsuite_transform_output(output: str, case: PromptCase, response: Response | None) -> str | None:
    r"""Rewrite a model's output before the checks see it, or return None to leave it.

    ``results.jsonl`` keeps the raw output. ``response`` is None when checks run on a bare output.

    Example, in ``conftest.py`` (drop a reasoning model's thinking)::

        import re

        def pytest_promptsuite_transform_output(output):
            return re.sub(r"<think>.*?</think>\s*", "", output, flags=re.DOTALL)

    .. versionadded:: 0.1
    """


@hookspec(firstresult=True)
def pytest_promptsuite_make_jinja_filter(name: str) -> Callable[..., Any] | None:
    """Make the Jinja2 filter ``name`` of a task prompt (``prompts.yml``) or a ``jinja`` template, or return None.

    Asked once per filter name when the templates are loaded; yours wins over a built-in of the same name.
    Filters run inside the sandbox.

    Example, in ``conftest.py`` (``{{ history | shout }}``)::

        def pytest_promptsuite_make_jinja_filter(name):
            if name == "shout":
                return lambda value: str(value).upper()

    .. versionadded:: 0.1
    """


@hookspec(firstresult=True)
def pytest_promptsuite_make_output_parser(name: str, params: dict[str, Any]) -> Callable[[str], str] | None:
    """Make the output parser of a task prompt's ``output_parser: NAME`` (or ``{type: NAME, ...}``), or return None.

    The parser turns the model's output into the text the checks see; it raises
    :class:`~pytest_promptsuite.prompts.output_parsers.OutputParserError` when it cannot.

    Example, in ``conftest.py``::

        def pytest_promptsuite_make_output_parser(name, params):
            if name == "first_line":
                return lambda text: text.strip().splitlines()[0]

    .. versionadded:: 0.1
    """


@hookspec(firstresult=True)
def pytest_promptsuite_make_prompt_source(
    suite: SuiteConfig, table: TemplateConfig, variant: str | None, model: ModelConfig, makers: PromptMakers
) -> PromptSource | None:
    """Make what the cases of one ``[template]`` table send, or return None for a table that is not yours.

    Called once per variant (``variant`` None: ``[template]`` itself) when a suite is collected; ``table``
    is the table as the variant sees it, ``model`` the model it runs, ``makers`` the other ``make_*``
    hooks. The built-ins answer template files and task prompts; the dialects answer OpenCompass's
    infer_cfg tables (also a table with no template), NeMo's and promptfoo's. Raise
    :class:`~pytest_promptsuite.errors.ConfigError` naming the key for a table you cannot make.

    Example, in ``conftest.py`` (a template file ending ``.upper`` sends its text upper-cased)::

        from pytest_promptsuite.prompts.prompt_sources import PromptSource

        class Upper(PromptSource):
            def __init__(self, text):
                self.text = text

            def fields(self):
                return []

            def prompt(self, case):
                return self.text.upper()

        def pytest_promptsuite_make_prompt_source(suite, table):
            if (table.template_file or "").endswith(".upper"):
                path = suite.resolve(table.template_file, key="template.template_file")
                return Upper(path.read_text(encoding="utf-8"))

    .. versionadded:: 0.2
    """


@hookspec
def pytest_promptsuite_add_importer(importers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add a ``promptsuite import KIND`` command: a parser of ``importers`` whose ``run`` default takes the
    parsed arguments and returns the exit status (the dialects add ``opencompass`` and ``promptfoo``).

    Example, in a plugin of the ``promptsuite.plugins`` entry point group::

        def _run(args):
            print(f"would import {args.config} into {args.out}")
            return 0

        def pytest_promptsuite_add_importer(importers):
            command = importers.add_parser("mytool", help="a mytool config")
            command.add_argument("config")
            command.add_argument("--out", required=True)
            command.set_defaults(run=_run)

    .. versionadded:: 0.2
    """


@hookspec(firstresult=True)
def pytest_promptsuite_render_request(request: Any) -> dict[str, Any] | None:
    """Render one ``promptsuite render --request FILE.json`` request (the file's JSON value) into the
    object printed, or return None to let another plugin answer; raise
    :class:`~pytest_promptsuite.errors.TemplateError` for a request that does not render. OpenCompass's
    dialect answers the requests of the templates guide.

    .. versionadded:: 0.2
    """
