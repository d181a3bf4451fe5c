"""Reading and writing files that a payload or a tool argument names, without hanging or escaping.

Every path that comes from outside (a hook's ``transcript_path``, ``docs_ingest path=…``, the
project's ``CLAUDE.md``) goes through here:

* only **regular files**: a FIFO, a device (``/dev/zero``), a socket or a directory is refused
  before anything is read; opening uses ``O_NONBLOCK`` so even a FIFO cannot block the open;
* **bounded**: at most ``max_bytes`` are read, whatever the file claims;
* **inside a root** when one is given: the real path (symlinks resolved) must lie under the
  root's real path;
* **line by line, bounded**: :func:`bounded_lines` never holds more than one line of a set size
  (a transcript or an import file cannot make a reader allocate without end);
* CLAUDE.md is read and written without following a symlink (``O_NOFOLLOW``);
* what ccmemory writes into a project (``.claude/memory/``: error log, structure cache, lock
  requests) is never written through a symlink: a cloned repository could hold
  ``.claude/memory/errors.log -> ~/.bashrc``.

Standard library only: the Stop hook reads transcripts through :func:`open_regular`.
"""

from __future__ import annotations

import os
import stat

from .errors import ValidationError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO, Iterator, TextIO

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_BINARY = getattr(os, "O_BINARY", 0)


class UnsafeFileError(ValidationError):
    """A path that cannot be used as it is; ``reason`` is the bare cause (e.g. "Permission denied")."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def is_inside(path: str, root: str) -> bool:
    """Whether ``path`` resolves (symlinks followed) to ``root`` or below it."""
    real, base = os.path.realpath(path), os.path.realpath(root)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def open_fd(path: str, *, write: bool = False, root: str | None = None, follow: bool = True,
            flags: int = 0) -> int:
    """A blocking file descriptor on a regular file; ValidationError for anything else.

    ``follow=False`` refuses a symlink as the last component (``O_NOFOLLOW``); ``root`` refuses a
    path whose real location is outside it. The open itself never blocks (``O_NONBLOCK``), so a
    FIFO is refused instead of waiting for a writer. ``flags`` adds open flags (``O_CREAT`` makes
    a missing file, 0644).
    """
    if root is not None and not is_inside(path, root):
        raise UnsafeFileError(f"{path} is outside the project ({root}); only files inside it can be used",
                              "it resolves outside the project")
    flags |= (os.O_WRONLY if write else os.O_RDONLY) | _NONBLOCK | _BINARY | (0 if follow else _NOFOLLOW)
    if not follow and os.path.islink(path):
        raise UnsafeFileError(f"{path} is a symbolic link; ccmemory does not follow it", "it is a symbolic link")
    try:
        fd = os.open(path, flags, 0o644)
    except FileNotFoundError:
        raise UnsafeFileError(f"No file at {path}; check the path", "there is no such file") from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UnsafeFileError(f"Cannot open {path}: {reason}", reason) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file (a pipe, device or socket)"
            raise UnsafeFileError(f"{path} is {kind}; only regular files are used", f"it is {kind}")
        if _NONBLOCK:
            os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_regular(path: str, *, root: str | None = None) -> BinaryIO:
    """Open a regular file for reading; ValidationError for anything else or a path outside ``root``."""
    return os.fdopen(open_fd(path, root=root), "rb")


def read_regular(path: str, max_bytes: int, *, root: str | None = None, follow: bool = True) -> bytes:
    """The whole content of a regular file of at most ``max_bytes``; ValidationError otherwise."""
    with os.fdopen(open_fd(path, root=root, follow=follow), "rb") as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValidationError(f"{path} is larger than {max_bytes:,} bytes, the limit")
    return data


def open_text_for_writing(path: str, *, append: bool = False) -> TextIO:
    """Open a regular file for writing text (created 0644 if missing), never through a symlink."""
    fd = open_fd(path, write=True, follow=False, flags=os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC))
    return os.fdopen(fd, "a" if append else "w", encoding="utf-8")


def replace_text(path: str, text: str) -> None:
    """Write ``path`` whole and in one step: a new private temporary file, then renamed over it
    (a rename replaces a symlink itself instead of writing where it points)."""
    import tempfile

    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".ccmemory-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.remove(temporary)
        except FileNotFoundError:
            pass
        raise


def bounded_lines(handle: BinaryIO, max_total: int, max_line: int) -> Iterator[bytes | None]:
    """The lines of an open binary file, reading at most ``max_total`` bytes in all.

    A line longer than ``max_line`` bytes is never held whole: ``None`` is yielded in its place
    as soon as its first ``max_line`` bytes are read (so a caller can count it, or stop: a file
    that is one endless line is refused at once), and the rest of it is read and dropped piece
    by piece. A file without a newline therefore costs at most ``max_line`` bytes of memory,
    and the whole read at most ``max_total``.
    """
    read = 0
    inside_long_line = False
    while read < max_total:
        raw = handle.readline(min(max_line, max_total - read))
        if not raw:
            return
        read += len(raw)
        ended = raw.endswith(b"\n")
        if inside_long_line:
            inside_long_line = not ended
        elif not ended and len(raw) >= max_line:
            inside_long_line = True
            yield None
        else:
            yield raw
