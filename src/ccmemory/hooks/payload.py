"""Reading the one JSON object Claude Code writes to a hook's stdin, without ever raising."""

from __future__ import annotations

import json
import sys

from ..nesting import too_deep
from ..record_ids import is_record_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO

    from ..config import Config

#: Larger payloads are not parsed: no observation of that size is stored anyway.
MAX_PAYLOAD_BYTES = 32 * 1024 * 1024
#: Containers nested deeper than this are replaced by a note, so the rest of the payload is kept.
MAX_DEPTH = 100
DEEP_PLACEHOLDER = "[nested too deep]"
#: More arrays and objects than this are not parsed: Python builds about 25 times their text in objects
#: (31 MB of ``[{},{},…]`` took a hook to 820 MB). Text, even a large Write, holds far fewer.
MAX_CONTAINERS = 500_000
#: Fields Claude Code fills with an id or a path, and the longest each may be (an id is a few dozen characters,
#: a path at most ``PATH_MAX``). A longer one, or one with a NUL byte or a lone surrogate (which neither the
#: file system nor SQLite takes), is dropped: the hook goes on as if it were missing.
FIELD_LIMITS = {"session_id": 256, "tool_use_id": 256, "tool_name": 512, "hook_event_name": 256,
                "cwd": 4096, "transcript_path": 4096}


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
    containers = data.count(b"{") + data.count(b"[")
    if containers > MAX_CONTAINERS:
        raise PayloadError(f"hook input holds {containers:,} arrays and objects, more than {MAX_CONTAINERS:,}; ignored")
    text = data.decode("utf-8", "replace")
    try:
        try:
            payload = json.loads(text)
            if too_deep(payload, MAX_DEPTH):  # what reads it later (redaction, json.dumps) has less stack than the parser
                payload = json.loads(flatten_deep(text))
        except RecursionError:
            payload = json.loads(flatten_deep(text))
    except (ValueError, RecursionError) as exc:
        raise PayloadError(f"hook input is not valid JSON ({type(exc).__name__}: {exc}; {len(data)} bytes)") from None
    if not isinstance(payload, dict):
        raise PayloadError(f"hook input must be a JSON object, got {type(payload).__name__}")
    return payload


def unusable_fields(payload: dict[str, Any]) -> list[str]:
    """Drop the id and path fields that cannot be used (:data:`FIELD_LIMITS`); their names, for the log."""
    dropped = []
    for key, limit in FIELD_LIMITS.items():
        value = payload.get(key)
        if not isinstance(value, str):
            continue
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate
            value = "\0"
        if len(value) > limit or "\0" in value or (key == "session_id" and not is_record_id(value)):
            del payload[key]  # a session id is shown to the model as it is: only an id's characters
            dropped.append(key)
    return dropped


def text(payload: dict[str, Any], key: str) -> str | None:
    """A non-empty string field of the payload, or None (wrong types count as missing)."""
    value = payload.get(key)
    return value if isinstance(value, str) and value.strip() else None


def capturing_session(payload: dict[str, Any], config: Config, hook: str, nothing: str) -> str | None:
    """The payload's session id when this hook is to store anything; else None, the reason logged.

    ``nothing`` says what is then not stored ("observation not stored"), for the hook's log.
    """
    from . import log

    session_id = text(payload, "session_id")
    if session_id is None:
        log.error(hook, f"payload has no session_id; {nothing}")
    elif not config.get("capture", "enabled"):
        log.debug(hook, f"{nothing}: capture is off (capture.enabled)")
        return None
    return session_id


def flatten_deep(text: str, max_depth: int = MAX_DEPTH) -> str:
    """JSON text with every array or object deeper than ``max_depth`` replaced by a placeholder string.

    One pass over the structural characters (strings and escapes respected), so a hostile
    nesting costs linear time and the observation around it is still stored.
    """
    import re

    parts: list[str] = []
    depth = 0
    skip_from = -1  # where the container being dropped starts
    position = 0  # text before this is already in parts
    escaped = -1  # index of a character escaped by a backslash
    in_string = False
    for match in re.finditer(r'["\\\[\]{}]', text):
        char, index = match.group(), match.start()
        if index == escaped:
            continue
        if in_string:
            if char == "\\":
                escaped = index + 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth == max_depth + 1:
                skip_from = index
        elif char in "]}":
            if depth == max_depth + 1 and skip_from >= 0:
                parts.append(text[position:skip_from])
                parts.append(json.dumps(DEEP_PLACEHOLDER))
                position = index + 1
                skip_from = -1
            depth -= 1
    parts.append(text[position:])
    return "".join(parts)
