"""``ccmemory export`` and ``ccmemory import``: move, back up or seed the memory."""

from __future__ import annotations

import re
import sys
from typing import TextIO

import click

from .. import projects, quoting
from ..archive import jsonl, markdown, records
from ..errors import ValidationError
from ..redaction import redact
from .common import CleanWriter, default_project_dir, echo, emit_json, handles_errors, json_option, open_db

_SINCE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?Z?)?$")


def _since(value: str | None) -> str | None:
    if value is None:
        return None
    if not _SINCE.match(value):
        raise ValidationError(f"--since takes a date or time like 2026-11-01 or 2026-11-01T09:30, got {value!r}")
    return value.replace(" ", "T")


@click.command(name="export")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "markdown"]), default="jsonl", show_default=True,
              help="jsonl: every field, for `ccmemory import`; markdown: a readable copy.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), default="-",
              help="File to write (default: standard output).")
@click.option("--project", "project_dir", type=click.Path(file_okay=False, exists=True), default=None,
              help="Only this project (default: every project).")
@click.option("--since", default=None, help="Only what changed since this date or time (UTC), e.g. 2026-11-01.")
@handles_errors
def export(fmt: str, output: str, project_dir: str | None, since: str | None) -> None:
    """Export memories, sessions, relationships, documents and docmem trees."""
    db = open_db()
    project_ids = None
    if project_dir is not None:
        found = projects.project_id(db, project_dir, create=False)
        if found is None:
            raise ValidationError(f"ccmemory has nothing for {projects.project_root(project_dir)} yet; "
                                  "`ccmemory stats --all-projects` counts what it has")
        project_ids = (found,)
    scope = records.Scope(project_ids, _since(since))
    out: TextIO = sys.stdout if output == "-" else open(output, "w", encoding="utf-8", newline="\n")
    sink = out if output != "-" else CleanWriter(out, quoting.visible if fmt == "markdown" else quoting.json_visible)
    try:
        if fmt == "markdown":
            sink.write(markdown.render(db, scope))
        else:
            counts = jsonl.export(db, sink, scope)
            if output != "-":
                echo("Exported " + (", ".join(f"{n} {name}" for name, n in counts.items()) or "nothing")
                           + f" to {output}", err=True)
    finally:
        if out is not sys.stdout:
            out.close()


@click.command(name="import")
@click.argument("source", type=click.File("r", encoding="utf-8"))
@click.option("--into-project", "project_dir", type=click.Path(file_okay=False, exists=True), default=None,
              help="Put every record into this project (default: the projects named in the file).")
@json_option
@handles_errors
def import_(source: TextIO, project_dir: str | None, as_json: bool) -> None:
    """Import a JSON Lines export (SOURCE, or - for standard input).

    Idempotent: records already here by id are kept, or updated when the file's
    copy is newer; times are kept as exported; text is redacted on the way in.
    """
    db = open_db()
    into = projects.project_id(db, project_dir or default_project_dir()) if project_dir else None
    report = jsonl.import_lines(db, source, redact=redact, into_project=into)
    if as_json:
        emit_json(report.to_dict())
    else:
        for name, outcomes in report.outcomes.items():
            parts = ", ".join(f"{count} {outcome}" for outcome, count in sorted(outcomes.items()))
            echo(f"{name}: {parts}")
        if not report.outcomes:
            echo("Nothing to import: the file holds no records.")
        if report.redacted:
            echo(f"Redacted secrets or private text in {report.redacted} field(s).")
        for problem in report.problems:
            echo(f"Skipped {problem}", err=True)
        if report.failed > len(report.problems):
            echo(f"... and {report.failed - len(report.problems)} more skipped record(s).", err=True)
    if report.failed:
        sys.exit(1)


COMMANDS = [export, import_]
