"""Whether a judge's verdicts gate: ``[judge] min_agreement`` against the ``calibration.json`` that
``promptsuite calibrate`` wrote for a judge of the same fingerprint."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.formats.jsonio import JsonError
from pytest_promptsuite.formats.jsonio import decode


def _figure(value: Any) -> str:
    return "none" if not isinstance(value, (int, float)) else f"{value:.2f}"


def read_calibration(path: Path, shown: str) -> dict[str, Any] | None:
    """Read a ``calibration.json`` (None when there is none); ConfigError naming the file for a bad one."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{shown}: cannot read the calibration ({exc})") from exc
    try:
        data = decode(text, strict=False)
    except JsonError as exc:
        raise ConfigError(f"{shown}: not a calibration written by promptsuite calibrate ({exc})") from exc
    if not (isinstance(data, dict) and isinstance(data.get("judge_fingerprint"), str)):
        raise ConfigError(f"{shown}: not a calibration written by promptsuite calibrate (no judge_fingerprint)")
    return data


@dataclass(frozen=True)
class JudgeGate:
    """``[judge] min_agreement`` and ``min_labels``, and the calibration they are held against (None: none
    was found at ``source``)."""

    min_agreement: float
    min_labels: int
    source: str
    calibration: Mapping[str, Any] | None = None

    def reason(self, rubric: str, fingerprint: str | None) -> str | None:
        """Say why a verdict of the judge ``fingerprint`` on ``rubric`` does not gate (None: it gates)."""
        if self.calibration is None:
            return f"the judge is not calibrated: no {self.source} (run promptsuite calibrate)"
        calibrated = self.calibration.get("judge_fingerprint")
        if calibrated != fingerprint:
            return (
                f"the judge changed since {self.source} was written (fingerprint {fingerprint}, calibrated "
                f"{calibrated}): run promptsuite calibrate again"
            )
        figures, which = self._figures(rubric)
        return self._short(figures, which)

    def _figures(self, rubric: str) -> tuple[Mapping[str, Any], str]:
        """Return the figures of ``rubric`` in the calibration, else the judge's overall ones."""
        assert self.calibration is not None
        for entry in self.calibration.get("rubrics") or ():
            if isinstance(entry, Mapping) and entry.get("rubric") == rubric:
                return entry, "its rubric's calibration"
        overall = self.calibration.get("overall")
        return (overall if isinstance(overall, Mapping) else {}), "the judge's calibration (this rubric has no labels)"

    def _short(self, figures: Mapping[str, Any], which: str) -> str | None:
        """Say what of ``figures`` falls short of the settings (None: nothing)."""
        count = figures.get("n")
        n = count if isinstance(count, int) else 0
        if n < self.min_labels:
            return f"{which} has {n} labels, fewer than min_labels = {self.min_labels}"
        low = figures.get("kappa_low")
        if isinstance(low, (int, float)) and low >= self.min_agreement:
            return None
        return (
            f"{which}: kappa {_figure(figures.get('kappa'))}, 95 % interval {_figure(low)} to "
            f"{_figure(figures.get('kappa_high'))}, whose lower end is below min_agreement = {self.min_agreement:g}"
        )
