"""The ``promptsuite`` command."""
