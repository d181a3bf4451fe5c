"""What every importer shares: the report, a bounded walk over a folder, and the writer that dedupes.

A source is untrusted (docs/security.md): its folder is walked without following a link out of
it, only regular files are read, each up to a size cap and at most :data:`MAX_FILES` of them;
a file that cannot be used (binary, a FIFO, a link leading elsewhere, too large, not UTF-8) is
named in the report with the reason, never fatal. Every text goes through the redaction on the
way in (``<private>`` spans and secrets removed, as live capture does).

Idempotence: each memory an importer writes carries ``imported_from`` (the importer's source
word, also the memory's ``source``) and ``imported_item`` (a stable key of the source item) in
its metadata. A key already stored in the project, deleted memories included, is not written
again, so running an import twice adds nothing, and a memory you deleted stays deleted.
"""

from __future__ import annotations

import os
import stat
import time
from contextlib import nullcontext
from typing import Any, ContextManager, Iterable

from .. import clock, excerpts, memories, projects, safe_files
from ..db import Database
from ..errors import ValidationError
from ..redaction import redact, redact_fields

#: Files looked at in one source folder; the rest are reported as not read.
MAX_FILES = 10_000
#: Folders deep below the source folder that are still walked.
MAX_DEPTH = 32
#: Problems and skipped items listed one by one in a report (all are counted).
MAX_LISTED = 200
MAX_TAGS = 20
MAX_TAG_CHARS = 60
MAX_FILES_NAMED = 50


class Report:
    """What an import mapped, what it found already there, and what it left out and why.

    ``skipped``: source items read but not imported (by a rule: empty, a project it cannot place,
    a name the memory tool refuses); ``problems``: files or rows that could not be read at all
    (binary, a FIFO, a link out of the folder, too large, corrupt).
    """

    def __init__(self, source: str, *, dry_run: bool = False) -> None:
        self.source = source
        self.dry_run = dry_run
        self.added: dict[str, int] = {}
        self.unchanged: dict[str, int] = {}
        self.projects: dict[str, int] = {}
        self.user_files: list[str] = []
        self.renamed: list[dict[str, str]] = []
        self.redacted = 0
        self.cut = 0
        self.skipped: list[dict[str, str]] = []
        self.skipped_count = 0
        self.problems: list[dict[str, str]] = []
        self.problem_count = 0

    def count(self, table: dict[str, int], kind: str, number: int = 1) -> None:
        table[kind] = table.get(kind, 0) + number

    def skip(self, item: str, reason: str) -> None:
        self.skipped_count += 1
        if len(self.skipped) < MAX_LISTED:
            self.skipped.append({"item": item, "reason": reason})

    def problem(self, path: str, reason: str) -> None:
        self.problem_count += 1
        if len(self.problems) < MAX_LISTED:
            self.problems.append({"path": path, "reason": reason})

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "dry_run": self.dry_run, "added": self.added, "unchanged": self.unchanged,
                "projects": self.projects, "user_files": self.user_files,
                "renamed": self.renamed, "redacted": self.redacted,
                "cut": self.cut, "skipped": self.skipped, "skipped_count": self.skipped_count,
                "problems": self.problems, "problem_count": self.problem_count}


def source_folder(path: str) -> str:
    """The real path of a source folder; ValidationError when it is not one."""
    real = os.path.realpath(path)
    if not os.path.isdir(real):
        raise ValidationError(f"{path} is not a folder; name the folder to import from")
    return real


def walk(root: str, report: Report, *, suffixes: tuple[str, ...] | None = None) -> list[tuple[str, str]]:
    """``(relative path, path)`` of the regular files under the real folder ``root``, sorted, hidden names left out.

    A link is used only when it resolves inside ``root`` (and a link to a folder is never
    followed: what it holds is reached by its own path or not at all); anything else, a FIFO, a
    device or a socket, is reported as a problem. ``suffixes`` keeps only names ending so (the
    others are reported as skipped). At most :data:`MAX_FILES` files, :data:`MAX_DEPTH` levels.
    """
    found: list[tuple[str, str]] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError as exc:
            report.problem(_rel(folder, root), f"cannot list it: {exc.strerror or exc}")
            continue
        for entry in entries:
            rel = _rel(entry.path, root)
            if entry.name.startswith("."):
                continue
            try:
                info = os.lstat(entry.path)
                if stat.S_ISLNK(info.st_mode):
                    if not safe_files.is_inside(entry.path, root):
                        report.problem(rel, "it is a link that leads outside the folder")
                        continue
                    info = os.stat(entry.path)
                    if stat.S_ISDIR(info.st_mode):
                        report.skip(rel, "it is a link to a folder; not followed")
                        continue
            except OSError as exc:
                report.problem(rel, f"cannot read it: {exc.strerror or exc}")
                continue
            if stat.S_ISDIR(info.st_mode):
                if rel.count("/") + 1 < MAX_DEPTH:
                    stack.append(entry.path)
                else:
                    report.problem(rel, f"it is more than {MAX_DEPTH} folders deep; not read")
                continue
            if not stat.S_ISREG(info.st_mode):
                report.problem(rel, "it is not a regular file (a pipe, device or socket)")
                continue
            if suffixes is not None and not entry.name.lower().endswith(suffixes):
                report.skip(rel, f"not a {'/'.join(suffixes)} file")
                continue
            if len(found) >= MAX_FILES:
                report.problem(rel, f"the folder holds more than {MAX_FILES:,} files; this one and the rest are not read")
                return sorted(found)
            found.append((rel, entry.path))
    return sorted(found)


