"""Reading and writing files that a payload, a tool argument or a project names, without hanging or escaping.

Every path that comes from outside (a hook's ``transcript_path``, ``docs_ingest path=…``, the
project's ``CLAUDE.md``, its knowledge markdown and manifests, everything ccmemory writes under
its ``.claude/``) goes through here:

* only **regular files**: a FIFO, a device (``/dev/zero``), a socket or a directory is refused
  before anything is read; opening uses ``O_NONBLOCK`` so even a FIFO cannot block the open;
* **bounded**: at most ``max_bytes`` are read, whatever the file claims;
* **inside a root** when one is given: the real path (symlinks resolved, directory links
  included) must lie under the root's real path, checked on the opened descriptor (no window
  for a symlink swap between the check and the open); writes are made in the checked real
  folder and never through a final symlink, folders are created only inside the root;
* **line by line, bounded**: :func:`bounded_lines` never holds more than one line of a set size
  (a transcript or an import file cannot make a reader allocate without end);
* **walked without recursion and to a set depth** (:func:`walk`): a repository can nest folders
  deeper than Python's recursion limit;
* CLAUDE.md is read and written without following a symlink (``O_NOFOLLOW``);
* what ccmemory writes into a project (``.claude/memory/``: error log, structure cache, lock
  requests) is never written through a symlink: a cloned repository could hold
  ``.claude/memory/errors.log -> ~/.bashrc``.

Standard library only: the Stop hook reads transcripts through :func:`lines`.
"""

from __future__ import annotations

import os
import stat
import sys

from .errors import ValidationError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO, Iterator, TextIO

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
#: Folder levels :func:`walk` goes down.
MAX_WALK_DEPTH = 64
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_BINARY = getattr(os, "O_BINARY", 0)


