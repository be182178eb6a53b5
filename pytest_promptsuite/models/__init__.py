"""Models: a prompt in, a response out (the fake model, echo, OpenAI-compatible endpoints)."""

from pytest_promptsuite.models.fake import FakeModel
from pytest_promptsuite.models.model_api import Model
from pytest_promptsuite.models.model_api import ModelRequest
from pytest_promptsuite.models.model_api import Response
from pytest_promptsuite.models.model_api import SyncModel
from pytest_promptsuite.models.model_api import Usage


__all__ = ["FakeModel", "Model", "ModelRequest", "Response", "SyncModel", "Usage"]
