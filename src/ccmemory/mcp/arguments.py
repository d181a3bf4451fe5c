"""Reading tool arguments: checked, defaulted, and with errors Claude can act on.

The low-level MCP server does not validate ``arguments`` against a tool's
``inputSchema``, and models sometimes send ``"5"`` for 5 or ``"true"`` for true
(the Inspector CLI sends every ``--tool-arg`` as text). These helpers accept
those spellings and raise :class:`ToolError` naming the argument otherwise.
"""

from __future__ import annotations

import math
from typing import Any, Literal, Mapping, overload

from .registry import ToolError


@overload
def text(args: Mapping[str, Any], name: str, *, required: Literal[True]) -> str: ...
@overload
def text(args: Mapping[str, Any], name: str, *, required: bool = False) -> str | None: ...
def text(args: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    """A string argument; blank counts as missing."""
    value = args.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise ToolError(f"Missing required argument {name!r}")
        return None
    if not isinstance(value, str):
        raise ToolError(f"Argument {name!r} must be text, got {type(value).__name__}")
    return value


@overload
def choice(args: Mapping[str, Any], name: str, allowed: tuple[str, ...], default: str) -> str: ...
@overload
def choice(args: Mapping[str, Any], name: str, allowed: tuple[str, ...], default: None = None) -> str | None: ...
def choice(args: Mapping[str, Any], name: str, allowed: tuple[str, ...], default: str | None = None) -> str | None:
    """A string argument that must be one of ``allowed``."""
    value = text(args, name)
    if value is None:
        return default
    value = value.strip().lower()
    if value not in allowed:
        raise ToolError(f"Argument {name!r} must be one of {', '.join(allowed)}; got {value!r}")
    return value


def number(args: Mapping[str, Any], name: str, default: float, *, low: float = 0.0, high: float = 1.0) -> float:
    """A number in ``[low, high]``."""
    value = args.get(name)
    if value is None or value == "":
        return default
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ToolError(f"Argument {name!r} must be a number, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ToolError(f"Argument {name!r} must be a number, got {value!r}")
    if not low <= value <= high:
        raise ToolError(f"Argument {name!r} must be between {low:g} and {high:g}, got {value!r}")
    return float(value)


def integer(args: Mapping[str, Any], name: str, default: int, *, low: int, high: int) -> int:
    """A whole number in ``[low, high]``."""
    value = number(args, name, default, low=low, high=high)
    if value != int(value):
        raise ToolError(f"Argument {name!r} must be a whole number, got {value!r}")
    return int(value)


def flag(args: Mapping[str, Any], name: str, default: bool = False) -> bool:
    """A boolean argument."""
    value = args.get(name)
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ToolError(f"Argument {name!r} must be true or false, got {value!r}")


def strings(args: Mapping[str, Any], name: str, *, required: bool = False, most: int = 100) -> list[str]:
    """A list of non-empty strings; a single string (or comma-separated text) becomes a list."""
    value = args.get(name)
    if isinstance(value, str):
        value = value.split(",")
    if value is None:
        value = []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ToolError(f"Argument {name!r} must be a list of strings, got {value!r}")
    items = [item.strip() for item in value if item.strip()]
    if required and not items:
        raise ToolError(f"Missing required argument {name!r} (a list of strings)")
    if len(items) > most:
        raise ToolError(f"Argument {name!r} takes at most {most} items, got {len(items)}; split the request")
    return items
