"""Reading and writing the files of a suite and a run, bounded: JSON and JSON Lines
(:mod:`.jsonio`), TOML (:mod:`.tomlio`), YAML (:mod:`.yamlio`), and the limits they enforce
(:mod:`.limits`). Every loader of the package (and of later importers) goes through these, so
each limit and each error has one home."""
