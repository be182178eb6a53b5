"""Template files and their renderers, the Jinja sandbox and its filters."""
