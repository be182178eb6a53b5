"""Stage 1: case files (JSONL) into ``PromptCase`` objects, strictly."""
