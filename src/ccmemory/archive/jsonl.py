"""The JSON Lines export: a header line, then one record per line, type by type.

The header is ``{"type": "header", "format": "ccmemory-export", "version": 1}``
and nothing else (no time), so exporting the same store twice gives the same
bytes. Import reads the header first, then loads records in batches of
:data:`BATCH` per transaction, so hooks writing at the same time wait at most
for one batch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, TextIO

from ..db import Database
from ..errors import ValidationError
from . import records

FORMAT = "ccmemory-export"
VERSION = 1
BATCH = 500
MAX_PROBLEMS = 20


def header() -> dict[str, Any]:
    return {"type": "header", "format": FORMAT, "version": VERSION}


def dumps(record: dict[str, Any]) -> str:
    """One line of the file (compact, UTF-8 text kept as is)."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def export(db: Database, out: TextIO, scope: records.Scope) -> dict[str, int]:
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
    """

    outcomes: dict[str, dict[str, int]] = field(default_factory=dict)
    failed: int = 0
    problems: list[str] = field(default_factory=list)
    redacted: int = 0
    new_ids: dict[str, str] = field(default_factory=dict)

    def count(self, type_name: str, outcome: str) -> None:
        per_type = self.outcomes.setdefault(type_name, {})
        per_type[outcome] = per_type.get(outcome, 0) + 1

    def problem(self, line_number: int, message: str) -> None:
        self.failed += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(f"line {line_number}: {message}")

    def to_dict(self) -> dict[str, Any]:
        return {"records": self.outcomes, "failed": self.failed, "problems": self.problems,
                "redacted_fields": self.redacted, "new_ids": self.new_ids}


def _read_header(line: str) -> None:
    try:
        first = json.loads(line)
    except ValueError:
        first = None
    if not isinstance(first, dict) or first.get("format") != FORMAT:
        raise ValidationError("This is not a ccmemory export (its first line is not a ccmemory-export header); "
                              "make one with `ccmemory export`")
    if not isinstance(first.get("version"), int) or first["version"] > VERSION:
        raise ValidationError(f"The export has format version {first.get('version')!r}; this ccmemory reads up to "
                              f"{VERSION}. Upgrade ccmemory to import it.")


def import_lines(db: Database, lines: Iterable[str], *, redact: Callable[[str], str],
                 into_project: int | None = None) -> ImportReport:
    """Load an export's lines into the store; a record that cannot be stored is reported, not fatal."""
    report = ImportReport()
    context = records.ImportContext(db, redact, into_project)
    iterator = iter(enumerate(lines, 1))
    started = False
    for number, line in iterator:
        if line.strip():
            _read_header(line)
            started = True
            break
    if not started:
        raise ValidationError("The export is empty; make one with `ccmemory export`")
    batch: list[tuple[int, str]] = []
    for item in iterator:
        batch.append(item)
        if len(batch) >= BATCH:
            _load_batch(context, batch, report)
            batch = []
    _load_batch(context, batch, report)
    report.redacted = context.redacted
    report.new_ids = {f"{kind} {old}": new for (kind, old), new in context.renamed.items()}
    return report


def _load_batch(context: records.ImportContext, batch: list[tuple[int, str]], report: ImportReport) -> None:
    with context.db.transaction():
        for number, line in batch:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                report.problem(number, f"not JSON ({exc})")
                continue
            type_name = record.get("type") if isinstance(record, dict) else None
            record_type = records.by_name(type_name) if isinstance(type_name, str) else None
            if record_type is None:
                report.problem(number, f"unknown record type {type_name!r} (written by a newer ccmemory?); skipped")
                continue
            context.db.execute("SAVEPOINT record")
            try:
                outcome = record_type.load(context, record)
            except Exception as exc:  # a bad record (missing field, broken reference) must not stop the rest
                context.db.execute("ROLLBACK TO record")
                context.db.execute("RELEASE record")
                reason = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
                report.problem(number, f"{type_name} not imported: {reason}")
                continue
            context.db.execute("RELEASE record")
            report.count(type_name, outcome)
