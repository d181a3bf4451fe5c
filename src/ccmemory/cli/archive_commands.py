"""``ccmemory export`` and ``ccmemory import``: move, back up or seed the memory."""

from __future__ import annotations

import os
import re
import stat
import sys
import tempfile
from contextlib import contextmanager, nullcontext, suppress
from typing import BinaryIO, Iterator, TextIO

import click

from .. import excerpts, projects, quoting
from ..archive import jsonl, markdown, records
from ..errors import ValidationError
from ..redaction import redact
from .common import (CleanWriter, echo, echo_listed, embed_in_background, emit_json, handles_errors, json_option,
                     open_db)

_SINCE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?Z?)?$")


def _since(value: str | None) -> str | None:
    if value is None:
        return None
    if not _SINCE.match(value):
        raise ValidationError(f"--since takes a date or time like 2026-11-01 or 2026-11-01T09:30, got {value!r}")
    return value.replace(" ", "T")


@contextmanager
def _private_output(path: str) -> Iterator[TextIO]:
    """Text written to ``path``, readable by the user alone from its first byte, and put in place whole.

    An export holds every memory, so it is written to a new file that :func:`tempfile.mkstemp`
    creates 0600 next to ``path`` and renamed over it when complete: no moment shows a
    world-readable or half-written export, and a symlink at ``path`` is replaced rather than
    written through. A pipe or a terminal (``-o /dev/stdout``, process substitution) has no
    file mode and is written in place.
    """
    try:
        mode: int | None = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise ValidationError(f"{path} is a directory; name a file to write the export to")
    if mode is not None and not stat.S_ISREG(mode):
        with open(path, "w", encoding="utf-8", newline="\n") as out:
            yield out
        return
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".ccmemory-export-",
                                     suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with suppress(FileNotFoundError):
            os.remove(temporary)
        raise


def counted(counts: dict[str, int]) -> str:
    """``{"project": 1, "memory": 7}`` as "1 project, 7 memories" ("nothing" when empty)."""
    return ", ".join(excerpts.counted(n, name.replace("_", " ")) for name, n in counts.items()) or "nothing"


@click.command(name="export")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "markdown"]), default="jsonl", show_default=True,
              help="jsonl: every field, for `ccmemory import`; markdown: a readable copy.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), default="-",
              help="File to write, created readable by you only (default: standard output).")
@click.option("--project", "project_dir", type=click.Path(file_okay=False, exists=True), default=None,
              help="Only this project (default: every project).")
@click.option("--include-user-files", is_flag=True,
              help="With --project: also the user-wide memory files (/memories/user/…) and the project's "
                   "user-wide memories, your personal ones (an export of every project has them).")
@click.option("--since", default=None, help="Only what changed since this date or time (UTC), e.g. 2026-11-01.")
@handles_errors
def export(fmt: str, output: str, project_dir: str | None, include_user_files: bool, since: str | None) -> None:
    """Export memories, sessions, relationships, documents and docmem trees."""
    db = open_db()
    project_ids = None
    if project_dir is not None:
        found = projects.project_id(db, project_dir, create=False)
        if found is None:
            raise ValidationError(f"ccmemory has nothing for {projects.project_root(project_dir)} yet; "
                                  "`ccmemory stats --all-projects` counts what it has")
        project_ids = (found,)
    scope = records.Scope(project_ids, _since(since), user_files=True if include_user_files else None)
    with nullcontext(sys.stdout) if output == "-" else _private_output(output) as out:
        sink = out if output != "-" else CleanWriter(out, quoting.visible if fmt == "markdown" else quoting.json_visible)
        if fmt == "markdown":
            sink.write(markdown.render(db, scope))
            return
        counts = jsonl.export(db, sink, scope)
    if output != "-":
        echo(f"Exported {counted(counts)} to {output}", err=True)


@click.command(name="import")
@click.argument("source", type=click.File("rb"))
@click.option("--into-project", "project_dir", type=click.Path(file_okay=False, exists=True), default=None,
              help="Put every record into this project, whatever project the file names (e.g. . in a clone).")
@click.option("--all-projects", is_flag=True,
              help="Restore the projects the file names (your own backup): each one that is a project directory "
                   "on this machine; records naming any other path are skipped.")
@click.option("--include-user-files", is_flag=True,
              help="Also import user-wide memory files (/memories/user/…) and user-wide memories (both shown to "
                   "every project); a user-wide file already here with other text is kept, never replaced.")
@json_option
@handles_errors
def import_(source: BinaryIO, project_dir: str | None, all_projects: bool, include_user_files: bool,
            as_json: bool) -> None:
    """Import a JSON Lines export (SOURCE, or - for standard input).

    Say where its records go: --into-project DIR (one project) or --all-projects
    (the projects it names, for a backup of your own). Idempotent: records already
    here by id are kept, or updated when the file's copy is newer; times are kept as
    exported; every value is checked and text is redacted on the way in.
    """
    if project_dir is not None and all_projects:
        raise ValidationError("Use either --into-project DIR or --all-projects, not both")
    db = open_db()
    into = projects.project_id(db, project_dir) if project_dir else None
    report = jsonl.import_file(db, source, redact=redact, into_project=into, all_projects=all_projects,
                               user_files=include_user_files)
    embed_in_background(db)
    if as_json:
        emit_json(report.to_dict())
    else:
        _print_report(report)
    if report.failed:
        sys.exit(1)


def _print_report(report: jsonl.ImportReport) -> None:
    for name, outcomes in report.outcomes.items():
        parts = ", ".join(f"{count} {outcome}" for outcome, count in sorted(outcomes.items()))
        echo(f"{name}: {parts}")
    if not report.outcomes:
        echo("Nothing to import: the file holds no records.")
    for path in report.projects:
        echo(f"Wrote to project {path}")
    for path in report.user_files:
        echo(f"Wrote user-wide memory file {path} (shown to every project)")
    if report.user_memories:
        echo(f"Wrote {len(report.user_memories)} user-wide memories (shown to every project): "
             f"{', '.join(memory_id[:8] for memory_id in report.user_memories)}")
    if report.redacted:
        echo(f"Redacted secrets or private text in {report.redacted} field(s).")
    echo_listed((f"Not imported: {notice}" for notice in report.notices), len(report.notices), report.skipped,
                "record(s) not imported.")
    echo_listed((f"Skipped {problem}" for problem in report.problems), len(report.problems), report.failed,
                "skipped record(s).")


COMMANDS = [export, import_]
