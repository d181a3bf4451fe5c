"""``ccmemory index``: the knowledge markdown of a project into memories, incrementally.

Each file's sha256 (over its bytes and the chunking settings) is kept in
``knowledge_files``; an unchanged file is skipped, a changed one has its old
entries removed and new ones added in one transaction, and a file that is gone
takes its entries with it. ``force`` re-reads every file. Entries are
memories with source ``knowledge`` (see :mod:`ccmemory.knowledge`), so they are
embedded by :func:`ccmemory.embeddings.embed_pending` and found by the same search.

The files are the repository's, so their number of sections is too: entries are capped per file
(:data:`MAX_FILE_ENTRIES`), per project (:data:`MAX_PROJECT_ENTRIES`) and in bytes of text, as a
share of the project's storage budget (:func:`max_project_bytes`). A file past a cap keeps its
first entries, with a warning naming the file, the cap and what to do; its sections are never
read past the cap, so a flood costs what the cap does. A run given ``max_new_entries`` (the git
hook) leaves a file that would take it past that as it was, with a warning, for ``ccmemory index``.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import clock, memories, safe_files
from ..db import Database
from ..errors import NotFoundError, ValidationError
from ..vocabulary import KNOWLEDGE_SOURCE
from . import files, sections
from .settings import ProjectSettings

#: Bump when the way files become entries changes, so every file is indexed again.
PARSER_VERSION = 1
#: Most entries (sections, and the parts of a long one) taken from one file. Real knowledge files hold tens to a few
#: thousand sections; one past this is a dump or a flood (442,727 one-line sections in 5 MB took 517 s to index and
#: 405 MB of store). 5,000 entries are stored in about 5 s, plus their vectors.
MAX_FILE_ENTRIES = 5_000
#: Most entries a project's knowledge holds, every file together: several times the largest real knowledge folders,
#: while a full ``ccmemory index --force`` stays around 20 s of storing, plus the vectors.
MAX_PROJECT_ENTRIES = 20_000
#: The share of a project's storage budget (``storage.project_budget_mb``, 50 MB by default) its knowledge text may
#: fill. The store spends about twice the text plus 1 KB an entry (vector, full-text index, metadata), so 10 MB of
#: text in at most 20,000 entries stays under 50 MB. The budget never drops knowledge (the next index would bring it
#: back), so knowledge past its share would make it drop the project's captured memories instead.
KNOWLEDGE_BUDGET_SHARE = 0.2
#: sha256 of every ``gotchas.md`` that ``ccmemory init`` ever shipped. Its examples are invented: an
#: unedited copy is never indexed, so they cannot come back from search as the project's facts.
#: (Today's template keeps its example inside a comment; the first release's did not.)
UNEDITED_TEMPLATES = frozenset({
    "9892fe320bef3ea580d4731e9083b4b68cc256b670dae98a868fcd4dcf893cb0",
})
#: Knowledge folders (first path component) and the memory category of their entries.
CATEGORY_OF_FOLDER = {
    "architecture": "architecture", "components": "component", "component": "component", "domain": "domain",
    "patterns": "pattern", "pattern": "pattern", "gotchas": "gotcha", "gotcha": "gotcha",
    "discoveries": "discovery", "discovery": "discovery",
}


class KnowledgeDirMissing(NotFoundError):
    """The project has no knowledge directory yet."""


class KnowledgeDirOutside(ValidationError):
    """The knowledge directory resolves outside the project (a symbolic link): nothing is read from it."""


@dataclass
class FileOutcome:
    path: str
    action: str  # indexed, unchanged, skipped, failed, removed, deferred (left for a run without max_new_entries)
    entries: int = 0
    note: str = ""


@dataclass
class IndexReport:
    """What an index run did (or, for a dry run, would do)."""

    knowledge_dir: str
    dry_run: bool = False
    outcomes: list[FileOutcome] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    entries_created: int = 0
    entries_removed: int = 0
    embedded: int = 0
    seconds: float = 0.0

    def count(self, action: str) -> int:
        return sum(1 for outcome in self.outcomes if outcome.action == action)

    @property
    def exit_code(self) -> int:
        """0 success, 2 completed with warnings or per-file errors (fatal errors raise instead)."""
        return 2 if self.warnings or self.errors else 0

    def summary(self) -> str:
        verb = "Would index" if self.dry_run else "Indexed"
        created = "would be created" if self.dry_run else "created"
        parts = [f"{self.count('unchanged')} unchanged", f"{self.count('skipped')} skipped"]
        if self.count("failed"):
            parts.append(f"{self.count('failed')} failed")
        if self.count("removed"):
            parts.append(f"{self.count('removed')} removed")
        if self.count("deferred"):
            parts.append(f"{self.count('deferred')} left for `ccmemory index`")
        return (f"{verb} {self.count('indexed')} file(s) ({', '.join(parts)}): {self.entries_created} entries "
                f"{created}, {self.entries_removed} removed in {self.seconds:.1f}s")

    def to_dict(self) -> dict[str, Any]:
        return {
            "knowledge_dir": self.knowledge_dir, "dry_run": self.dry_run,
            "files": [outcome.__dict__ for outcome in self.outcomes],
            "files_indexed": self.count("indexed"), "files_unchanged": self.count("unchanged"),
            "files_skipped": self.count("skipped"), "files_failed": self.count("failed"),
            "entries_created": self.entries_created, "entries_removed": self.entries_removed,
            "embedded": self.embedded, "seconds": round(self.seconds, 3),
            "warnings": self.warnings, "errors": self.errors, "exit_code": self.exit_code,
        }


def category_of(path: str) -> str:
    """The memory category of a knowledge file, from its folder (or its name, e.g. ``gotchas.md``)."""
    first = path.split("/", 1)[0]
    name = first[:-3] if first.lower().endswith(".md") else first
    return CATEGORY_OF_FOLDER.get(name.lower(), "general")


def _fits(settings: ProjectSettings) -> tuple[Callable[[str], bool], str]:
    """The entry-size test (characters and the embedder's tokens) and a key describing it."""
    from .. import tokens

    limit = settings.chunk_size
    exact = tokens.tokenizer() is not None

    def fits(text: str) -> bool:
        return len(text) < limit and tokens.count(text) <= tokens.CONTENT_TOKENS

    return fits, f"v{PARSER_VERSION}:{limit}:{tokens.CONTENT_TOKENS}:{int(exact)}"


def _entries_of(db: Database, project_id: int, path: str) -> list[str]:
    return [row["id"] for row in db.rows(
        "SELECT id FROM memories WHERE project_id = ? AND source = ? AND json_extract(metadata, '$.knowledge.file') = ?",
        (project_id, KNOWLEDGE_SOURCE, path))]


def _remove_file(db: Database, project_id: int, path: str) -> int:
    """Delete a file's entries and its row; returns how many entries went."""
    ids = _entries_of(db, project_id, path)
    with db.transaction():
        for memory_id in ids:
            db.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
        db.execute("DELETE FROM knowledge_files WHERE project_id = ? AND path = ?", (project_id, path))
    return len(ids)


def _store_file(db: Database, project_id: int, path: str, digest: str, parsed: sections.ParsedFile) -> tuple[int, int]:
    """Replace a file's entries with ``parsed``'s in one transaction; (created, removed)."""
    category = category_of(path)
    with db.transaction():
        removed = 0
        for memory_id in _entries_of(db, project_id, path):
            db.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
            removed += 1
        for entry in parsed.entries:
            memories.add(
                db, project_id=project_id, content=entry.content, sector="semantic", tier="project",
                category=category, tags=entry.keywords, source=KNOWLEDGE_SOURCE,
                metadata={"knowledge": {"file": path, "anchor": entry.anchor, "heading": entry.heading,
                                        "title": entry.title, "keywords": entry.keywords, "part": entry.part,
                                        "parts": entry.parts}},
            )
        db.execute(
            "INSERT INTO knowledge_files(project_id, path, content_hash, entries, indexed_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT(project_id, path) DO UPDATE SET content_hash = excluded.content_hash, "
            "entries = excluded.entries, indexed_at = excluded.indexed_at",
            (project_id, path, digest, len(parsed.entries), clock.now()),
        )
    return len(parsed.entries), removed


def _known(db: Database, project_id: int) -> dict[str, dict[str, Any]]:
    """The indexed files of a project, with how many entries each still has in the store and their bytes of text."""
    rows = db.rows("SELECT path, content_hash, entries FROM knowledge_files WHERE project_id = ?", (project_id,))
    counts = {row["file"]: (row["n"], row["bytes"] or 0) for row in db.rows(
        "SELECT json_extract(metadata, '$.knowledge.file') AS file, COUNT(*) AS n, "
        "SUM(length(CAST(content AS BLOB))) AS bytes FROM memories "
        "WHERE project_id = ? AND source = ? AND is_deleted = 0 GROUP BY file", (project_id, KNOWLEDGE_SOURCE))}
    known = {}
    for row in rows:
        present, size = counts.get(row["path"], (0, 0))
        known[row["path"]] = {**row, "present": present, "bytes": size}
    return known


def max_project_bytes() -> int:
    """The bytes of entry text a project's knowledge may hold: :data:`KNOWLEDGE_BUDGET_SHARE` of the user's
    ``storage.project_budget_mb``."""
    from .. import budget, config

    return int(budget.limits(config.load())[1] * KNOWLEDGE_BUDGET_SHARE)


class _Room:
    """What the project's knowledge holds, file by file, against :data:`MAX_PROJECT_ENTRIES` and its bytes."""

    def __init__(self, held: dict[str, tuple[int, int]], max_bytes: int) -> None:
        self.held = held  # path -> (entries, bytes) in the store
        self.max_bytes = max_bytes
        self.entries = sum(entries for entries, _ in held.values())
        self.bytes = sum(size for _, size in held.values())

    def left(self, path: str) -> tuple[int, int]:
        """(entries, bytes) ``path`` may hold, the other files' staying as they are."""
        entries, size = self.held.get(path, (0, 0))
        return MAX_PROJECT_ENTRIES - (self.entries - entries), self.max_bytes - (self.bytes - size)

    def put(self, path: str, entries: list[sections.Entry]) -> None:
        old_entries, old_bytes = self.held.get(path, (0, 0))
        size = sum(_text_bytes(entry) for entry in entries)
        self.held[path] = (len(entries), size)
        self.entries += len(entries) - old_entries
        self.bytes += size - old_bytes


def _text_bytes(entry: sections.Entry) -> int:
    """The bytes of an entry's text as the store counts them (``length(CAST(content AS BLOB))``)."""
    return len(entry.content.encode("utf-8", "surrogatepass"))


def _within_bytes(entries: list[sections.Entry], room: int) -> list[sections.Entry]:
    """The first of ``entries`` whose text together fits in ``room`` bytes."""
    total = 0
    for number, entry in enumerate(entries):
        total += _text_bytes(entry)
        if total > room:
            return entries[:number]
    return entries


def _capped(path: str, parsed: sections.ParsedFile, limit: int, left: tuple[int, int], max_bytes: int) -> str | None:
    """Keep only the entries of ``parsed`` within the caps (``limit`` entries, the bytes ``left``); the warning
    that says which cap cut the file and what to do, or None when nothing was cut."""
    taken = _within_bytes(parsed.entries, left[1])
    by_bytes = len(taken) < len(parsed.entries)
    if not by_bytes and not parsed.cut:
        return None
    parsed.entries = taken
    kept = f"only its first {len(taken):,} entries are indexed" if taken else "not indexed"
    if by_bytes:
        return (f"{path}: {kept}: a project's knowledge text may fill {max_bytes / 1e6:.1f} MB, "
                f"{KNOWLEDGE_BUDGET_SHARE:.0%} of its storage budget (storage.project_budget_mb), and its other files "
                "hold the rest. Remove or split out what need not be searched (or raise storage.project_budget_mb), "
                "then run `ccmemory index --force`")
    if limit == MAX_FILE_ENTRIES:
        return (f"{path}: more than {MAX_FILE_ENTRIES:,} entries (sections, and the parts of long ones); {kept}, the "
                "most one file gives. Split it into smaller files, or mark a generated one <!-- vector-index: false -->")
    return (f"{path}: {kept}: a project's knowledge holds at most {MAX_PROJECT_ENTRIES:,} entries, and its other "
            "files hold the rest. Remove or split out what need not be searched, then run `ccmemory index --force`")


def index(
    db: Database,
    project_id: int,
    settings: ProjectSettings,
    *,
    force: bool = False,
    dry_run: bool = False,
    max_new_entries: int | None = None,
    on_start: Callable[[int], None] | None = None,
    on_file: Callable[[FileOutcome], None] | None = None,
) -> IndexReport:
    """Bring the project's knowledge entries in line with its markdown; embedding is left to the caller.

    Entries are capped (see the module). With ``max_new_entries`` the run creates at most that many:
    a changed file with more than are left is ``deferred``, kept as it was for the next run without it.

    Raises :class:`KnowledgeDirMissing` when the knowledge directory does not exist, and
    :class:`KnowledgeDirOutside` when it resolves outside the project.
    """
    started = time.perf_counter()
    root = settings.knowledge_dir
    if not os.path.isdir(root):
        raise KnowledgeDirMissing(f"Knowledge directory not found. Run 'ccmemory init' first. (Looked in {root}.)")
    if not safe_files.is_inside(root, settings.root):
        raise KnowledgeDirOutside(f"The knowledge directory {root} resolves to {os.path.realpath(root)}, outside the "
                                  f"project {settings.root}; nothing was indexed. ccmemory reads only files inside "
                                  "the project: make it a folder of the project, not a link to elsewhere.")
    report = IndexReport(knowledge_dir=root, dry_run=dry_run)
    report.warnings.extend(settings.problems)
    found = files.find(root, settings.ignored_dirs, project=settings.root)
    report.warnings.extend(found.warnings)
    report.errors.extend(found.errors)
    fits, settings_key = _fits(settings)
    known = _known(db, project_id)
    max_bytes = max_project_bytes()
    room = _Room({path: (known[path]["present"], known[path]["bytes"]) for path in found.files if path in known},
                 max_bytes)
    if on_start:
        on_start(len(found.files))

    def done(outcome: FileOutcome) -> None:
        report.outcomes.append(outcome)
        if on_file:
            on_file(outcome)

    def skip(path: str, previous: dict[str, Any] | None, note: str) -> None:
        """The file gives no entries: those it gave before go (a dry run only counts)."""
        report.entries_removed += 0 if dry_run or not previous else _remove_file(db, project_id, path)
        room.put(path, [])
        done(FileOutcome(path, "skipped", note=note))

    for path in found.files:
        loaded = files.read(os.path.join(root, *path.split("/")), path, settings.root)
        if loaded.error:
            report.errors.append(loaded.error)
            done(FileOutcome(path, "failed", note=loaded.error))
            continue
        digest = hashlib.sha256(settings_key.encode() + b"\0" + loaded.data).hexdigest()
        previous = known.get(path)
        if hashlib.sha256(loaded.data).hexdigest() in UNEDITED_TEMPLATES:
            skip(path, previous, f"Skipping {path}: the unedited template (its examples are not this project's); "
                                 "write your own entries, then index again")
            continue
        if (not force and previous and previous["content_hash"] == digest
                and previous["present"] == previous["entries"]):
            done(FileOutcome(path, "unchanged", previous["entries"], f"Skipping unchanged: {path}"))
            continue
        if loaded.skip:
            report.warnings.append(loaded.skip)
            skip(path, previous, loaded.skip)
            continue
        left = room.left(path)
        limit = max(0, min(MAX_FILE_ENTRIES, left[0]))
        new_left = None if max_new_entries is None else max(0, max_new_entries - report.entries_created)
        parsed = sections.parse(loaded.text or "", path, fits=fits,
                                max_entries=limit if new_left is None else min(limit, new_left))
        if parsed.cut and new_left is not None and new_left < limit and parsed.indexed:
            report.warnings.append(f"{path}: not indexed this time: it has more than the {new_left:,} entries this run "
                                   f"may still create (at most {max_new_entries:,} a run, so a commit is not held up); "
                                   "what was indexed of it before stays. Run `ccmemory index` to index it")
            done(FileOutcome(path, "deferred", note=f"Left for `ccmemory index`: {path}"))
            continue
        report.warnings.extend(loaded.warnings)
        report.warnings.extend(f"{path}: {warning}" for warning in parsed.warnings)
        if not parsed.indexed:
            skip(path, previous, f"Skipping (vector-index: false): {path}")
            continue
        capped = _capped(path, parsed, limit, left, max_bytes)
        if capped:
            report.warnings.append(capped)
            if not parsed.entries:  # no room left: nothing recorded, so the next run tries again
                skip(path, previous, f"Skipping (the knowledge caps are full): {path}")
                continue
        room.put(path, parsed.entries)
        if dry_run:
            report.entries_created += len(parsed.entries)
            report.entries_removed += previous["present"] if previous else 0
        else:
            created, removed = _store_file(db, project_id, path, digest, parsed)
            report.entries_created += created
            report.entries_removed += removed
        done(FileOutcome(path, "indexed", len(parsed.entries)))
    present = set(found.files)
    for path in sorted(set(known) - present):
        if any(not folder or path.startswith(folder + "/") for folder in found.unreadable):
            continue  # behind a folder that could not be read this time: keep its entries
        removed = known[path]["present"] if dry_run else _remove_file(db, project_id, path)
        report.entries_removed += removed
        done(FileOutcome(path, "removed", note=f"Removed (file gone): {path}"))
    report.seconds = time.perf_counter() - started
    return report
