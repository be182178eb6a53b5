"""The report stage: the terminal, Markdown, CSV and HTML views of a summary."""
