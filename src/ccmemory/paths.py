"""Where ccmemory keeps its data, and how it protects it.

The data directory is ``CCMEMORY_HOME`` when it is set to an absolute path,
else the per-user data directory of the platform. It deliberately does not
follow ``CLAUDE_PLUGIN_DATA``: that directory differs between a marketplace
install, ``--plugin-dir`` and a second marketplace, is not set in a terminal,
and is deleted with the plugin. Hooks, the MCP server and the CLI must all find
the same memory whatever Claude Code exports, so the plugin data directory only
holds the MCP server's Python runtime (see ``scripts/mcp_launcher.py``).

A value that is not an absolute path (empty, relative, or a placeholder such as
``${CLAUDE_PLUGIN_DATA}`` that a client failed to substitute) is ignored, so
nothing is ever created relative to the working directory, which is the
user's project; :func:`ignored_settings` says what was ignored.

Paths are plain strings built with :mod:`os.path`: every hook imports this
module, and importing :mod:`pathlib` would cost each tool call ~10 ms.
"""

from __future__ import annotations

import os
import sys

from .isolation import is_fixed

DB_FILENAME = "ccmemory.db"


def usable_dir(value: str | None) -> str | None:
    """``value`` as a directory path if it is an absolute path after ``~`` expansion, else None.

    Absolute as :func:`ccmemory.isolation.is_fixed` means it: ``/proc/self/cwd/x`` is the project's ``x``."""
    if not value or "${" in value:
        return None
    path = os.path.expanduser(value)
    return path if is_fixed(path) else None


def ignored_settings() -> list[str]:
    """Why a set ``CCMEMORY_HOME`` is not used, for ``ccmemory doctor``; empty when nothing was ignored."""
    value = os.environ.get("CCMEMORY_HOME")
    if value and usable_dir(value) is None:
        return [f"CCMEMORY_HOME={value!r} is not an absolute path, so it is ignored and {default_data_dir()} "
                "is used; set it to an absolute path or unset it"]
    return []


def data_dir() -> str:
    """The directory holding the database, config, logs and model folder."""
    return usable_dir(os.environ.get("CCMEMORY_HOME")) or default_data_dir()


def user_home() -> str:
    """The user's home folder: ``HOME`` (``USERPROFILE`` on Windows) when it is absolute (:func:`is_fixed`),
    else, on POSIX, the account's own home from the password database.

    A relative ``HOME`` (``.``) or one through ``/proc/self/cwd``, which a project's ``.claude/settings.json``
    can hand Claude Code's hooks and servers, would put the data dir, with the user's trusted ``config.json``,
    inside the project.
    """
    home = os.path.expanduser("~")
    if is_fixed(home) or sys.platform == "win32":
        return home
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        raise RuntimeError(f"HOME is {os.environ.get('HOME')!r}, not an absolute path, and this account has no home "
                           "folder in the password database: set HOME or CCMEMORY_HOME to an absolute path") from None


def default_data_dir() -> str:
    """The platform's per-user data directory for ccmemory."""
    home = user_home()
    if sys.platform == "win32":
        return os.path.join(usable_dir(os.environ.get("LOCALAPPDATA")) or os.path.join(home, "AppData", "Local"),
                            "ccmemory")
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Application Support", "ccmemory")
    # A relative XDG_DATA_HOME (invalid per the XDG spec) would put the memory and the runtime in the project.
    return os.path.join(usable_dir(os.environ.get("XDG_DATA_HOME")) or os.path.join(home, ".local", "share"),
                        "ccmemory")


def claude_config_dir() -> str:
    """Claude Code's configuration folder: ``CLAUDE_CONFIG_DIR`` when it is absolute, else ``~/.claude``."""
    return usable_dir(os.environ.get("CLAUDE_CONFIG_DIR")) or os.path.join(user_home(), ".claude")


def ensure_private_dir(path: str) -> str:
    """Create ``path`` (and parents) readable by the owner only (0700)."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    if sys.platform != "win32":
        os.chmod(path, 0o700)
    return path


def private_parent(path: str) -> None:
    """Create the folder of ``path`` privately if it is missing; an existing folder is left as it is.

    Only ccmemory's own data dir is made private when it already exists (:func:`ensure_private_dir`):
    a file put at an explicit path (a test's database, an export) must never change the
    mode of a folder such as ``/tmp``.
    """
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        ensure_private_dir(parent)


def make_private_file(path: str) -> None:
    """Restrict an existing file to its owner (0600)."""
    if sys.platform != "win32" and os.path.exists(path):
        os.chmod(path, 0o600)


def db_path() -> str:
    """The one SQLite database of this user."""
    return os.path.join(data_dir(), DB_FILENAME)
