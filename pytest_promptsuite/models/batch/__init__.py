"""Batch mode: the run's calls as an OpenAI Batch job, a request file or a results file."""
