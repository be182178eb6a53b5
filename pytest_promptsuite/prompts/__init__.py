"""How a case becomes the prompt that is sent (a string, or chat messages)."""
