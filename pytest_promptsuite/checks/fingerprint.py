"""The judge's fingerprint: one hash of what decides its verdicts (model, the name the endpoint serves, params,
the rubric prompt template, the reply parser), recorded in rows, the summary, calibrations and cache keys."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any

from pytest_promptsuite.checks.outcome import CheckResult
from pytest_promptsuite.formats.jsonio import encode


#: The reply parser's name and version: bumped when :func:`~.metric.parse_judge_reply` reads replies otherwise.
PARSER = "first-json-object-with-boolean-pass/1"
#: Hex digits of the SHA-256 a fingerprint keeps.
LENGTH = 16


def judge_fingerprint(
    identity: Mapping[str, Any], params: Mapping[str, Any], template: str, *, served: str | None = None, repeat: int = 1
) -> str:
    """Return the fingerprint of a judge: ``identity`` (its spec, base URL, endpoint), the ``served`` model
    name its endpoint reports, ``params``, the rubric prompt ``template``, :data:`PARSER` and, when it is asked
    more than once, ``repeat`` (the majority of three asks is another judge than one ask)."""
    parts: dict[str, Any] = {
        "identity": dict(identity),
        "served": served,
        "params": dict(params),
        "template": template,
        "parser": PARSER,
    }
    if repeat != 1:
        parts["repeat"] = repeat
    text = encode(parts, sort_keys=True, compact=True, scrub=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:LENGTH]


def fingerprint_of(checks: Iterable[CheckResult]) -> str | None:
    """Return the fingerprint of the judge that decided one of ``checks`` (None: no judge decided any)."""
    for check in checks:
        found = check.details.get("judge_fingerprint") if check.details else None
        if isinstance(found, str):
            return found
    return None
