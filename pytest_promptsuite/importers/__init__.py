"""The old home of the importers, kept so that suites written by earlier ``promptsuite import`` runs still run."""
