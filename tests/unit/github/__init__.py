"""Stage tests of the GitHub steps against the loopback GitHub server."""
