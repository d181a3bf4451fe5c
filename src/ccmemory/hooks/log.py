"""The hooks' rotating log file, ``<data dir>/logs/hooks.log``.

Hooks must never write to stdout (Claude Code parses it) and their stderr is
hidden in Claude Code's debug log, so this file is where hook failures show
up. It is a plain append with size-based rotation rather than
:mod:`logging`, whose import alone costs the capture hook several milliseconds.
Logging never raises.
"""

from __future__ import annotations

import os
import time

LOG_FILENAME = "hooks.log"
DEFAULT_MAX_BYTES = 1_000_000
DEFAULT_BACKUPS = 3
#: A log line never carries more of a message than this (and never a secret: lines are redacted).
MAX_MESSAGE_CHARS = 2000


def log_path() -> str:
    from .. import paths

    return os.path.join(paths.data_dir(), "logs", LOG_FILENAME)


def write(level: str, event: str, message: str, *, max_bytes: int = DEFAULT_MAX_BYTES,
          backups: int = DEFAULT_BACKUPS) -> None:
    """Append one line ``<UTC time> <LEVEL> <event> [pid] message``; rotate when the file is too big."""
    try:
        path = log_path()
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        from ..redaction import redact

        text = " ".join(redact(message[:MAX_MESSAGE_CHARS]).split())
        line = f"{stamp} {level.upper()} {event} [{os.getpid()}] {text}\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > max_bytes:
            _rotate(path, max(backups, 1))
    except Exception:
        pass


def _rotate(path: str, backups: int) -> None:
    for index in range(backups - 1, 0, -1):
        if os.path.exists(f"{path}.{index}"):
            os.replace(f"{path}.{index}", f"{path}.{index + 1}")
    os.replace(path, f"{path}.1")


def error(event: str, message: str) -> None:
    write("error", event, message)


def info(event: str, message: str) -> None:
    write("info", event, message)


def debug(event: str, message: str) -> None:
    """Only written when ``CCMEMORY_DEBUG`` is set, so the hot path stays quiet."""
    if os.environ.get("CCMEMORY_DEBUG"):
        write("debug", event, message)
