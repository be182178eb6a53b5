"""The limits on the work a suite's files and a model's answers can ask for; each error names its limit."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limit:
    """One named limit: ``str(limit)`` is how an error names it."""

    name: str
    value: int | float
    unit: str

    def __str__(self) -> str:
        return f"the {self.name} limit of {self.value:,} {self.unit}"


#: How deep arrays and objects may nest in a JSON, TOML or YAML document we read, and in JSON
#: that a check or an output parser reads from a model's answer. Deeper input makes Python's
#: parsers, jsonschema and our own walks run out of stack.
DEPTH = Limit("depth", 64, "levels")
#: How many nodes a YAML document may expand to once its aliases are followed (a 585-byte
#: "billion laughs" file expands to 10**9).
YAML_NODES = Limit("YAML alias expansion", 100_000, "nodes")
#: How long one regular expression of a suite (a ``regex`` check, a fake-model rule, an
#: ``is-refusal`` pattern) may run on one text.
REGEX_SECONDS = Limit("regex time", 2, "seconds")
#: How long looking for JSON values in one answer may take (``contains-json``, the ``json``
#: output parser, a judge's verdict).
JSON_SEARCH_SECONDS = Limit("JSON search time", 2, "seconds")
#: How long one template may take to render one prompt.
RENDER_SECONDS = Limit("template time", 5, "seconds")
#: How many characters a template may produce, and the largest string or list it may build.
TEMPLATE_OUTPUT = Limit("template output", 1_000_000, "characters")
#: The most numbers a template's ``range()`` may give.
TEMPLATE_RANGE = Limit("template range", 10_000, "numbers")
#: The most decimal digits a number computed in a template may have.
TEMPLATE_INT_DIGITS = Limit("template number", 1_000, "digits")
#: The largest response body an endpoint may send for one call.
RESPONSE_BYTES = Limit("response size", 32 * 1024 * 1024, "bytes")
#: How many times one call refused with 429 under ``concurrency = "auto"`` is retried outside ``max_retries``
#: (besides the 60 s those retries may wait in all): past either, a 429 counts as any other retry.
RATE_LIMITED_RETRIES = Limit("429 retry", 50, "retries")
#: The largest token count an endpoint's ``usage`` may report for one call; a larger one (or one that is not a
#: non-negative integer) is taken as not reported, never priced nor credited to a budget.
USAGE_TOKENS = Limit("token count", 1_000_000_000, "tokens")
#: How many tools one answer may call. An answer of ~400 KB can hold 5,000 calls, each answered with the case's
#: tool result in the next request: past the limit the case ends as ``error`` and no next request is made.
TOOL_CALLS = Limit("tool calls per answer", 128, "calls")
#: The largest request a tool loop may build (the conversation, the calls and their results, as JSON).
TOOL_REQUEST = Limit("tool loop request", 8_000_000, "characters")
#: The largest output or error file of a Batch job we download (decoded): 50,000 answers of ~20 KB.
BATCH_FILE_BYTES = Limit("batch file size", 1024 * 1024 * 1024, "bytes")
#: How long running one imported Python config (OpenCompass) may take, its base configs included.
CONFIG_SECONDS = Limit("config evaluation time", 10, "seconds")
#: The address space the process that runs an imported config may use.
CONFIG_MEMORY = Limit("config memory", 1024 * 1024 * 1024, "bytes")
#: The largest answer (the config's names as JSON) that process may send.
CONFIG_RESULT = Limit("config result size", 16 * 1024 * 1024, "bytes")
#: How many cases a promptfoo import may write: its tests with their array vars expanded (8 vars
#: of 10 values are 10**8 cases). A real config has thousands; promptfoo holds them all in memory.
IMPORT_CASES = Limit("imported case count", 100_000, "cases")
#: The largest ``cases.jsonl`` a promptfoo import may write (its vars repeated in every expansion).
IMPORT_CASES_BYTES = Limit("imported cases size", 128 * 1024 * 1024, "bytes")
#: How many placeholder in-context examples an OpenCompass import may write when no ``--train`` is
#: given (``ice_num`` and ``fix_id_list`` ask for them); a real few-shot config asks for at most 100s.
IMPORT_EXAMPLES = Limit("placeholder example count", 10_000, "rows")
#: The largest field of a CSV file we read (a promptfoo test file, data rows).
CSV_FIELD = Limit("CSV field size", 1_000_000, "characters")
#: The largest baseline report artifact (its zip) the GitHub action downloads, and what it may unpack to.
ARTIFACT_BYTES = Limit("baseline artifact size", 1024 * 1024 * 1024, "bytes")
ARTIFACT_UNPACKED = Limit("unpacked baseline size", 4 * 1024 * 1024 * 1024, "bytes")
