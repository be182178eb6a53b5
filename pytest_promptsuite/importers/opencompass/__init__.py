"""OpenCompass dataset and model configs into suites."""
