"""Models: a prompt in, a response out (the fake model, echo, OpenAI-compatible endpoints)."""

from pytest_promptsuite.models.base import Message
from pytest_promptsuite.models.base import Model
from pytest_promptsuite.models.base import ModelRequest
from pytest_promptsuite.models.base import Prompt
from pytest_promptsuite.models.base import Response
from pytest_promptsuite.models.base import SyncModel
from pytest_promptsuite.models.base import Usage
from pytest_promptsuite.models.fake import FakeModel


__all__ = ["FakeModel", "Message", "Model", "ModelRequest", "Prompt", "Response", "SyncModel", "Usage"]
