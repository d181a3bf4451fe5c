"""Finding and reading the knowledge files, and every way one can be unusable.

``*.md`` files anywhere under the knowledge directory, except names starting
with ``_`` and folders named in ``ignored_dirs`` or starting with a dot.
Symbolic links are followed while they stay inside the project: a link (file or
folder) whose real path is outside it is skipped with a warning, and a link back
into a folder already being walked (a cycle) too; a folder two links lead to is read once,
and the walk stops at :data:`ccmemory.safe_files.MAX_WALK_DEPTH` levels and :data:`MAX_FOLDERS` folders. A file or folder
whose name is not UTF-8 is skipped with a warning (the store holds text). A file is read only as a
regular file whose real path is inside the project, checked on the opened file
(:func:`ccmemory.safe_files.open_fd`). A file that cannot be read (permission
denied) is an error for that file only. Empty and binary files are skipped
with a warning, files over 1 MB are read with a warning, files over
:data:`MAX_FILE_BYTES` are skipped without being read whole, and a file that is not
UTF-8 is read as cp1252 (or Latin-1) with a warning.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field

from .. import safe_files
from ..errors import ValidationError

LARGE_FILE_BYTES = 1024 * 1024
#: A knowledge file is read only up to this (the documents limit): a repository's file can be any size.
MAX_FILE_BYTES = 5 * 1024 * 1024
_BINARY_PROBE_BYTES = 8192
#: Folders listed in all (levels below the knowledge folder: :data:`ccmemory.safe_files.MAX_WALK_DEPTH`, as every walk).
MAX_FOLDERS = 10_000


@dataclass
class Found:
    """The markdown files of a knowledge tree (relative '/' paths, sorted) and what was skipped on the way."""

    files: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # folders (relative) that could not be listed


@dataclass
class Read:
    """A file's text and bytes, or why it is skipped (``skip``: a warning; ``error``: it could not be read)."""

    text: str | None = None
    data: bytes = b""
    warnings: list[str] = field(default_factory=list)
    skip: str | None = None
    error: str | None = None


def find(root: str, ignored_dirs: tuple[str, ...] = (), *, project: str | None = None) -> Found:
    """Every indexable markdown file under ``root`` whose real path is inside ``project`` (default: ``root``).

    The tree is the repository's, so its shape is hostile too: each real folder is listed once
    however many links lead to it (two links per folder, 40 deep, would otherwise make 2^40 paths),
    at most :data:`ccmemory.safe_files.MAX_WALK_DEPTH` levels down and :data:`MAX_FOLDERS` folders in all, without recursion.
    A folder left unlisted is in :attr:`Found.unreadable` (``""`` when the walk stopped early), so
    the index keeps what it knew of the files there instead of deleting it.
    """
    found = Found()
    ignored = set(ignored_dirs)
    bound = os.path.realpath(project or root)
    try:
        top = os.stat(root)
    except OSError as exc:
        found.errors.append(f"Cannot read {root}: {exc.strerror or exc}")
        return found
    seen: dict[tuple[int, int], str] = {(top.st_dev, top.st_ino): ""}
    # Depth first in name order, as the files are listed: a stack of (folder, its relative path, ancestors).
    stack: list[tuple[str, str, frozenset[tuple[int, int]]]] = [(root, "", frozenset(seen))]
    while stack:
        folder, relative, active = stack.pop()
        entries = _listing(folder, relative, found)
        if entries is None:
            continue
        below: list[tuple[str, str, frozenset[tuple[int, int]]]] = []
        for entry in entries:
            path = f"{relative}/{entry.name}" if relative else entry.name
            if not _is_text(entry.name):
                shown = path.encode("utf-8", "backslashreplace").decode("utf-8")
                found.warnings.append(f"Name that is not UTF-8 skipped: {shown} (rename it to index it)")
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
                is_file = not is_dir and entry.is_file(follow_symlinks=True)
            except OSError as exc:  # ELOOP on a link to itself, or an unreadable link
                found.warnings.append(f"Unreadable link skipped: {path} ({exc.strerror or exc})")
                continue
            if (is_dir or is_file) and entry.is_symlink() and not safe_files.is_inside(entry.path, bound):
                if is_dir or entry.name.lower().endswith(".md"):
                    found.warnings.append(f"Link to outside the project skipped: {path} (ccmemory reads only "
                                          "files inside the project)")
                continue
            if is_dir:
                if entry.name.startswith(".") or entry.name in ignored:
                    continue
                try:
                    info = os.stat(entry.path)
                except OSError as exc:
                    found.warnings.append(f"Unreadable folder skipped: {path} ({exc.strerror or exc})")
                    continue
                key = (info.st_dev, info.st_ino)
                if key in active:
                    found.warnings.append(f"Circular symlink skipped: {path}")
                elif key in seen:
                    found.warnings.append(f"Folder read already as {seen[key] or '.'}/ skipped: {path}")
                elif path.count("/") >= safe_files.MAX_WALK_DEPTH:
                    found.warnings.append(f"Folder more than {safe_files.MAX_WALK_DEPTH} levels deep skipped: {path}")
                    found.unreadable.append(path)
                elif len(seen) >= MAX_FOLDERS:
                    found.warnings.append(f"Stopped at {MAX_FOLDERS} folders: {path} and the folders after it were "
                                          "not read (what was indexed from them is kept)")
                    found.unreadable.append("")
                    return found
                else:
                    seen[key] = path
                    below.append((entry.path, path, active | {key}))
            elif is_file and entry.name.lower().endswith(".md") and not entry.name.startswith("_"):
                found.files.append(path)
            elif not is_file and not is_dir and entry.is_symlink() and entry.name.lower().endswith(".md"):
                found.warnings.append(f"Broken link skipped: {path}")
        stack.extend(reversed(below))
    found.files.sort(key=lambda path: path.split("/"))
    return found


