"""NeMo Guardrails semantics for task prompts: Colang, filters, output parsers, selection, rendering."""
