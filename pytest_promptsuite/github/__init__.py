"""Pull requests on GitHub: the REST client, the sticky comment, the baseline artifact and the job's context."""
