"""Make a model from its spec string (``fake``, ``fake:RULES.json``, ``echo``, ``openai:NAME``)."""

from __future__ import annotations

from pathlib import Path

from pytest_promptsuite.config.suite import ModelConfig
from pytest_promptsuite.errors import ModelError
from pytest_promptsuite.models.echo import EchoModel
from pytest_promptsuite.models.fake import FakeModel
from pytest_promptsuite.models.model_api import Model


KNOWN_SCHEMES = ("fake", "fake:RULES.json", "echo", "openai:MODEL")


def make_model(spec: str, *, settings: ModelConfig | None = None, root: Path | None = None) -> Model:
    """Make the built-in model for ``spec``; relative rule files resolve against ``root``.

    ``settings`` (base URL, params, timeouts) matter to endpoint models only.
    """
    if spec == "fake":
        return FakeModel()
    if spec == "echo":
        return EchoModel()
    if spec.startswith("fake:"):
        rules = Path(spec[len("fake:") :])
        if root is not None and not rules.is_absolute():
            rules = root / rules
        return FakeModel.from_rules_file(rules, spec=spec)
    if spec.startswith("openai:"):
        from pytest_promptsuite.models.openai import openai_model  # httpx is imported only when an endpoint is used

        config = settings or ModelConfig(spec=spec)
        keys = ("base_url", "api_key_env", "endpoint", "timeout_s", "max_retries", "params")
        return openai_model(spec[len("openai:") :], **{key: getattr(config, key) for key in keys})
    known = ", ".join(KNOWN_SCHEMES)
    raise ModelError(f"unknown model spec {spec!r} (known: {known}, or a model named in the suite config)")
