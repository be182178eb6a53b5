"""The compatibility layers, one folder each (promptfoo, OpenCompass, NeMo Guardrails): each a plugin of our
hooks, registered as a third party's would be; the core imports none of them."""
