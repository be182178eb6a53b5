"""Where each slice's threshold and the allowed regression come from, and how a drop against a
baseline is judged (:class:`GateSettings`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Literal


__all__ = ["CORRECTIONS", "REGRESSION_RULES", "GateSettings", "ThresholdPolicy"]

#: ``[gate] regression``: ``auto`` is ``delta`` when both runs are deterministic, else ``paired``.
REGRESSION_RULES = ("auto", "paired", "delta")
#: ``[gate] correction``: over every compared (slice, variant) of the run, or none.
CORRECTIONS = ("holm", "none")


@dataclass(frozen=True)
class GateSettings:
    """How a drop against a baseline (or the first variant) is judged: the paired test's level
    ``alpha``, the ``correction`` over every comparison of the run, the ``regression`` rule, and
    whether each later prompt variant is gated against the first (``compare_variants``)."""

    alpha: float = 0.05
    correction: Literal["holm", "none"] = "holm"
    regression: Literal["auto", "paired", "delta"] = "auto"
    compare_variants: bool = False

    def rule_for(self, deterministic: bool) -> Literal["paired", "delta"]:
        """The rule a comparison is judged by: ``regression``, with ``auto`` resolved by whether
        both runs compared are ``deterministic``."""
        if self.regression == "auto":
            return "delta" if deterministic else "paired"
        return self.regression

    def to_dict(self) -> dict[str, Any]:
        """The settings in force, as ``summary.json`` records them for ``diff`` and ``merge``."""
        return {
            "alpha": self.alpha, "correction": self.correction, "regression": self.regression,
            "compare_variants": self.compare_variants,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GateSettings:
        """The settings a ``summary.json`` recorded (the defaults where it has none)."""
        alpha = data.get("alpha", 0.05)
        correction = data.get("correction", "holm")
        regression = data.get("regression", "auto")
        return cls(
            alpha=float(alpha) if isinstance(alpha, (int, float)) and 0 < alpha < 1 else 0.05,
            correction="none" if correction == "none" else "holm",
            regression=regression if regression in ("paired", "delta") else "auto",
            compare_variants=data.get("compare_variants") is True,
        )


@dataclass(frozen=True)
class ThresholdPolicy:
    """Where each slice's threshold and the allowed regression come from, most specific first.

    Thresholds: ``slices`` (the config's ``[thresholds.slices]``) beats an explicit
    ``--prompt-min-pass-rate`` (``option``), which beats the config's ``[thresholds] default``,
    which beats 1.0. The allowed regression: an explicit ``--prompt-max-regression`` beats the
    config's ``[thresholds] max_regression``, which beats 0.0.
    """

    slices: Mapping[str, float] = field(default_factory=dict)
    option: float | None = None
    config_default: float | None = None
    builtin: float = 1.0
    max_regression_option: float | None = None
    max_regression_config: float | None = None

    def threshold(self, slice_name: str) -> tuple[float, str]:
        """The threshold of ``slice_name`` and where it came from."""
        if slice_name in self.slices:
            return self.slices[slice_name], "config slice"
        if self.option is not None:
            return self.option, "option"
        if self.config_default is not None:
            return self.config_default, "config default"
        return self.builtin, "default"

    def max_regression(self) -> tuple[float, str]:
        """The largest allowed drop of a slice's pass rate and where it came from."""
        if self.max_regression_option is not None:
            return self.max_regression_option, "option"
        if self.max_regression_config is not None:
            return self.max_regression_config, "config"
        return 0.0, "default"

    def to_dict(self) -> dict[str, Any]:
        """The policy as ``summary.json`` records it, so ``diff`` and ``merge`` can reuse it."""
        return {
            "slices": dict(self.slices),
            "option": self.option,
            "config_default": self.config_default,
            "builtin": self.builtin,
            "max_regression_option": self.max_regression_option,
            "max_regression_config": self.max_regression_config,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ThresholdPolicy:
        """The policy a ``summary.json`` recorded (missing keys take their defaults)."""
        return cls(
            slices=dict(data.get("slices") or {}),
            option=data.get("option"),
            config_default=data.get("config_default"),
            builtin=data.get("builtin", 1.0),
            max_regression_option=data.get("max_regression_option"),
            max_regression_config=data.get("max_regression_config"),
        )