def _is_text(name: str) -> bool:
    """Whether a file name is text: a name that is not UTF-8 comes as surrogates, which the store cannot hold."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _listing(folder: str, relative: str, found: Found) -> list[os.DirEntry[str]] | None:
    """The entries of ``folder`` in name order; None, with the reason noted, when it cannot be listed."""
    try:
        with os.scandir(folder) as scan:
            return sorted(scan, key=lambda entry: entry.name)
    except PermissionError:
        found.errors.append(f"Permission denied: {relative or '.'}/ (skipped; check the folder's permissions)")
    except OSError as exc:
        found.errors.append(f"Cannot read folder {relative or '.'}/: {exc.strerror or exc}")
    found.unreadable.append(relative)
    return None


def decode(data: bytes) -> tuple[str, str | None]:
    """The text of ``data`` and, when it is not UTF-8, the encoding it was read with."""
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


def read(path: str, relative: str, project: str) -> Read:
    """Read one knowledge file (a regular file inside ``project``), classifying what makes it unusable."""
    try:
        data = safe_files.read_head(path, MAX_FILE_BYTES + 1, root=project)
    except safe_files.UnsafeFileError as exc:
        if exc.code in (errno.EACCES, errno.EPERM):
            return Read(error=f"Permission denied: {relative} (not indexed; check the file's permissions)")
        if exc.code is None:  # refused, not failed: outside the project, a FIFO or device, swapped while opened
            return Read(skip=f"Skipped {relative}: {exc.reason}; ccmemory reads only regular files inside the "
                             "project")
        return Read(error=f"Cannot read {relative}: {exc.reason}")
    except (OSError, ValidationError) as exc:
        return Read(error=f"Cannot read {relative}: {exc}")
    if len(data) > MAX_FILE_BYTES:
        return Read(skip=f"File too large: {relative} (over {MAX_FILE_BYTES // 1024 // 1024} MB, not indexed; "
                         "split it into smaller files)")
    result = Read(data=data)
    if b"\0" in data[:_BINARY_PROBE_BYTES]:
        result.skip = f"Binary file skipped: {relative}"
        return result
    text, encoding = decode(data)
    if not text.strip():
        result.skip = f"Empty file: {relative}"
        return result
    if encoding:
        result.warnings.append(f"Not UTF-8: {relative} (read as {encoding}; save it as UTF-8)")
    if len(data) > LARGE_FILE_BYTES:
        result.warnings.append(f"Large file ({len(data) / 1024 / 1024:.1f} MB): {relative} (indexed; "
                               "consider splitting it into smaller files)")
    result.text = text
    return result
