"""The JSON Lines export: a header line, then one record per line, type by type.

The header is ``{"type": "header", "format": "ccmemory-export", "version": 1}``
and nothing else (no time), so exporting the same store twice gives the same
bytes. Import reads the header first, then loads records in batches of
:data:`BATCH` per transaction, so hooks writing at the same time wait at most
for one batch. Each record is stored whole or not at all (a savepoint per record);
a bad record is reported and the import goes on, so an import always runs to the
end of its file, and running it again (it is idempotent) completes one that was
interrupted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO, Callable

from .. import safe_files
from ..db import Database
from ..errors import ValidationError
from . import records

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

FORMAT = "ccmemory-export"
VERSION = 1
BATCH = 500
MAX_PROBLEMS = 20
#: Longest line an import reads (a document of 5 MB, escaped, fits several times over).
MAX_LINE_BYTES = 64 * 1024 * 1024
#: Most bytes an import reads from one file.
MAX_FILE_BYTES = 1 << 40


def header() -> dict[str, Any]:
    return {"type": "header", "format": FORMAT, "version": VERSION}


def dumps(record: dict[str, Any]) -> str:
    """One line of the file (compact, UTF-8 text kept as is)."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def export(db: Database, out: SupportsWrite[str], scope: records.Scope) -> dict[str, int]:
    """Write every record in ``scope`` to ``out``; returns the count of each type."""
    counts: dict[str, int] = {}
    out.write(dumps(header()) + "\n")
    for record_type in records.RECORD_TYPES:
        for record in record_type.export(db, scope):
            out.write(dumps({"type": record_type.name, **record}) + "\n")
            counts[record_type.name] = counts.get(record_type.name, 0) + 1
    return counts


@dataclass
class ImportReport:
    """What an import did: per type, how many records were added, updated or already there.

    ``new_ids`` maps ``"<kind> <id in the file>"`` to the id the record got here because
    another project in this store already holds its own (their outcome is "added under a new id").
    ``failed`` counts records that could not be stored (bad values, broken links); ``skipped``
    those the import's confinement left out (a project not named, user-wide files not asked
    for, a user-wide file already here). ``projects``, ``user_files`` and ``user_memories`` (ids) name
    everything written.
    """

    outcomes: dict[str, dict[str, int]] = field(default_factory=dict)
    failed: int = 0
    problems: list[str] = field(default_factory=list)
    skipped: int = 0
    notices: list[str] = field(default_factory=list)
    redacted: int = 0
    new_ids: dict[str, str] = field(default_factory=dict)
    projects: list[str] = field(default_factory=list)
    user_files: list[str] = field(default_factory=list)
    user_memories: list[str] = field(default_factory=list)

    def count(self, type_name: str, outcome: str) -> None:
        per_type = self.outcomes.setdefault(type_name, {})
        per_type[outcome] = per_type.get(outcome, 0) + 1

    def problem(self, line_number: int, message: str) -> None:
        self.failed += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(f"line {line_number}: {message}")

    def skip(self, line_number: int, message: str) -> None:
        self.skipped += 1
        if len(self.notices) < MAX_PROBLEMS:
            self.notices.append(f"line {line_number}: {message}")

    def to_dict(self) -> dict[str, Any]:
        return {"records": self.outcomes, "failed": self.failed, "problems": self.problems,
                "skipped": self.skipped, "notices": self.notices, "redacted_fields": self.redacted,
                "new_ids": self.new_ids, "written": {"projects": self.projects, "user_files": self.user_files,
                                                      "user_memories": self.user_memories}}


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _loads(raw: bytes) -> Any:
    """One line's JSON; NaN and Infinity (which Python's json would accept) are refused."""
    return json.loads(raw, parse_constant=_refuse_constant)