def _rel(path: str, root: str) -> str:
    return os.path.relpath(path, root).replace(os.sep, "/")


def read_text(path: str, rel: str, root: str, max_bytes: int, report: Report) -> str | None:
    """The UTF-8 text of a file inside ``root`` (checked on the opened file), or None with the reason reported."""
    try:
        data = safe_files.read_regular(path, max_bytes, root=root)
    except ValidationError as exc:
        reason = getattr(exc, "reason", None) or f"it is larger than {max_bytes:,} bytes, the limit"
        report.problem(rel, reason)
        return None
    except OSError as exc:
        report.problem(rel, f"cannot read it: {exc.strerror or exc}")
        return None
    if b"\0" in data:
        report.problem(rel, "it is a binary file")
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        report.problem(rel, "it is not UTF-8 text")
        return None


def file_time(path: str) -> str | None:
    """A file's modification time in the store's format, or None when it cannot be read."""
    try:
        moment = os.stat(path).st_mtime
    except OSError:
        return None
    return epoch_time(moment * 1000)


def epoch_time(milliseconds: Any) -> str | None:
    """Milliseconds since 1970 in the store's format; None for anything else or a time not yet come."""
    if isinstance(milliseconds, bool) or not isinstance(milliseconds, (int, float)):
        return None
    if not 0 <= milliseconds <= time.time() * 1000 + 600_000:
        return None
    seconds = int(milliseconds // 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + ".%03dZ" % (int(milliseconds) % 1000)


def clean_tags(values: Iterable[Any]) -> list[str]:
    """Up to :data:`MAX_TAGS` short, distinct, non-empty tags (commas would split a tag in two)."""
    tags: list[str] = []
    for value in values:
        if isinstance(value, str):
            tag = value.strip().replace(",", " ")[:MAX_TAG_CHARS].strip()
            if tag and tag not in tags:
                tags.append(tag)
        if len(tags) >= MAX_TAGS:
            break
    return tags


class Writer:
    """Writes one importer's memories: redacted, cut to the store's limit, each source item at most once."""

    def __init__(self, db: Database, source: str, report: Report) -> None:
        self.db = db
        self.source = source
        self.report = report
        self._keys: dict[int, set[str]] = {}
        self._paths: dict[int, str] = {}

    @property
    def dry_run(self) -> bool:
        return self.report.dry_run

    def project(self, path: str) -> int:
        """The id of the project containing ``path``, created on first sight; in a dry run a new project is not
        created and gets a negative stand-in id instead."""
        root = projects.project_root(path)
        found = projects.project_id(self.db, root, create=not self.dry_run)
        if found is None:
            found = next((key for key, known in self._paths.items() if known == root and key < 0),
                         -1 - len(self._paths))
        self._paths[found] = root
        return found

    def project_path(self, project_id: int) -> str:
        """The path of a project :meth:`project` returned."""
        return self._paths[project_id]

    def batch(self) -> ContextManager[Any]:
        """One transaction around a source item's memories (none in a dry run): all of them or nothing. Writers
        waiting for the lock (a hook's capture) go first (:meth:`ccmemory.db.Database.give_way`)."""
        if self.dry_run:
            return nullcontext()
        self.db.give_way()
        return self.db.transaction()

    def _known(self, project_id: int) -> set[str]:
        if project_id not in self._keys:
            rows = [] if project_id < 0 else self.db.rows(
                "SELECT json_extract(metadata, '$.imported_item') AS item FROM memories "
                "WHERE project_id = ? AND source = ?", (project_id, self.source))
            self._keys[project_id] = {row["item"] for row in rows if isinstance(row["item"], str)}
        return self._keys[project_id]

    def add(self, project_id: int, item: str, content: str, *, when: str | None = None,
            category: str | None = None, tags: Iterable[Any] = (), files: Iterable[Any] = (),
            metadata: dict[str, Any] | None = None, kind: str = "memory") -> bool:
        """Store one memory for the source item ``item`` unless it is already here; True when (to be) added."""
        known = self._known(project_id)
        if item in known:
            self.report.count(self.report.unchanged, kind)
            return False
        marks = {"imported_from": self.source, "imported_item": item}
        if redact_fields(marks) != marks:
            self.report.skip(item, "its name looks like a secret; not imported")
            return False
        text = content.strip()
        if len(text) > memories.MAX_CONTENT_CHARS:
            text = excerpts.cut(text, memories.MAX_CONTENT_CHARS)
            self.report.cut += 1
        clean = redact(text)
        if clean != text:
            self.report.redacted += 1
        if not clean.strip():
            self.report.skip(item, "nothing is left once <private> spans are removed" if text else "it is empty")
            return False
        if when is not None and when > clock.now():
            when = None
        if not self.dry_run:
            try:
                memories.add(self.db, project_id=project_id, content=text, tier="project", category=category,
                             tags=clean_tags(tags), files=[f for f in files if isinstance(f, str)][:MAX_FILES_NAMED],
                             source=self.source, metadata={**(metadata or {}), **marks}, created_at=when)
            except ValidationError as exc:
                self.report.skip(item, str(exc))
                return False
        known.add(item)
        self.report.count(self.report.added, kind)
        where = self._paths[project_id]
        self.report.projects[where] = self.report.projects.get(where, 0) + 1
        return True
