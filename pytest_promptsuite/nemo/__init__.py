"""NeMo Guardrails semantics for task prompts, a default plugin: Colang events, NeMo config folders,
filters, output parsers and rendering."""
