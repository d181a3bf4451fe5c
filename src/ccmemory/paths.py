"""Where ccmemory keeps its data, and how it protects it.

Resolution order for the data directory: ``CCMEMORY_HOME``, then
``CLAUDE_PLUGIN_DATA`` (set by Claude Code for plugin hooks and MCP servers),
then the per-user data directory of the platform.

Paths are plain strings built with :mod:`os.path`: every hook imports this
module, and importing :mod:`pathlib` would cost each tool call ~10 ms.
"""

from __future__ import annotations

import os
import sys

DB_FILENAME = "ccmemory.db"


def data_dir() -> str:
    """The directory holding the database, config, logs and model folder."""
    for var in ("CCMEMORY_HOME", "CLAUDE_PLUGIN_DATA"):
        value = os.environ.get(var)
        if value:
            return os.path.expanduser(value)
    home = os.path.expanduser("~")
    if sys.platform == "win32":
        return os.path.join(os.environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local"), "ccmemory")
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Application Support", "ccmemory")
    return os.path.join(os.environ.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share"), "ccmemory")


def ensure_private_dir(path: str) -> str:
    """Create ``path`` (and parents) readable by the owner only (0700)."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    if sys.platform != "win32":
        os.chmod(path, 0o700)
    return path


def make_private_file(path: str) -> None:
    """Restrict an existing file to its owner (0600)."""
    if sys.platform != "win32" and os.path.exists(path):
        os.chmod(path, 0o600)


def db_path() -> str:
    """The one SQLite database of this user."""
    return os.path.join(data_dir(), DB_FILENAME)
