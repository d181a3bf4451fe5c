"""``ccmemory init``'s files: the templates under ``ccmemory/templates`` copied into a project, never overwriting.

``templates/knowledge/**`` goes to ``.claude/knowledge/`` (four folders and a
``gotchas.md`` that shows the format and the directives), ``templates/skills/**``
to ``.claude/skills/`` (memory-discover, memory-query, memory-save), and
``templates/claude/**`` to ``.claude/`` (``settings.json`` enabling the plugin
for the project, ``memory/.gitignore`` for the error log and lock files).
An existing file is left alone and reported as skipped; a template that cannot
be read or is damaged (:func:`damage`) is reported and skipped, the rest placed.
Nothing is written outside the project: a destination whose folder resolves
elsewhere (a ``.claude`` or ``.claude/memory`` symlink) is refused and reported,
and no file is written through a symlink (:func:`ccmemory.safe_files.create_new`).
"""

from __future__ import annotations

import errno
import json
import os
from dataclasses import dataclass
from importlib import resources
from typing import Any, Iterator

from .. import safe_files
from ..errors import CCMemoryError

#: template folder -> where it goes, relative to the project root
DESTINATIONS = (
    ("knowledge", os.path.join(".claude", "knowledge")),
    ("skills", os.path.join(".claude", "skills")),
    ("claude", ".claude"),
)


class WriteError(CCMemoryError):
    """A project file could not be written (read-only folder, disk full)."""


@dataclass
class Placed:
    path: str  # relative to the project root
    action: str  # created, skipped, failed
    note: str = ""


def _templates(folder: Any, relative: str = "") -> Iterator[tuple[str, Any]]:
    for item in sorted(folder.iterdir(), key=lambda entry: entry.name):
        name = f"{relative}/{item.name}" if relative else item.name
        if item.is_dir():
            yield from _templates(item, name)
        elif item.name != "__init__.py":
            yield name, item


def _write(root: str, path: str, data: bytes, relative: str) -> None:
    try:
        safe_files.create_new(path, data, root=root)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise WriteError(f"Insufficient disk space: could not write {relative}. Free some space and run "
                             "`ccmemory init` again (existing files are kept).") from exc
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise WriteError(f"Cannot write to {relative}: Permission denied. Check the folder's permissions "
                             "and run `ccmemory init` again.") from exc
        raise WriteError(f"Cannot write to {relative}: {exc.strerror or exc}") from exc


def damage(name: str, data: bytes) -> str | None:
    """Why a template's bytes are not what ccmemory ships (a corrupted template is skipped), or None.

    Every template is UTF-8 text without NUL bytes; ``.gitkeep`` is empty; a
    JSON template parses to an object; a skill opens with front matter naming
    it and saying when to use it; other markdown is not empty.
    """
    base = name.rsplit("/", 1)[-1]
    if base == ".gitkeep":
        return None if not data.strip() else "a .gitkeep should be empty"
    if b"\0" in data:
        return "it holds binary data"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"it is not UTF-8 text (byte {exc.start})"
    if base.endswith(".json"):
        try:
            parsed = json.loads(text)
        except ValueError as exc:
            return f"it is not valid JSON ({exc})"
        return None if isinstance(parsed, dict) else "it is not a JSON object"
    if base == "SKILL.md":
        head = text.split("\n---", 1)[0] if text.startswith("---\n") else ""
        if not head or "\n---" not in text or "name:" not in head or "description:" not in head:
            return "its front matter (name, description) is missing or not closed"
    if base.endswith(".md") and not text.strip():
        return "it is empty"
    return None


def planned(root: str) -> list[tuple[str, Any]]:
    """(path relative to the project, template resource) of every file ``copy`` would place."""
    base = resources.files("ccmemory") / "templates"
    items = []
    for source, target in DESTINATIONS:
        for name, item in _templates(base / source):
            items.append((os.path.join(target, *name.split("/")), item))
    return items


def copy(root: str, knowledge_dir: str | None = None) -> list[Placed]:
    """Copy every template that is not in the project yet; a template that cannot be read is skipped."""
    placed: list[Placed] = []
    knowledge_target = os.path.join(".claude", "knowledge")
    for relative, item in planned(root):
        if knowledge_dir and relative.startswith(knowledge_target + os.sep):
            relative = os.path.relpath(os.path.join(knowledge_dir, relative[len(knowledge_target) + 1:]), root)
        path = os.path.join(root, relative)
        if os.path.lexists(path):
            placed.append(Placed(relative, "skipped", f"Skipping existing: {relative}"))
            continue
        try:
            data = item.read_bytes()
        except OSError as exc:
            placed.append(Placed(relative, "failed", f"Template {relative} could not be read ({exc}); skipped. "
                                                     "Reinstall ccmemory to restore it."))
            continue
        broken = damage(relative.replace(os.sep, "/"), data)
        if broken:
            placed.append(Placed(relative, "failed", f"Template for {relative} is corrupted ({broken}); skipped. "
                                                     "Reinstall ccmemory to restore it."))
            continue
        try:
            _write(root, path, data, relative)
        except FileExistsError:
            placed.append(Placed(relative, "skipped", f"Skipping existing: {relative}"))
            continue
        except safe_files.UnsafeFileError as exc:
            placed.append(Placed(relative, "failed", f"Not written: {relative}: {exc}"))
            continue
        placed.append(Placed(relative, "created"))
    return placed
