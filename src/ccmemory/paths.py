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

What a path given from outside means is decided here too: whether it is absolute for every
process (:func:`is_fixed`) and what a leading ``~`` is (:func:`expand_user`, with the home folder
of :func:`user_home`, never a ``HOME`` that leads into the project).

Paths are plain strings built with :mod:`os.path`: every hook imports this
module, and importing :mod:`pathlib` would cost each tool call ~10 ms.
"""

from __future__ import annotations

import os
import stat
import sys

DB_FILENAME = "ccmemory.db"
#: What ends the ``~`` of ``~/x`` (a backslash too on Windows).
_SEPARATORS = os.sep + (os.altsep or "")
#: Folders whose paths depend on the process that reads them (``/proc/self/cwd``, ``/dev/fd/3``).
_PROCESS_FOLDERS = ("/proc", "/dev/fd")


def is_fixed(path: str | None) -> bool:
    """Whether ``path`` is absolute and names the same file whatever the current directory of the process
    reading it: not relative, and no step of it leads through ``/proc`` or ``/dev/fd`` (``/proc/self/cwd``,
    ``/dev/fd/../cwd`` are the project). Each step is resolved, since a link or ``..`` can lead there."""
    if not path or "\0" in path or not os.path.isabs(path):
        return False
    if os.sep != "/":
        return True
    step = "/"
    for part in path.split("/"):
        if part:
            step = os.path.join(step, part)
            real = os.path.realpath(step)
            if any(real == folder or real.startswith(folder + "/") for folder in _PROCESS_FOLDERS):
                return False
    return True


def usable_dir(value: str | None) -> str | None:
    """``value`` as a directory path if it is an absolute path after ``~`` expansion (:func:`expand_user`), else None.

    Absolute as :func:`is_fixed` means it: ``/proc/self/cwd/x`` is the project's ``x``."""
    if not value or "${" in value:
        return None
    path = expand_user(value)
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
    """The user's home folder: ``HOME`` (``USERPROFILE`` on Windows) when it is absolute (:func:`is_fixed`), else
    the account's own: on POSIX from the password database, on Windows ``HOMEDRIVE`` + ``HOMEPATH``.

    A relative ``HOME`` (``.``) or one through ``/proc/self/cwd``, which a project's ``.claude/settings.json``
    can hand Claude Code's hooks and servers, would put the data dir, with the user's trusted ``config.json``,
    inside the project. Only Windows reads ``USERPROFILE`` (Python's ``expanduser`` does the same).
    """
    home = os.path.expanduser("~")
    if is_fixed(home):
        return home
    if sys.platform == "win32":
        profile = os.environ.get("HOMEDRIVE", "") + os.environ.get("HOMEPATH", "")
        if is_fixed(profile):
            return profile
        raise RuntimeError(f"USERPROFILE is {os.environ.get('USERPROFILE')!r}, not an absolute path, and HOMEDRIVE "
                           "and HOMEPATH name none either: set USERPROFILE or CCMEMORY_HOME to an absolute path")
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        raise RuntimeError(f"HOME is {os.environ.get('HOME')!r}, not an absolute path, and this account has no home "
                           "folder in the password database: set HOME or CCMEMORY_HOME to an absolute path") from None


def expand_user(text: str) -> str:
    """``text`` with a leading ``~`` (``~`` alone, ``~/…``) replaced by :func:`user_home`.

    Every setting or argument that may start with ``~`` is expanded here, never by ``os.path.expanduser``,
    which follows whatever ``HOME`` the process was given (``.``: the project). ``~name/…``, another account's
    home, comes from the password database on POSIX and is left as it is on Windows (Python would derive it
    from ``USERPROFILE``); text without a leading ``~`` is returned unchanged.
    """
    if not text.startswith("~"):
        return text
    name_end = min((found for found in (text.find(sep, 1) for sep in _SEPARATORS) if found > 0), default=len(text))
    if name_end == 1:
        home = user_home()
        return home.rstrip(_SEPARATORS) + text[1:] or home
    return text if sys.platform == "win32" else os.path.expanduser(text)


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


def own_folder(path: str) -> bool:
    """Whether ``path`` is a real folder (not a symlink) of this user's, where ccmemory may keep its own files:
    one of that name put in a shared folder such as ``/tmp`` by someone else, or a link, is not."""
    try:
        found = os.lstat(path)
    except OSError:
        return False
    mine = not hasattr(os, "getuid") or found.st_uid == os.getuid()
    return stat.S_ISDIR(found.st_mode) and mine


def remove_quietly(path: str) -> None:
    """Remove the file at ``path``; one already gone (or that cannot be removed) is left as it is."""
    try:
        os.remove(path)
    except OSError:
        pass


def make_private_file(path: str) -> None:
    """Restrict an existing file to its owner (0600)."""
    if sys.platform != "win32" and os.path.exists(path):
        os.chmod(path, 0o600)


def db_path() -> str:
    """The one SQLite database of this user."""
    return os.path.join(data_dir(), DB_FILENAME)
