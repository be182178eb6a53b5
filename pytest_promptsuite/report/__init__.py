"""Stage 5b: the terminal, markdown, CSV and HTML views of a summary."""
