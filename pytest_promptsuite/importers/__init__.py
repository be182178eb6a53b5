"""Importers: OpenCompass and promptfoo configs into suites (``promptsuite import``)."""
