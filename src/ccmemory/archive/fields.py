"""The values of an import record, checked as the store's own writers check them.

An export file is untrusted input: a teammate's commit, a download, a file a cloned
repository ships. Every field a loader stores goes through one of these checks first:
its type (a salience is a number, never text; ``true`` is no number), its range (finite,
within the bounds the tools keep), its length, and, for times, its shape and date. A time
is normalized to the store's format and may lie at most :data:`MAX_FUTURE_SECONDS` ahead of
this machine's clock (a small skew between machines), so no record can sort itself
after every later change (``9999-12-31``) and pin itself there. A failed check raises
:class:`ValidationError` naming the field; the import skips that record and reports it.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, Sequence, overload

from .. import clock, memories
from ..nesting import too_deep
from ..errors import ValidationError
from ..excerpts import clip

#: How far ahead of this machine's clock an imported time may be (clock skew between machines).
MAX_FUTURE_SECONDS = 600
#: Longest text of the short fields: a title, a path, a label, an id-like key.
MAX_SHORT_CHARS = 4_096
#: Longest session summary (a model-written summary is a few thousand characters).
MAX_SUMMARY_CHARS = 100_000
#: Largest metadata object, as compact JSON.
MAX_JSON_BYTES = 100_000
#: Most items in a list of strings (tags, files) and longest item.
MAX_LIST_ITEMS = 1_000
MAX_ITEM_CHARS = 1_000
#: Largest whole number a counter (reference count, version, ordinal) may hold.
MAX_COUNT = 1_000_000_000


def latest_time() -> str:
    """The latest time an import accepts now: this machine's clock plus the allowed skew."""
    moment = datetime.now(timezone.utc) + timedelta(seconds=MAX_FUTURE_SECONDS)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + ".%03dZ" % (moment.microsecond // 1000)


def _shown(value: Any) -> str:
    return clip(repr(value), 59)  # at most 60 characters with the marker


def _missing(name: str) -> ValidationError:
    return ValidationError(f"its {name} is missing")


@overload
def text(record: dict[str, Any], name: str, *, max_chars: int | None = MAX_SHORT_CHARS, required: Literal[True] = True,
         blank: bool = True) -> str: ...
@overload
def text(record: dict[str, Any], name: str, *, max_chars: int | None = MAX_SHORT_CHARS, required: bool,
         blank: bool = True) -> str | None: ...
def text(record: dict[str, Any], name: str, *, max_chars: int | None = MAX_SHORT_CHARS, required: bool = True,
         blank: bool = True) -> str | None:
    """A string of at most ``max_chars`` characters (None: the caller checks its size), None allowed
    unless ``required``; ``blank=False`` refuses an empty or all-space one."""
    value = record.get(name)
    if value is None:
        if required:
            raise _missing(name)
        return None
    if not isinstance(value, str):
        raise ValidationError(f"its {name} must be text, got {type(value).__name__}")
    if max_chars is not None and len(value) > max_chars:
        raise ValidationError(f"its {name} has {len(value):,} characters, more than the {max_chars:,} allowed")
    if not blank and not value.strip():
        raise ValidationError(f"its {name} is empty")
    return value


def time(record: dict[str, Any], name: str, latest: str, *, required: bool = True) -> str | None:
    """An ISO-8601 time in the store's format, no later than ``latest`` (see :func:`latest_time`)."""
    value = text(record, name, max_chars=64, required=required)
    if value is None:
        return None
    try:
        stored = clock.parse(value)
    except (ValueError, OverflowError):
        raise ValidationError(f"its {name} {_shown(value)} is not an ISO-8601 time") from None
    if stored > latest:
        raise ValidationError(f"its {name} {_shown(value)} is in the future (this machine's clock says "
                              f"{clock.now()[:19]}); fix the time in the file or this machine's clock")
    return stored


def number(record: dict[str, Any], name: str, low: float, high: float, *, default: float | None = None) -> float:
    """A finite number from ``low`` to ``high`` (``true``/``false`` and text are not numbers)."""
    value = record.get(name)
    if value is None and default is not None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not low <= value <= high:
        raise ValidationError(f"its {name} must be a number from {low:g} to {high:g}, got {_shown(value)}")
    return float(value)


def whole(record: dict[str, Any], name: str, *, low: int = 0, high: int = MAX_COUNT,
          default: int | None = None) -> int:
    """A whole number from ``low`` to ``high``."""
    value = record.get(name)
    if value is None and default is not None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValidationError(f"its {name} must be a whole number from {low:,} to {high:,}, got {_shown(value)}")
    return value


def flag(record: dict[str, Any], name: str) -> bool:
    """``true`` or ``false`` (absent or null: false)."""
    value = record.get(name)
    if value is None:
        return False
    if not isinstance(value, bool) and value not in (0, 1):
        raise ValidationError(f"its {name} must be true or false, got {_shown(value)}")
    return bool(value)


def choice(record: dict[str, Any], name: str, allowed: Sequence[str], *, default: str | None = None) -> str:
    """One of ``allowed``."""
    value = record.get(name)
    if value is None and default is not None:
        return default
    if not isinstance(value, str) or value not in allowed:
        raise ValidationError(f"its {name} {_shown(value)} is not one of: {', '.join(allowed)}")
    return value


def strings(record: dict[str, Any], name: str) -> list[str]:
    """A list of at most :data:`MAX_LIST_ITEMS` strings of at most :data:`MAX_ITEM_CHARS` each (null: empty)."""
    value = record.get(name)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValidationError(f"its {name} must be a list of strings")
    if len(value) > MAX_LIST_ITEMS or any(len(item) > MAX_ITEM_CHARS for item in value):
        raise ValidationError(f"its {name} must hold at most {MAX_LIST_ITEMS:,} strings of at most "
                              f"{MAX_ITEM_CHARS:,} characters")
    return value


def json_object(record: dict[str, Any], name: str) -> dict[str, Any]:
    """An object of at most :data:`MAX_JSON_BYTES` as compact JSON and at most
    :data:`~ccmemory.memories.MAX_METADATA_DEPTH` levels deep, as the store's writers keep metadata
    (null: empty). Python reads JSON nested some 1,000 levels; what prints it back (``--json``, the
    viewer) gives up far sooner."""
    value = record.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationError(f"its {name} must be an object, got {type(value).__name__}")
    if too_deep(value, memories.MAX_METADATA_DEPTH):
        raise ValidationError(f"its {name} is nested more than {memories.MAX_METADATA_DEPTH} levels deep (objects "
                              "and lists inside each other); flatten it in the file")
    try:
        size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError):
        raise ValidationError(f"its {name} cannot be stored as JSON") from None
    if size > MAX_JSON_BYTES:
        raise ValidationError(f"its {name} is {size:,} bytes of JSON, more than the {MAX_JSON_BYTES:,} allowed")
    return value
