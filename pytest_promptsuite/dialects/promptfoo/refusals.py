"""The promptfoo features ``promptsuite import promptfoo`` refuses (it exits 2 with one line naming the feature and
where the config writes it), and how each is recognised where it is read."""

from __future__ import annotations

from pytest_promptsuite.errors import ConfigError


class Refused(ConfigError):
    """A promptfoo feature the import does not carry over: the import writes nothing and exits 2."""


def refuse(where: str, feature: str, advice: str) -> Refused:
    """Make the refusal of ``feature`` at ``where`` (``path:line``), one line ending with what to do instead."""
    return Refused(f"{where}: {feature} is not imported: {advice}")


#: Test sources promptfoo fetches from a service, by how they are written.
_REMOTE_TESTS = {
    "huggingface://": "a Hugging Face dataset (tests: huggingface://...)",
    "az://": "an Azure Blob test file (tests: az://...)",
    "https://docs.google.com/spreadsheets/": "a Google Sheet (tests: https://docs.google.com/spreadsheets/...)",
}


def refuse_remote_tests(written: str, where: str) -> None:
    """Refuse a ``tests`` entry promptfoo reads from a service or a spreadsheet file."""
    for prefix, feature in _REMOTE_TESTS.items():
        if written.startswith(prefix):
            raise refuse(where, feature, "export its rows to a CSV or JSONL file and name that file")
    if written.split("#")[0].endswith((".xlsx", ".xls")):
        raise refuse(where, f"an Excel test file ({written})", "save it as CSV and name that file")


#: Prompts promptfoo fetches or runs, by how they start.
_REMOTE_PROMPTS = {
    "exec:": "an executable prompt (exec:...)",
    "portkey://": "a Portkey prompt (portkey://...)",
    "langfuse://": "a Langfuse prompt (langfuse://...)",
    "helicone://": "a Helicone prompt (helicone://...)",
}
#: Prompt files promptfoo runs as programs.
_EXECUTABLES = (".sh", ".bash", ".exe", ".bat", ".cmd", ".ps1", ".rb", ".pl", ".go")


def refuse_remote_prompt(item: str, where: str) -> None:
    """Refuse a prompt promptfoo fetches from a prompt service or runs as a program."""
    for prefix, feature in _REMOTE_PROMPTS.items():
        if item.startswith(prefix):
            raise refuse(where, feature, "write the prompt's text into a file and name it with file://")
    path = item.removeprefix("file://").split(":")[0]
    if item.startswith("file://") and path.endswith(_EXECUTABLES):
        raise refuse(where, f"a prompt made by a program ({item})", "write it as a .js or .py prompt function")


#: Var files promptfoo turns into something other than text.
_MEDIA = (".pdf", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".svg", ".tif", ".tiff", ".ico", ".avif")
_MEDIA_MORE = (".heic", ".heif", ".mp3", ".wav", ".m4a", ".ogg", ".flac", ".mp4", ".webm", ".mov")


def refuse_media_var(relative: str, key: str, where: str) -> None:
    """Refuse a var promptfoo reads from a PDF (its text), an image, a sound or a video (base64)."""
    if relative.lower().endswith((*_MEDIA, *_MEDIA_MORE)):
        raise refuse(
            where,
            f"the var {key} from file://{relative} (promptfoo sends a PDF's text, media as base64)",
            "put the text the prompt needs into a .txt file",
        )
