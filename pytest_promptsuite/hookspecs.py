"""Hooks that third parties implement to extend pytest-promptsuite.

Implement them in a ``conftest.py``, or in an installed package that names its plugin module in
the ``promptsuite.plugins`` entry point group (pytest and the ``promptsuite`` command both load
it; a ``pytest11`` entry point works under pytest only)::

    [project.entry-points."promptsuite.plugins"]
    my_checks = "my_package.promptsuite_plugin"

Every hook is prefixed ``pytest_promptsuite_``. The built-in implementations use the same hooks,
marked ``trylast`` so that yours win. The ``make_*`` hooks are ``firstresult``: return None for
a name you do not handle, so the next plugin (or the built-in) answers. Hooks called outside
pytest (by ``promptsuite validate``) take no ``config``; keep them free of pytest state.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import pluggy


#: pytest's own marker (``pytest.hookspec`` is this object), made here so that the ``promptsuite``
#: command can load these specs without importing pytest.
hookspec = pluggy.HookspecMarker("pytest")
#: The entry point group of installed plugins, loaded by pytest and by ``promptsuite``.
ENTRY_POINT_GROUP = "promptsuite.plugins"

if TYPE_CHECKING:
    from collections.abc import Callable

    import pytest

    from pytest_promptsuite.cases.case import PromptCase
    from pytest_promptsuite.checks.base import Check
    from pytest_promptsuite.checks.base import CheckScope
    from pytest_promptsuite.config.suite import ModelConfig
    from pytest_promptsuite.models.base import Model
    from pytest_promptsuite.models.base import Response
    from pytest_promptsuite.results.row import CaseResult


@hookspec(firstresult=True)
def pytest_promptsuite_make_model(
    config: pytest.Config, spec: str, settings: ModelConfig, root: Path
) -> Model | None:
    """Make the model for a spec string, or return None to let another plugin answer.

    Args:
        config: the pytest config.
        spec: the model spec, e.g. ``fake``, ``fake:rules.json``, ``openai:gpt-4o-mini``, or
            your own scheme.
        settings: the model's table of the suite config (``[model]`` or ``[models.NAME]``):
            base URL, params, timeouts.
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

    Called when a case file is collected (and by ``promptsuite validate``), once per entry. The
    ``not-`` prefix, ``weight``, ``path`` and ``metric`` are handled for you: ``name`` comes
    without ``not-`` and ``params`` holds the other fields (``value``, ``threshold``...). Raise
    :class:`~pytest_promptsuite.errors.CheckError` naming a bad field; the collection error adds
    the file, line, case and entry.

    Args:
        name: the check type, e.g. ``contains`` for ``{"type": "not-contains", ...}``.
        params: the entry's other fields.
        case: the case the entry belongs to; None for a suite-level ``[[checks]]`` entry.
        base_dir: the folder relative files resolve against (the case file's, or the config's).
        scope: where the entry's files and code may come from: ``scope.file(value, base_dir,
            field=..., name=...)`` resolves a file inside the suite's folder (or raises), and
            ``scope.check_module(module, ...)`` refuses a module the config's
            ``[checks] python_modules`` does not list. None when trusted code compiles checks.

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
    """Make the in-context example retriever ``[template] retriever = {type = NAME, ...}``, or
    return None if ``name`` is not yours.

    Args:
        name: the retriever's ``type``.
        params: the retriever table's other keys.

    Example, in ``conftest.py``::

        from pytest_promptsuite.prompts.opencompass.retrievers import Retriever

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
    """Make the template-file renderer ``[template] renderer = {type = NAME, ...}``, or return
    None if ``name`` is not yours.

    Args:
        name: the renderer's ``type`` (built-ins: ``format``, ``delimiters``, ``jinja``, ``none``).
        params: the renderer table's other keys.

    A renderer that runs Jinja templates gets the suite's filter lookup (which asks
    :func:`pytest_promptsuite_make_jinja_filter`) through its ``with_filters(make_filter)``
    method, if it has one: the built-in ``jinja`` renderer does.

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
def pytest_promptsuite_transform_output(
    output: str, case: PromptCase, response: Response | None
) -> str | None:
    r"""Rewrite a model's output before the checks see it, or return None to leave it.

    The first plugin that returns a string wins. ``results.jsonl`` keeps the raw output; only
    the checks see the rewritten one.

    Args:
        output: the model's reply text.
        case: the case it answers.
        response: the whole response (finish reason, usage), None when checks run on a bare output.

    Example, in ``conftest.py`` (drop a reasoning model's thinking)::

        import re

        def pytest_promptsuite_transform_output(output):
            return re.sub(r"<think>.*?</think>\s*", "", output, flags=re.DOTALL)

    .. versionadded:: 0.1
    """


@hookspec(firstresult=True)
def pytest_promptsuite_make_jinja_filter(name: str) -> Callable[..., Any] | None:
    """Make the Jinja2 filter ``name`` used in a task prompt (``prompts.yml``) or a ``jinja``
    template, or return None if it is not yours.

    Asked once per filter name a template uses, when the templates are loaded; yours wins over
    a built-in of the same name (``first_turns``, ``last_turns``, ``user_assistant_sequence``,
    ``to_messages``, ``indent``, and Jinja's own). Filters run inside the sandbox.

    Example, in ``conftest.py`` (``{{ history | shout }}``)::

        def pytest_promptsuite_make_jinja_filter(name):
            if name == "shout":
                return lambda value: str(value).upper()

    .. versionadded:: 0.1
    """


@hookspec(firstresult=True)
def pytest_promptsuite_make_output_parser(
    name: str, params: dict[str, Any]
) -> Callable[[str], str] | None:
    """Make the output parser of a task prompt's ``output_parser: NAME`` (or
    ``{type: NAME, ...params}``), or return None if ``name`` is not yours.

    The parser turns the model's output into the text the checks see; raise
    :class:`~pytest_promptsuite.prompts.output_parsers.OutputParserError` when it cannot.
    Built-ins: ``strip_prefix`` (``prefix``), ``json``, ``user_intent``, ``bot_intent``,
    ``bot_message``.

    Example, in ``conftest.py``::

        def pytest_promptsuite_make_output_parser(name, params):
            if name == "first_line":
                return lambda text: text.strip().splitlines()[0]

    .. versionadded:: 0.1
    """
