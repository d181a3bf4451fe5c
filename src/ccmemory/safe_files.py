"""Reading and writing files that a payload or a tool argument names, without hanging or escaping.

Every path that comes from outside (a hook's ``transcript_path``, ``docs_ingest path=…``, the
project's ``CLAUDE.md``) goes through here:

* only **regular files**: a FIFO, a device (``/dev/zero``), a socket or a directory is refused
  before anything is read; opening uses ``O_NONBLOCK`` so even a FIFO cannot block the open;
* **bounded**: at most ``max_bytes`` are read, whatever the file claims;
* **inside a root** when one is given: the real path (symlinks resolved) must lie under the
  root's real path;
* writes never follow a symlink (``O_NOFOLLOW``) and go to a regular file only.

Standard library only: the Stop hook reads transcripts through :func:`open_regular`.
"""

from __future__ import annotations

import os
import stat

from .errors import ValidationError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_BINARY = getattr(os, "O_BINARY", 0)


def is_inside(path: str, root: str) -> bool:
    """Whether ``path`` resolves (symlinks followed) to ``root`` or below it."""
    real, base = os.path.realpath(path), os.path.realpath(root)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def open_regular(path: str, *, root: str | None = None) -> BinaryIO:
    """Open a regular file for reading; ValidationError for anything else or a path outside ``root``."""
    if root is not None and not is_inside(path, root):
        raise ValidationError(f"{path} is outside the project ({root}); only files inside it can be read")
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | _BINARY)
    except FileNotFoundError:
        raise ValidationError(f"No file at {path}; check the path") from None
    except OSError as exc:
        raise ValidationError(f"Cannot open {path}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file (a pipe, device or socket)"
            raise ValidationError(f"{path} is {kind}; only regular files can be read")
        if _NONBLOCK:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str, max_bytes: int, *, root: str | None = None) -> bytes:
    """The whole content of a regular file of at most ``max_bytes``; ValidationError otherwise."""
    with open_regular(path, root=root) as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValidationError(f"{path} is larger than {max_bytes:,} bytes, the limit")
    return data


def write_regular(path: str, data: bytes, *, root: str) -> None:
    """Replace the content of an existing regular file inside ``root``, never through a symlink.

    The file is opened with ``O_NOFOLLOW`` (a symlink, even one pointing inside the project, is
    refused) and ``O_NONBLOCK`` (a FIFO cannot block), checked to be a regular file, then
    truncated and written.
    """
    if not is_inside(os.path.dirname(os.path.abspath(path)), root):
        raise ValidationError(f"{path} is outside the project ({root}); nothing was written")
    if os.path.islink(path):
        raise ValidationError(f"{path} is a symbolic link; ccmemory writes only regular files it does not follow")
    try:
        fd = os.open(path, os.O_WRONLY | _NOFOLLOW | _NONBLOCK | _BINARY)
    except OSError as exc:
        raise ValidationError(f"Cannot open {path} for writing: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValidationError(f"{path} is not a regular file; nothing was written")
        if _NONBLOCK:
            os.set_blocking(fd, True)
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    finally:
        os.close(fd)
