"""Reading the one JSON object Claude Code writes to a hook's stdin, without ever raising."""

from __future__ import annotations

import json
import sys
TYPE_CHECKING = False  # typing costs the capture hook milliseconds; annotations are strings
if TYPE_CHECKING:
    from typing import Any, BinaryIO

#: Larger payloads are not parsed: no observation of that size is stored anyway.
MAX_PAYLOAD_BYTES = 32 * 1024 * 1024


class PayloadError(Exception):
    """The hook input was empty, not JSON, not an object, or too large."""


def read(stream: BinaryIO | None = None) -> dict[str, Any]:
    """The hook input as a dict; :class:`PayloadError` says why it could not be used."""
    stream = stream if stream is not None else sys.stdin.buffer
    data = stream.read(MAX_PAYLOAD_BYTES + 1)
    if len(data) > MAX_PAYLOAD_BYTES:
        raise PayloadError(f"hook input is larger than {MAX_PAYLOAD_BYTES} bytes; ignored")
    if not data.strip():
        raise PayloadError("hook input was empty; expected one JSON object on stdin")
    try:
        payload = json.loads(data.decode("utf-8", "replace"))
    except ValueError as exc:
        raise PayloadError(f"hook input is not valid JSON ({exc}; {len(data)} bytes)") from None
    if not isinstance(payload, dict):
        raise PayloadError(f"hook input must be a JSON object, got {type(payload).__name__}")
    return payload


def text(payload: dict[str, Any], key: str) -> str | None:
    """A non-empty string field of the payload, or None (wrong types count as missing)."""
    value = payload.get(key)
    return value if isinstance(value, str) and value.strip() else None
