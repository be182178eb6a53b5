"""OpenCompass/AISBench prompt templates, meta templates, retrievers, multi-turn and multimodal."""
