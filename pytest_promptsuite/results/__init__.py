"""Stage 5a: case results into per-slice pass rates, confidence intervals, baseline diffs and gates."""
