"""Decimal sibling order: a new node gets a number between its neighbours, nothing is reindexed.

The weights follow the reference docmem: inserting before a node lands 20% of
the way from the previous sibling, inserting after lands 80% of the way to the
next one. When floating point runs out of room between two neighbours the
caller renumbers the siblings (:func:`fits_between`).
"""

from __future__ import annotations

FIRST = 1.0
STEP = 1.0
BEFORE_WEIGHT = 0.2
AFTER_WEIGHT = 0.8


def append(max_child_order: float | None) -> float:
    """Order of a new last child: one past the largest, or 1.0 for the first child."""
    return FIRST if max_child_order is None else max_child_order + STEP


def before(target: float, previous: float | None) -> float:
    """Order of a node inserted just before ``target`` (``previous`` is the sibling before it)."""
    if previous is None:
        return target - STEP
    return previous + BEFORE_WEIGHT * (target - previous)


def after(target: float, following: float | None) -> float:
    """Order of a node inserted just after ``target`` (``following`` is the sibling after it)."""
    if following is None:
        return target + STEP
    return target + AFTER_WEIGHT * (following - target)


def fits_between(value: float, low: float | None, high: float | None) -> bool:
    """True when ``value`` lies strictly between its neighbours (None = no neighbour)."""
    return (low is None or value > low) and (high is None or value < high)


def renumbered(count: int) -> list[float]:
    """Fresh orders 1.0, 2.0, ... for ``count`` siblings in reading order."""
    return [FIRST + STEP * i for i in range(count)]
