"""How deep a value read from JSON nests its objects and lists, found without recursion.

Python's ``json`` reads some 1,000 levels, while what handles the value afterwards gives up far
sooner (redaction and ``json.dumps`` on the hook path's stack, orjson behind ``--json`` at 255
levels): the hook payload, stored metadata and rows from a team server are each held to a depth
here first. Standard library only: the hook path imports it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def too_deep(value: Any, limit: int) -> bool:
    """Whether ``value`` nests objects and lists (tuples too) more than ``limit`` levels deep (``value`` itself
    is level 1). Walked with a stack: the value may be nested deeper than Python's recursion limit."""
    containers = (dict, list, tuple)
    stack = [(value, 1)] if isinstance(value, containers) else []
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, containers))
    return False
