"""Where ccmemory keeps its data, and how it protects it.

Resolution order for the data directory: ``CCMEMORY_HOME``, then
``CLAUDE_PLUGIN_DATA`` (set by Claude Code for plugin hooks and MCP servers),
then the per-user data directory of the platform.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DB_FILENAME = "ccmemory.db"


def data_dir() -> Path:
    """The directory holding the database, config, logs and model folder."""
    for var in ("CCMEMORY_HOME", "CLAUDE_PLUGIN_DATA"):
        value = os.environ.get(var)
        if value:
            return Path(value).expanduser()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "ccmemory"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "ccmemory"
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "ccmemory"


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) readable by the owner only (0700)."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if sys.platform != "win32":
        os.chmod(path, 0o700)
    return path


def make_private_file(path: Path) -> None:
    """Restrict an existing file to its owner (0600)."""
    if sys.platform != "win32" and path.exists():
        os.chmod(path, 0o600)


def db_path() -> Path:
    """The one SQLite database of this user."""
    return data_dir() / DB_FILENAME