class UnsafeFileError(ValidationError):
    """A path that cannot be used as it is; ``reason`` is the bare cause (e.g. "Permission denied").

    ``code`` is the errno when the operating system refused the open; None when ccmemory did
    (outside the root, not a regular file, a symlink where none is followed).
    """

    def __init__(self, message: str, reason: str, code: int | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.code = code


def walk(top: str, *, max_depth: int = MAX_WALK_DEPTH,
         too_deep: list[str] | None = None) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(top)`` (top-down, links to folders listed but never followed, unreadable folders skipped)
    without recursion and at most ``max_depth`` folder levels below ``top``.

    Python 3.11's ``os.walk`` recurses once per level, so a repository of 1,200 nested folders made
    it raise ``RecursionError``. Folders left out for their depth are appended to ``too_deep``. As
    with ``os.walk``, the caller may prune the folder list it is given, in place.
    """
    stack: list[tuple[str, int]] = [(top, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as scan:
                entries = list(scan)
        except OSError:
            continue
        dirs: list[str] = []
        names: list[str] = []
        linked: set[str] = set()
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (dirs if is_dir else names).append(entry.name)
            if is_dir and entry.is_symlink():
                linked.add(entry.name)
        yield folder, dirs, names
        below = [name for name in dirs if name not in linked]
        if depth >= max_depth:
            if too_deep is not None:
                too_deep.extend(os.path.join(folder, name) for name in below)
            continue
        stack.extend((os.path.join(folder, name), depth + 1) for name in reversed(below))


def is_inside(path: str, root: str) -> bool:
    """Whether ``path`` resolves (symlinks followed) to ``root`` or below it."""
    try:
        return under(_real(path), os.path.realpath(root))
    except UnsafeFileError:
        return False


def _real(path: str) -> str:
    """``os.path.realpath``; UnsafeFileError when a link changes while it is resolved (a swap race)."""
    try:
        return os.path.realpath(path)
    except OSError:
        raise _changed(path) from None


def under(real: str, base: str) -> bool:
    """Whether the real path ``real`` is ``base`` or below it (both already resolved: no file is touched)."""
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


#: ``UnsafeFileError.reason`` of a path that resolves outside its root.
OUTSIDE = "it resolves outside the project"


def _outside(path: str, root: str, real: str) -> UnsafeFileError:
    return UnsafeFileError(f"{path} resolves to {real}, outside the project ({root}); ccmemory reads and writes "
                           "only files inside the project", OUTSIDE)


def inside_dir(path: str, root: str) -> str:
    """The real path of the directory ``path``, which must resolve inside ``root``; UnsafeFileError otherwise."""
    real = _real(path)
    if not under(real, os.path.realpath(root)):
        raise _outside(path, root, real)
    if not os.path.isdir(real):
        if not os.path.exists(real):
            raise UnsafeFileError(f"No folder at {path}; check the path", "there is no such folder")
        raise UnsafeFileError(f"{path} is not a directory", "it is not a directory")
    return real


def make_dirs(path: str, root: str) -> str:
    """Create the directory ``path`` and its missing parents inside ``root``; its real path.

    Every existing part is resolved first (a ``.claude`` or ``.claude/memory`` symlink to
    elsewhere is refused before anything is created), and new parts are made inside that
    real path, so nothing is ever created outside ``root``.
    """
    missing: list[str] = []
    current = os.path.abspath(path)
    while not os.path.lexists(current) and os.path.dirname(current) != current:
        missing.append(os.path.basename(current))
        current = os.path.dirname(current)
    real = inside_dir(current, root)
    for name in reversed(missing):
        real = os.path.join(real, name)
        try:
            os.mkdir(real)
        except FileExistsError:  # made meanwhile (maybe as a link): resolve and check it again
            real = inside_dir(real, root)
    return real


def open_fd(path: str, *, write: bool = False, root: str | None = None, follow: bool = True,
            flags: int = 0) -> int:
    """A blocking file descriptor on a regular file; ValidationError for anything else.

    ``follow=False`` refuses a symlink as the last component (``O_NOFOLLOW``). The open itself
    never blocks (``O_NONBLOCK``), so a FIFO is refused instead of waiting for a writer.
    ``flags`` adds open flags (``O_CREAT`` makes a missing file, 0644).

    ``root`` refuses a file whose real location is outside it, without a window between the
    check and the use: the file is opened first and the descriptor is then checked (a regular
    file; the real path of ``path`` is inside ``root`` *and* is the very file opened, same
    device and inode), so a symlink swapped in meanwhile is refused, never read. A write with
    a ``root`` never follows a final symlink and opens the name inside the real path of its
    directory, checked first, so nothing is created or truncated outside ``root``.
    """
    if "\0" in path:
        raise UnsafeFileError(f"{path!r} holds a NUL byte, which no file name can; check the path", "it holds a NUL byte")
    if root is not None and write:
        follow = False
        path = os.path.join(inside_dir(os.path.dirname(os.path.abspath(path)), root), os.path.basename(path))
    flags |= (os.O_WRONLY if write else os.O_RDONLY) | _NONBLOCK | _BINARY | (0 if follow else _NOFOLLOW)
    if not follow and os.path.islink(path):
        raise UnsafeFileError(f"{path} is a symbolic link; ccmemory does not follow it", "it is a symbolic link")
    try:
        fd = os.open(path, flags, 0o644)
    except FileNotFoundError as exc:
        raise UnsafeFileError(f"No file at {path}; check the path", "there is no such file", exc.errno) from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UnsafeFileError(f"Cannot open {path}: {reason}", reason, exc.errno) from None
    except UnicodeEncodeError:
        raise UnsafeFileError(f"{path!r} holds a lone surrogate, which no file name here can; check the path",
                              "it is not a valid name") from None
    try:
        info = os.fstat(fd)
        if root is not None:
            _check_opened(fd, info, path, root)
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file (a pipe, device or socket)"
            raise UnsafeFileError(f"{path} is {kind}; only regular files are used", f"it is {kind}")
        if _NONBLOCK:
            os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _check_opened(fd: int, info: os.stat_result, path: str, root: str) -> None:
    """The file open on ``fd`` (``info``, its fstat) lies inside ``root``.

    Where the system names an open file's path (``/proc/self/fd`` on Linux, ``F_GETPATH`` on
    macOS) that path is checked: it is the file actually opened, whatever links were swapped
    around it. Elsewhere ``path`` is resolved again and must be the very file opened (same
    device and inode, without following a last link).
    """
    opened = _opened_path(fd)
    if opened is not None:
        if opened.endswith(" (deleted)") or not os.path.isabs(opened):
            raise _changed(path)
        if not under(opened, os.path.realpath(root)):
            raise _outside(path, root, opened)
        return
    real = _real(path)
    if not under(real, os.path.realpath(root)):
        raise _outside(path, root, real)
    try:
        now = os.lstat(real)
    except OSError:
        raise _changed(path) from None
    if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
        raise _changed(path)


def _changed(path: str) -> UnsafeFileError:
    return UnsafeFileError(f"{path} changed while it was being opened (a link swapped in?); not used",
                           "it changed while it was being opened")


def _opened_path(fd: int) -> str | None:
    """The path of the file open on ``fd`` as the kernel knows it, or None where it cannot say."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass
    if sys.platform == "darwin":
        import fcntl

        try:
            return fcntl.fcntl(fd, fcntl.F_GETPATH, bytes(1024)).split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
        except (OSError, AttributeError):
            return None
    return None


