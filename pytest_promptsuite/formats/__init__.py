"""Reading and writing the files of a suite and a run, bounded: JSON Lines, TOML, YAML, CSV."""