def _read_header(line: bytes | None) -> None:
    try:
        first = _loads(line) if line is not None else None
    except (ValueError, RecursionError):
        first = None
    if not isinstance(first, dict) or first.get("format") != FORMAT:
        raise ValidationError("This is not a ccmemory export (its first line is not a ccmemory-export header); "
                              "make one with `ccmemory export`")
    if not isinstance(first.get("version"), int) or first["version"] > VERSION:
        raise ValidationError(f"The export has format version {str(first.get('version'))[:20]!r}; this ccmemory "
                              f"reads up to {VERSION}. Upgrade ccmemory to import it.")


def import_file(db: Database, source: BinaryIO, *, redact: Callable[[str], str], into_project: int | None = None,
                all_projects: bool = False, user_files: bool = False) -> ImportReport:
    """Load an export into the store; a record that cannot be stored is reported, not fatal.

    The file is read line by line, at most :data:`MAX_LINE_BYTES` a line (a longer one is
    reported and skipped unread), so no file makes the import hold more than one bounded line.
    Where records may go is the caller's (``into_project`` / ``all_projects`` / ``user_files``,
    see :class:`~ccmemory.archive.records.ImportContext`); with no project named and
    ``all_projects`` off, the file is refused before anything is written.
    """
    report = ImportReport()
    context = records.ImportContext(db, redact, into_project, all_projects=all_projects, user_files=user_files)
    lines = enumerate(safe_files.bounded_lines(source, MAX_FILE_BYTES, MAX_LINE_BYTES), 1)
    for _number, line in lines:
        if line is None or line.strip():
            _read_header(line)
            break
    else:
        raise ValidationError("The export is empty; make one with `ccmemory export`")
    if into_project is None and not all_projects and not user_files:
        raise ValidationError("Say where the records go: --into-project DIR puts them all into one project "
                              "(e.g. --into-project . in a clone), --all-projects restores the projects the file "
                              "names (a backup of your own). Nothing was imported.")
    batch: list[tuple[int, bytes | None]] = []
    for item in lines:
        batch.append(item)
        if len(batch) >= BATCH:
            _load_batch(context, batch, report)
            batch = []
    _load_batch(context, batch, report)
    if context.sessions_for_memories:
        report.outcomes.setdefault("session", {})[records.ADDED_FOR_MEMORIES] = len(context.sessions_for_memories)
    report.redacted = context.redacted
    report.new_ids = {f"{kind} {old}": new for (kind, old), new in context.renamed.items()}
    report.projects = sorted(db.scalar("SELECT path FROM projects WHERE id = ?", (project,))
                             for project in context.touched)
    report.user_files = context.user_files_written
    report.user_memories = context.user_memories_written
    return report


def _load_batch(context: records.ImportContext, batch: list[tuple[int, bytes | None]], report: ImportReport) -> None:
    context.db.give_way()
    with context.db.transaction():
        for number, line in batch:
            if line is None:
                report.problem(number, f"longer than {MAX_LINE_BYTES:,} bytes; skipped unread")
                continue
            if not line.strip():
                continue
            try:
                record = _loads(line)
            except (ValueError, RecursionError) as exc:
                report.problem(number, f"not JSON ({str(exc)[:200]})")
                continue
            type_name = record.get("type") if isinstance(record, dict) else None
            record_type = records.by_name(type_name) if isinstance(type_name, str) else None
            if record_type is None:
                report.problem(number, f"unknown record type {str(type_name)[:80]!r} (written by a newer ccmemory?); "
                                       "skipped")
                continue
            context.db.execute("SAVEPOINT record")
            try:
                outcome = record_type.load(context, record)
            except Exception as exc:  # a bad record (missing field, broken reference) must not stop the rest
                context.db.execute("ROLLBACK TO record")
                context.db.execute("RELEASE record")
                if isinstance(exc, records.Skipped):
                    report.skip(number, f"{type_name} not imported: {exc}")
                    report.count(record_type.name, "skipped")
                    continue
                reason = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
                report.problem(number, f"{type_name} not imported: {reason[:500]}")
                continue
            context.db.execute("RELEASE record")
            report.count(record_type.name, outcome)