def open_regular(path: str, *, root: str | None = None) -> BinaryIO:
    """Open a regular file for reading; ValidationError for anything else or a path outside ``root``."""
    return os.fdopen(open_fd(path, root=root), "rb")


def read_regular(path: str, max_bytes: int, *, root: str | None = None, follow: bool = True) -> bytes:
    """The whole content of a regular file of at most ``max_bytes``; ValidationError otherwise."""
    data = read_head(path, max_bytes + 1, root=root, follow=follow)
    if len(data) > max_bytes:
        raise ValidationError(f"{path} is larger than {max_bytes:,} bytes, the limit")
    return data


def read_head(path: str, max_bytes: int, *, root: str | None = None, follow: bool = True) -> bytes:
    """At most the first ``max_bytes`` of a regular file (a longer file is cut, not refused)."""
    with os.fdopen(open_fd(path, root=root, follow=follow), "rb") as handle:
        return handle.read(max_bytes)


def create_new(path: str, data: bytes, *, root: str) -> None:
    """Write a new file inside ``root`` (its folders made as needed); FileExistsError when anything is there.

    Never through a symlink, never outside ``root`` (see :func:`make_dirs`); a file left half
    written (disk full) is removed.
    """
    folder = make_dirs(os.path.dirname(os.path.abspath(path)), root)
    target = os.path.join(folder, os.path.basename(path))
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY, 0o644)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    except BaseException:
        os.remove(target)
        raise


def open_text_for_writing(path: str, *, append: bool = False) -> TextIO:
    """Open a regular file for writing text (created 0644 if missing), never through a symlink."""
    fd = open_fd(path, write=True, follow=False, flags=os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC))
    return os.fdopen(fd, "a" if append else "w", encoding="utf-8")


def replace_text(path: str, text: str, *, root: str | None = None) -> None:
    """Write ``path`` whole and in one step: a new private temporary file, then renamed over it
    (a rename replaces a symlink itself instead of writing where it points). With ``root``,
    the folder must resolve inside it, and both steps happen in its real path."""
    import tempfile

    folder = os.path.dirname(os.path.abspath(path))
    if root is not None:
        folder = inside_dir(folder, root)
        path = os.path.join(folder, os.path.basename(path))
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=".ccmemory-", suffix=".tmp")
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
    """The lines of an open binary file that start within its first ``max_total`` bytes.

    A line longer than ``max_line`` bytes is never held whole: ``None`` is yielded in its place
    as soon as its first ``max_line`` bytes are read (so a caller can count it, or stop: a file
    that is one endless line is refused at once), and the rest of it is read and dropped piece
    by piece. A file without a newline therefore costs at most ``max_line`` bytes of memory,
    and the whole read at most ``max_total + max_line`` (the line that starts before the cap is
    read to its end, or to ``max_line``, so it is not cut in two).
    """
    read = 0
    inside_long_line = False
    while read < max_total:
        raw = handle.readline(max_line)
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
