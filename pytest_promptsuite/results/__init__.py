"""Stage 5a: case results into per-slice pass rates, confidence intervals, baseline diffs and gates.

One module per concept: ``stats`` (Wilson, McNemar), ``policy`` (thresholds), ``records`` (the
summary's rows around one :class:`Counts` type), ``io`` (reading result sets), ``frames`` (outcome
aggregation), ``compare`` (pairing rows by case key), ``gate`` (gate decisions as data) and
``summary`` (:func:`summarize`). The prose of a gate decision belongs to ``report``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports


if TYPE_CHECKING:
    from .compare import Comparison
    from .gate import CasesErrored
    from .gate import GateDecision
    from .gate import GateResult
    from .gate import NoCommonCases
    from .gate import RegressionRule
    from .gate import RunIncomplete
    from .gate import SliceBelowThreshold
    from .gate import SliceRegressed
    from .gate import ThresholdRule
    from .io import StoredResults
    from .io import load_results
    from .io import load_summary_json
    from .io import stream_results
    from .policy import GateSettings
    from .policy import ThresholdPolicy
    from .records import BaselineDiff
    from .records import Counts
    from .records import Flip
    from .records import GroupStats
    from .records import RegressionTest
    from .records import RepeatStats
    from .records import RunInfo
    from .records import SliceFlips
    from .records import SliceStats
    from .records import VariantComparison
    from .records import VariantSlice
    from .stats import mcnemar_p
    from .stats import wilson_interval
    from .summary import Baseline
    from .summary import Summary
    from .summary import summarize

__getattr__, __dir__ = lazy_exports(__name__, __file__)


__all__ = [
    "Baseline",
    "BaselineDiff",
    "CasesErrored",
    "Comparison",
    "Counts",
    "Flip",
    "GateDecision",
    "GateResult",
    "GateSettings",
    "GroupStats",
    "NoCommonCases",
    "RegressionRule",
    "RegressionTest",
    "RepeatStats",
    "RunIncomplete",
    "RunInfo",
    "SliceBelowThreshold",
    "SliceFlips",
    "SliceRegressed",
    "SliceStats",
    "StoredResults",
    "Summary",
    "ThresholdPolicy",
    "ThresholdRule",
    "VariantComparison",
    "VariantSlice",
    "load_results",
    "load_summary_json",
    "stream_results",
    "mcnemar_p",
    "summarize",
    "wilson_interval",
]
