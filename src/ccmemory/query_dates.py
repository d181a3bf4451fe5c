"""Dates written in a search query, as the time range they name.

"what did we decide on 8 May 2023", "the outage in March 2024", "2023-05-08":
search then prefers memories whose time (``created_at``, settable on add)
falls inside the range. A bare number is a year only after "in", "during" or "of".

Times said relative to now count too ("yesterday", "last week", "three days ago",
"last Saturday", "in the past two months"), measured from :func:`ccmemory.clock.now`
in the machine's local time (a day starts at local midnight). "N days/weeks/months
ago" is said loosely, so its range reaches half a unit either side (a day for days).
"How many weeks ago…" names no time and is left alone, as is a habit ("on Saturday
mornings", "on Tuesdays").
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

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


_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3,
            "couple of": 2, "few": 3, "several": 3}
_COUNT = r"(\d{1,3}|" + "|".join(sorted((re.escape(word) for word in _NUMBERS), key=len, reverse=True)) + ")"
_UNIT = r"(day|week|month|year)s?"
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_AGO = re.compile(r"\b" + _COUNT + r"\s+" + _UNIT + r"\s+ago\b", re.I)
_PAST = re.compile(r"\b(?:past|last|previous)\s+" + _COUNT + r"\s+" + _UNIT + r"\b", re.I)
_PAST_ONE = re.compile(r"\b(?:in|over|during)\s+the\s+(?:past|last)\s+" + _UNIT + r"\b", re.I)
_LAST = re.compile(r"\b(?:last|previous)\s+(week|month|year|" + "|".join(WEEKDAYS) + r")\b", re.I)
_THIS = re.compile(r"\bthis\s+(?:past\s+)?(morning|afternoon|evening|week|month|year|" + "|".join(WEEKDAYS)
                   + r")\b", re.I)
#: "on Saturday" is a day; "on Saturday mornings" (like "on Saturdays") is a habit, and names none.
_ON_WEEKDAY = re.compile(r"\bon\s+(" + "|".join(WEEKDAYS) + r")\b(?!\s+(?:mornings|afternoons|evenings|nights)\b)",
                         re.I)
_DAY_WORD = re.compile(r"\b(the\s+day\s+before\s+yesterday|yesterday|today|tonight)\b", re.I)
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30.44, "year": 365.25}


def date_range(query: str, now: str | None = None) -> tuple[str, str] | None:
    """``(start, end)`` ISO-8601 UTC strings (end excluded) of the first date the query names, else None.

    A calendar date wins over a time relative to ``now`` (default :func:`ccmemory.clock.now`).
    """
    return calendar_range(query) or relative_range(query, now)


def relative_range(query: str, now: str | None = None) -> tuple[str, str] | None:
    """The range a time said relative to ``now`` names ("yesterday", "last week", "3 days ago"), else None."""
    if not re.search(r"ago|yesterday|today|tonight|last|past|previous|this|day", query, re.I):
        return None
    from . import clock

    moment = datetime.fromisoformat((now or clock.now()).replace("Z", "+00:00")).astimezone()
    midnight = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    match = _DAY_WORD.search(query)
    if match:
        back = {"yesterday": 1, "today": 0, "tonight": 0}.get(match.group(1).lower(), 2)
        return _span(midnight - timedelta(days=back), midnight - timedelta(days=back - 1))
    match = _AGO.search(query)
    if match:
        count, unit = _count(match.group(1)), match.group(2).lower()
        if unit == "day":
            day = midnight - timedelta(days=count)
            return _span(day - timedelta(days=1), day + timedelta(days=2))
        center, half = moment - timedelta(days=count * _UNIT_DAYS[unit]), timedelta(days=_UNIT_DAYS[unit] / 2)
        return _span(center - half, center + half)
    match = _PAST.search(query) or _PAST_ONE.search(query)
    if match:
        count, unit = (1, match.group(1)) if match.re is _PAST_ONE else (_count(match.group(1)), match.group(2))
        return _span(moment - timedelta(days=count * _UNIT_DAYS[unit.lower()]), moment + timedelta(minutes=1))
    match = _LAST.search(query)
    if match:
        return _last(match.group(1).lower(), midnight)
    match = _THIS.search(query)
    if match:
        return _this(match.group(1).lower(), moment, midnight)
    match = _ON_WEEKDAY.search(query)
    if match:
        return _weekday_before(match.group(1).lower(), midnight, today_counts=True)
    return None


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[" ".join(word.lower().split())]


def _last(what: str, midnight: datetime) -> tuple[str, str]:
    """"last week" (the calendar week before this one), "last month", "last year", "last Saturday"."""
    if what == "week":
        monday = midnight - timedelta(days=midnight.weekday())
        return _span(monday - timedelta(days=7), monday)
    if what == "month":
        first = midnight.replace(day=1)
        return _span((first - timedelta(days=1)).replace(day=1), first)
    if what == "year":
        first = midnight.replace(month=1, day=1)
        return _span(first.replace(year=first.year - 1), first)
    return _weekday_before(what, midnight, today_counts=False)


def _this(what: str, moment: datetime, midnight: datetime) -> tuple[str, str]:
    """"this morning" (today), "this week", "this month", "this year" (up to now), "this (past) Monday"."""
    if what in ("morning", "afternoon", "evening"):
        return _span(midnight, midnight + timedelta(days=1))
    if what in WEEKDAYS:
        return _weekday_before(what, midnight, today_counts=True)
    start = {"week": midnight - timedelta(days=midnight.weekday()), "month": midnight.replace(day=1),
             "year": midnight.replace(month=1, day=1)}[what]
    return _span(start, moment + timedelta(minutes=1))


def _weekday_before(name: str, midnight: datetime, *, today_counts: bool) -> tuple[str, str]:
    """The latest ``name`` day up to today (``today_counts``) or before it."""
    back = (midnight.weekday() - WEEKDAYS.index(name)) % 7
    if back == 0 and not today_counts:
        back = 7
    day = midnight - timedelta(days=back)
    return _span(day, day + timedelta(days=1))


def _span(start: datetime, end: datetime) -> tuple[str, str]:
    """Two local times as ISO-8601 UTC strings in the stored format."""
    return _utc(start), _utc(end)


def _utc(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def calendar_range(query: str) -> tuple[str, str] | None:
    """The range of the first calendar date the query names ("8 May 2023", "March 2024", "in 2023"), else None."""
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
