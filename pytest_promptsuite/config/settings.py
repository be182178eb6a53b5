"""Every default of a run, and the one place precedence is decided."""

from __future__ import annotations


#: Model calls in flight at once when neither ``--prompt-concurrency`` nor ``[model] concurrency`` says.
DEFAULT_CONCURRENCY = 8
