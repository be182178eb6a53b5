"""Gate decisions in words: the sentence each kind of failure is reported with, everywhere."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_promptsuite.cases.prompt_case import CaseKey
from pytest_promptsuite.results.gate import CasesErrored
from pytest_promptsuite.results.gate import GateDecision
from pytest_promptsuite.results.gate import NoCommonCases
from pytest_promptsuite.results.gate import RunIncomplete
from pytest_promptsuite.results.gate import SettledRegression
from pytest_promptsuite.results.gate import SliceBelowThreshold
from pytest_promptsuite.results.gate import SliceRegressed
from pytest_promptsuite.results.gate import UsageIncreased


#: Ids named in a sentence before "and N more".
MAX_IDS = 5


def reason(decision: GateDecision) -> str:
    """Say why ``decision`` failed the gate, with the figures that decided it."""
    if isinstance(decision, SliceBelowThreshold):
        return _below_threshold(decision)
    if isinstance(decision, SliceRegressed):
        return _regressed(decision)
    if isinstance(decision, NoCommonCases):
        return _no_common_cases(decision)
    if isinstance(decision, RunIncomplete):
        return _incomplete(decision)
    if isinstance(decision, UsageIncreased):
        return _usage_increased(decision)
    if isinstance(decision, SettledRegression):
        return _settled(decision)
    return _errored(decision)


def points(fraction: float) -> str:
    """Write a difference of pass rates in percentage points."""
    return f"{fraction * 100:.1f} points"


def plural(n: int, word: str) -> str:
    """Write ``n`` and ``word``, with an ``s`` unless ``n`` is 1."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def model_change(models: tuple[str, str]) -> str:
    """Say that the other side used another model than this run (``models``: theirs, ours)."""
    return f"used model {models[0]}, this run {models[1]}: a model change, not only a prompt change"


def _where(slice_name: str, variant: str | None) -> str:
    return f"slice {slice_name!r}" + ("" if variant is None else f" [variant {variant}]")


def _below_threshold(d: SliceBelowThreshold) -> str:
    return (
        f"{_where(d.slice, d.variant)}: pass rate {d.pass_rate:.1%} ({d.passed}/{d.counted}) "
        f"is below its threshold {d.rule.threshold:.1%} ({d.rule.source})"
    )


def _regressed(d: SliceRegressed) -> str:
    which = f"; regressions: {_ids(d.regressions)}" if d.regressions else ""
    test = ""
    if d.rule.kind == "paired" and d.p_regression is not None:
        corrected = ""
        if d.p_adjusted is not None and d.family > 1:
            corrected = f", {d.p_adjusted:.3g} after Holm's correction over {d.family} comparisons"
        test = f", and it is significant (one-sided exact p = {d.p_regression:.3g}{corrected}; alpha {d.rule.alpha:g})"
    models = "" if d.models is None else f"; the {d.against} {model_change(d.models)}"
    over = "" if d.paired_cases is None else f" over the {plural(d.paired_cases, 'case')} in both runs"
    return (
        f"{_where(d.slice, d.variant)}: pass rate dropped {points(d.drop)} against the {d.against}{over} "
        f"({d.baseline_pass_rate:.1%} -> {d.pass_rate:.1%}), more than the allowed "
        f"{points(d.rule.max_drop)} ({d.rule.source}){test}; McNemar p = {d.p_value:.3g}{which}{models}"
    )


def _no_common_cases(d: NoCommonCases) -> str:
    return (
        f"no case in common with the {d.against} ({d.source}): nothing could be compared; check that "
        "both runs have the same case ids (and --prompt-baseline-variant for a baseline of another variant)"
    )


def _errored(d: CasesErrored) -> str:
    errored, passed = d.by_case()
    named = _case_names([*errored, *passed])
    said = [_erred_cases(errored, named)] if errored else []
    if passed:
        runs = sum(len(r) for r in passed.values())
        said.append(
            f"{plural(len(passed), 'case')} passed under [gate] case_pass although {plural(runs, 'run')} ended "
            f"in an error: {_ids(_with_repeats(passed, named))}"
        )
    return "; ".join(said) + "; errors always fail the run"


def _erred_cases(errored: dict[CaseKey, list[int]], named: dict[CaseKey, str]) -> str:
    runs = sum(len(r) for r in errored.values())
    over = f" in {plural(runs, 'run')}" if runs > len(errored) else ""
    return (
        f"{plural(len(errored), 'case')} ended in an error{over} (the model call or the rendering failed): "
        f"{_ids(_with_repeats(errored, named))}"
    )


def _case_names(cases: Sequence[CaseKey]) -> dict[CaseKey, str]:
    """Name each case by its id, and by its id and variant where one id errs in more than one variant."""
    ids = [key.case_id for key in cases]
    return {key: key.name(with_repeat=False) if ids.count(key.case_id) > 1 else key.case_id for key in cases}


def _with_repeats(cases: dict[CaseKey, list[int]], named: dict[CaseKey, str]) -> list[str]:
    """Name each case once, with the repeats that erred where more than one did."""
    return [
        named[key] if len(repeats) == 1 else f"{named[key]} (repeats {', '.join(map(str, repeats))})"
        for key, repeats in cases.items()
    ]


def _incomplete(d: RunIncomplete) -> str:
    if not d.ran:
        return f"the run stopped ({d.why}) and no case finished: nothing to judge; a partial run never passes the gate"
    return (
        f"the run stopped before every case ran ({d.why}): {d.ran} of {d.ran + d.not_run} cases ran; "
        "a partial run never passes the gate"
    )


def _usage_increased(d: UsageIncreased) -> str:
    where = "in total" if d.scope == "total" and d.variant is None else _where(d.scope, d.variant)
    if d.measure == "tokens":
        figures, key = f"{d.baseline:,.1f} -> {d.current:,.1f} tokens", "max_tokens_increase"
    else:
        figures, key = f"${d.baseline:.6f} -> ${d.current:.6f}", "max_cost_increase"
    rise = d.increase
    by = "" if rise is None else f" by {rise:.0%}"
    return (
        f"{where}: {d.measure} per case rose{by} against the baseline ({figures} per case), more than "
        f"[gate] {key} = {d.limit:g} allows"
    )


def _settled(d: SettledRegression) -> str:
    if d.exact:
        return (
            f"{_where(d.slice, d.variant)}: regressed against the {d.against}, settled once certain after "
            f"{d.cases} of {d.planned} paired cases: whatever the cases left would do, the drop over all of "
            f"them exceeds the allowed {points(d.max_drop)} (the drop alone decides: deterministic runs)"
        )
    holm = f" after Holm's correction over {d.family} comparisons" if d.family > 1 else ""
    return (
        f"{_where(d.slice, d.variant)}: regressed against the {d.against}, settled by the sequential test after "
        f"{d.cases} of {d.planned} paired cases (pass rate dropped {points(d.drop)}; always-valid "
        f"p = {d.p_sequential:.3g}{holm}, at most {d.alpha:g}: the sequential share of alpha)"
    )


def _ids(ids: Sequence[str], limit: int = MAX_IDS) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")
