"""The run's settings: the ``--prompt-*`` options, the suite config and its schema, and where suites are."""
