"""Pluggable parts named in a config (renderers, output parsers): how they are written and the
errors about them.

A part is written ``NAME`` or ``{type = NAME, ...params}``. One lookup, ``make(name, params)``
(a plugin hook, whose built-in implementation answers our names), makes it; a name is unknown only
when that lookup returns None.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from pytest_promptsuite.errors import ConfigError
from pytest_promptsuite.errors import did_you_mean


__all__ = ["check_params", "split_spec", "unknown_part"]


def split_spec(spec: Any, *, key: str) -> tuple[str, dict[str, Any]]:
    """A pluggable part named as ``NAME`` or ``{type: NAME, ...params}``: (name, params)."""
    if isinstance(spec, str):
        return spec, {}
    if isinstance(spec, Mapping) and isinstance(spec.get("type"), str):
        return spec["type"], {k: v for k, v in spec.items() if k != "type"}
    raise ConfigError(f"{key} must be a name or {{type: NAME, ...}}, got {spec!r}")


def unknown_part(kind: str, name: str, builtins: Sequence[str], hook: str) -> ConfigError:
    """The error for a ``kind`` (``renderer``, ``output parser``) the lookup did not make: the
    nearest other built-in name, every built-in, and the hook that adds one."""
    return ConfigError(
        f"unknown {kind} {name!r}"
        + did_you_mean(name, [b for b in builtins if b != name])
        + f"; built-in: {', '.join(builtins)}, or add one with the {hook} hook"
    )


def check_params(kind: str, name: str, params: Mapping[str, Any], allowed: Sequence[str]) -> None:
    """Refuse a key of ``params`` that built-in ``kind`` ``name`` does not take (ConfigError with
    the keys it does take)."""
    unknown = [k for k in params if k not in allowed]
    if unknown:
        raise ConfigError(
            f"{kind} {name!r}: unknown key {unknown[0]!r}"
            + (f" (keys: {', '.join(allowed)})" if allowed else " (it takes none)")
        )
