"""Stage 2: a case into the prompt that is sent (a string, or chat messages)."""
