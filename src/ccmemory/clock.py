"""Timestamps as sortable ISO-8601 UTC strings with milliseconds."""

from __future__ import annotations

from datetime import datetime, timezone


def now() -> str:
    """The current time, e.g. ``2026-11-22T02:40:00.123Z``."""
    return to_iso(datetime.now(timezone.utc))


def to_iso(moment: datetime) -> str:
    """Format an aware datetime the way every timestamp in the database is stored."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
