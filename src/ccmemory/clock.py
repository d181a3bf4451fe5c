"""Timestamps as sortable ISO-8601 UTC strings with milliseconds.

Built with :mod:`time` rather than :mod:`datetime`: hooks import this on every
tool call and every millisecond of start-up counts there.
"""

from __future__ import annotations

import time


def now() -> str:
    """The current time, e.g. ``2026-11-22T02:40:00.123Z``."""
    moment = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(moment)) + ".%03dZ" % (int(moment * 1000) % 1000)
