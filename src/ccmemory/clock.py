"""Timestamps as sortable ISO-8601 UTC strings with milliseconds.

Built with :mod:`time` rather than :mod:`datetime`: hooks import this on every
tool call and every millisecond of start-up counts there. Only :func:`parse`,
which hooks never call, imports :mod:`datetime`.
"""

from __future__ import annotations

import time

#: What :func:`now` answers inside :class:`replaying`; None: the real time.
_replayed: str | None = None


def now() -> str:
    """The current time, e.g. ``2026-11-22T02:40:00.123Z`` (inside :class:`replaying`, the time replayed)."""
    if _replayed is not None:
        return _replayed
    moment = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(moment)) + ".%03dZ" % (int(moment * 1000) % 1000)


def minute(stamp: str | None) -> str:
    """A stored time as people read it: ``2026-11-20T14:02:33.123Z`` as ``2026-11-20 14:02`` (None as "")."""
    return (stamp or "")[:16].replace("T", " ")


def parse(text: str) -> str:
    """An ISO-8601 date or date-time (``2023-05-08``, ``2023-05-08 13:56``, ``…T13:56:00+02:00``) in our format.

    A time without an offset is taken as UTC; a bare date is midnight UTC.
    Raises ValueError with a usable example when the text is not such a time.
    """
    from datetime import datetime, timezone

    raw = text.strip() if isinstance(text, str) else ""
    try:
        moment = datetime.fromisoformat(raw[:-1] + "+00:00" if raw.endswith(("Z", "z")) else raw)
    except ValueError:
        raise ValueError(
            f"Not an ISO-8601 date or time: {text!r}; write e.g. 2023-05-08 or 2023-05-08T13:56:00Z"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + ".%03dZ" % (moment.microsecond // 1000)


class replaying:
    """``with clock.replaying(moment):`` :func:`now` answers ``moment`` (in our format, see :func:`parse`).

    A backfill replays a past session through the code the hooks run, which stamps rows with
    :func:`now`; inside this block they get the session's own times instead. Blocks nest; the
    process is single-threaded while it replays.
    """

    def __init__(self, moment: str) -> None:
        self.moment = moment
        self.previous: str | None = None

    def __enter__(self) -> "replaying":
        global _replayed
        self.previous, _replayed = _replayed, self.moment
        return self

    def __exit__(self, *exc: object) -> None:
        global _replayed
        _replayed = self.previous


#: Where the digits of ``2026-11-22T01:55:45.147Z`` are, two by two.
_DIGIT_PAIRS = (0, 2, 5, 8, 11, 14, 17, 20, 21)


def canonical(stamp: object) -> str | None:
    """A time read from a file (a transcript) in our format, without :mod:`datetime` when it already is
    (Claude Code writes ``2026-11-22T01:55:45.147Z``); None when it is no time at all."""
    if not isinstance(stamp, str):
        return None
    if len(stamp) == 24 and stamp[4::3][:2] == "--" and stamp[10] == "T" and stamp[13:17:3] == "::" \
            and stamp[19] == "." and stamp[23] == "Z" and all(stamp[i:i + 2].isdigit() for i in _DIGIT_PAIRS):
        return stamp
    try:
        return parse(stamp)
    except ValueError:
        return None
