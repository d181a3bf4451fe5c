"""Memory-file paths: what is allowed, and which scope and row a path names.

``/memories/...`` is the current project's scope; ``/memories/user/...`` is the
user-wide scope every project shares. A path is accepted only in its canonical
form, checked against an allowlist rather than cleaned up: ASCII letters, digits,
``.``, ``_`` and ``-`` in each name, no ``.``/``..`` or hidden names, no empty
segment, no backslash, no percent sign (so no URL-encoded ``%2e%2e%2f``), no
control character, at most :data:`MAX_PATH_CHARS` characters. Files are Markdown
(``.md``); a directory exists while a file lies under it.
"""

from __future__ import annotations

import posixpath
import re

from ..errors import ValidationError
from ..excerpts import clip

ROOT = "/memories"
USER_DIR = "user"
USER_ROOT = f"{ROOT}/{USER_DIR}"
FILE_SUFFIX = ".md"
MAX_PATH_CHARS = 500
_NAME = r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z"
_HINT = (" Memory paths look like /memories/notes.md (this project) or /memories/user/preferences.md (all your "
         "projects): names of letters, digits, '.', '_' and '-', Markdown files only.")


class MemoryFileError(ValidationError):
    """A memory-tool command failed; the message is the exact text returned to Claude.

    ``failed`` tells the CLI's exit code: True when the request was well formed but the
    store's state refused it (missing, already there, changed meanwhile), else a bad input.
    """

    def __init__(self, message: str, *, failed: bool = False) -> None:
        super().__init__(message)
        self.failed = failed


class Location:
    """A checked path: its canonical text, its scope and its path inside that scope."""

    __slots__ = ("path", "user", "rel")

    def __init__(self, path: str, user: bool, rel: str) -> None:
        self.path = path
        self.user = user
        self.rel = rel

    @property
    def is_file(self) -> bool:
        return self.rel.endswith(FILE_SUFFIX) and len(self.rel.rsplit("/", 1)[-1]) > len(FILE_SUFFIX)

    @property
    def is_scope_root(self) -> bool:
        return self.rel == ""

    def __repr__(self) -> str:
        return f"Location({self.path!r})"


def display(user: bool, rel: str) -> str:
    """The ``/memories`` path of a row: its scope's root joined with its path inside the scope."""
    base = USER_ROOT if user else ROOT
    return f"{base}/{rel}" if rel else base


def shown(raw: object, limit: int = 120) -> str:
    """A path as it may be echoed in a message: control characters escaped, long ones cut."""
    text = raw if isinstance(raw, str) else repr(raw)
    if not text.isprintable() or "\\" in text:
        text = text.encode("unicode_escape").decode("ascii")
    return clip(text, limit)


def _problem(raw: object) -> str | None:
    """Why ``raw`` is not an acceptable memory path, or None."""
    if not isinstance(raw, str) or not raw:
        return "a path is required"
    if len(raw) > MAX_PATH_CHARS:
        return f"it has {len(raw)} characters, over the limit of {MAX_PATH_CHARS}"
    if not raw.isprintable():
        return "it contains control or non-printable characters"
    if "\\" in raw:
        return "backslashes are not allowed"
    if "%" in raw:
        return "percent-encoded characters are not allowed"
    if raw != ROOT and not raw.startswith(ROOT + "/"):
        return f"it must start with {ROOT}"
    if "//" in raw:
        return "empty path segments (//) are not allowed"
    names = raw.rstrip("/").split("/")[2:]
    for index, name in enumerate(names):
        if name in (".", ".."):
            return "'.' and '..' segments are not allowed"
        if name.startswith("."):
            return "hidden names starting with '.' are not allowed"
        if not re.match(_NAME, name):
            return f"the name {shown(name, 60)!r} has characters other than letters, digits, '.', '_' and '-'"
        if index < len(names) - 1 and name.endswith(FILE_SUFFIX):
            return f"a directory name cannot end in {FILE_SUFFIX}"
    canonical = raw.rstrip("/") or ROOT
    if posixpath.normpath(canonical) != canonical:
        return "it is not in canonical form"
    from ..redaction import redact_secrets

    if redact_secrets(canonical) != canonical:
        return "it looks like it contains a secret"
    return None


def parse(raw: object) -> Location:
    """Check a path from Claude, the CLI or an import and say where it points; raises :class:`MemoryFileError`."""
    problem = _problem(raw)
    if problem is not None:
        raise MemoryFileError(f"Error: The path {shown(raw)} is not allowed: {problem}.{_HINT}")
    assert isinstance(raw, str)
    canonical = raw.rstrip("/") or ROOT
    rel = canonical[len(ROOT) + 1:]
    if rel == USER_DIR or rel.startswith(USER_DIR + "/"):
        return Location(canonical, True, rel[len(USER_DIR) + 1:])
    return Location(canonical, False, rel)


def parse_file(raw: object) -> Location:
    """A path that must name a Markdown file (create, rename targets, the CLI's edit)."""
    location = parse(raw)
    if not location.is_file:
        raise MemoryFileError(f"Error: Only Markdown files are stored: {location.path} must end in {FILE_SUFFIX}.")
    return location


def from_shorthand(raw: str) -> str:
    """The CLI's spelling: ``notes.md`` and ``user/prefs.md`` mean ``/memories/notes.md`` and so on."""
    if raw == ROOT or raw.startswith(ROOT + "/") or raw.startswith("/"):
        return raw
    return f"{ROOT}/{raw}"
