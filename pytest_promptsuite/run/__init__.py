"""One run: the session that plans and aggregates, one case's pipeline, assembly through the hooks."""
