"""Where each slice's threshold and the allowed regression come from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any


__all__ = ["ThresholdPolicy"]


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
