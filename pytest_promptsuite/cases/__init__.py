"""The cases stage: case files (JSONL) read strictly into ``PromptCase`` objects, and the case line's schema."""
