"""Parts a config names as ``NAME`` or ``{type = NAME, ...params}`` (renderers, output parsers)."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import did_you_mean


def split_spec(spec: Any, *, key: str) -> tuple[str, dict[str, Any]]:
    """Split ``NAME`` or ``{type: NAME, ...params}`` into (name, params)."""
    if isinstance(spec, str):
        return spec, {}
    if isinstance(spec, Mapping) and isinstance(spec.get("type"), str):
        return spec["type"], {k: v for k, v in spec.items() if k != "type"}
    raise ConfigError(f"{key} must be a name or {{type: NAME, ...}}, got {spec!r}")


def unknown_part(kind: str, name: str, builtins: Sequence[str], hook: str) -> ConfigError:
    """Make the error for a part no lookup made: the nearest built-in, every built-in, the hook."""
    return ConfigError(
        f"unknown {kind} {name!r}"
        + did_you_mean(name, [b for b in builtins if b != name])
        + f"; built-in: {', '.join(builtins)}, or add one with the {hook} hook"
    )


def check_params(kind: str, name: str, params: Mapping[str, Any], allowed: Sequence[str]) -> None:
    """Refuse a key of ``params`` that the built-in part does not take, listing the ones it does."""
    unknown = [k for k in params if k not in allowed]
    if unknown:
        raise ConfigError(
            f"{kind} {name!r}: unknown key {unknown[0]!r}"
            + (f" (keys: {', '.join(allowed)})" if allowed else " (it takes none)")
        )
