"""The old path of the promptfoo code asserts' runtime (see ``runtime``)."""
