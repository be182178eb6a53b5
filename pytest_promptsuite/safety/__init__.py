"""What keeps a run safe: the secret scrubber, time budgets and size limits."""
