"""Dates written in a search query, as the time range they name.

"what did we decide on 8 May 2023", "the outage in March 2024", "2023-05-08":
search then prefers memories whose time (``created_at``, settable on add)
falls inside the range. Only explicit calendar dates count; a bare number is
a year only after "in", "during" or "of".
"""

from __future__ import annotations

import re

MONTHS = {name: number for number, names in enumerate(
    (("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
     ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
     ("november", "nov"), ("december", "dec")), 1) for name in names}
_MONTH = "(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_PATTERNS = (
    ("day", re.compile(r"\b" + _YEAR + r"-(\d\d)-(\d\d)\b"), ("y", "m", "d")),
    ("day", re.compile(r"\b" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r",?\s+" + _YEAR + r"\b", re.I), ("d", "M", "y")),
    ("day", re.compile(r"\b" + _MONTH + r"\s+" + _DAY + r",?\s+" + _YEAR + r"\b", re.I), ("M", "d", "y")),
    ("month", re.compile(r"\b" + _MONTH + r",?\s+(?:of\s+)?" + _YEAR + r"\b", re.I), ("M", "y")),
    ("year", re.compile(r"\b(?:in|during|of)\s+" + _YEAR + r"\b", re.I), ("y",)),
)


def date_range(query: str) -> tuple[str, str] | None:
    """``(start, end)`` ISO-8601 UTC strings (end excluded) of the first date the query names, else None."""
    for granularity, pattern, fields in _PATTERNS:
        match = pattern.search(query)
        if not match:
            continue
        parts = dict(zip(fields, match.groups()))
        year = int(parts["y"])
        month = MONTHS[parts["M"].lower().rstrip(".")] if "M" in parts else int(parts.get("m", 1))
        day = int(parts.get("d", 1))
        if not 1 <= month <= 12 or not 1 <= day <= _days_in(year, month):
            continue
        if granularity == "day":
            end = (year, month, day + 1) if day < _days_in(year, month) else _next_month(year, month)
        elif granularity == "month":
            end = _next_month(year, month)
        else:
            end = (year + 1, 1, 1)
        return _iso(year, month, day if granularity == "day" else 1), _iso(*end)
    return None


def _days_in(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _next_month(year: int, month: int) -> tuple[int, int, int]:
    return (year + 1, 1, 1) if month == 12 else (year, month + 1, 1)


def _iso(year: int, month: int, day: int) -> str:
    return f"{year:04d}-{month:02d}-{day:02d}T00:00:00.000Z"
