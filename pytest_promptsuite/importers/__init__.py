"""Importers: an OpenCompass dataset config or a promptfoo config into a suite that runs as it is."""
