"""``ccmemory import-from claude-memory|claude-mem|basic-memory|memory-tool``: bring in another tool's memories.

A thin door onto :mod:`ccmemory.importers`: each subcommand opens the store, runs its importer
and prints the report (``--json``: the report as JSON). ``--dry-run`` reads everything and
reports what would be imported without writing (no project is created either).
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable

import click

from .. import excerpts
from ..importers.base import Report
from .common import (INTERRUPTED_EXIT, echo, echo_listed, embed_in_background, emit_json, handles_errors, json_option,
                     open_db)
from .groups import WholeHelpGroup

dry_run_option = click.option("--dry-run", is_flag=True, help="Read everything and report, but write nothing.")


def _into(required: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option(
        "--into-project", "into", type=click.Path(file_okay=False, exists=True), required=required,
        help="The project directory the memories go to" + ("." if required else
                                                              " (default: the project the source names)."))


def reported(source: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Run an importer with an open store and a fresh report, then print the report; Ctrl+C keeps what is done."""

    def decorate(run: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(run)
        def wrapper(*args: Any, dry_run: bool, as_json: bool, **kwargs: Any) -> None:
            report = Report(source, dry_run=dry_run)
            db = open_db()
            try:
                run(db, report, *args, **kwargs)
                if not dry_run:
                    embed_in_background(db)
            except KeyboardInterrupt:
                _print(report, as_json)
                echo("Interrupted: what was imported is kept; run the command again to continue.", err=True)
                sys.exit(INTERRUPTED_EXIT)
            finally:
                db.close()
            _print(report, as_json)

        return handles_errors(wrapper)

    return decorate


def _counts(table: dict[str, int]) -> str:
    return ", ".join(excerpts.counted(n, kind) for kind, n in sorted(table.items()))


def _print(report: Report, as_json: bool) -> None:
    if as_json:
        emit_json(report.to_dict())
        return
    verb = "Would add" if report.dry_run else "Added"
    echo(f"{report.source}: {verb.lower()} {_counts(report.added) or 'nothing'}"
         + (f"; already imported: {_counts(report.unchanged)}" if report.unchanged else "")
         + (" (dry run: nothing written)" if report.dry_run else ""))
    for path, number in sorted(report.projects.items()):
        echo(f"{verb} {number} to project {path}")
    for path in report.user_files:
        echo(f"{verb} user-wide memory file {path} (shown to every project)")
    for move in report.renamed:
        echo(f"Stored {move['from']} as {move['to']} (memory files are Markdown)")
    if report.redacted:
        echo(f"Redacted secrets or private text in {excerpts.counted(report.redacted, 'item')}.")
    if report.cut:
        echo(f"Cut {excerpts.counted(report.cut, 'text')} to the 10,000-character limit of a memory.")
    echo_listed((f"Skipped {skipped['item']}: {skipped['reason']}" for skipped in report.skipped),
                len(report.skipped), report.skipped_count, "skipped.")
    echo_listed((f"Could not read {problem['path']}: {problem['reason']}" for problem in report.problems),
                len(report.problems), report.problem_count, "that could not be read.")


@click.group(name="import-from", cls=WholeHelpGroup)
def import_from() -> None:
    """Import the memories of another tool: Claude Code's auto memory, claude-mem, basic-memory, memory-tool files."""


@import_from.command("claude-memory")
@click.argument("folder", required=False, type=click.Path(file_okay=False, exists=True))
@_into(required=False)
@dry_run_option
@json_option
@reported("claude-memory")
def claude_memory(db: Any, report: Report, folder: str | None, into: str | None) -> None:
    """Claude Code's auto memory (MEMORY.md and its topic files) as curated memories of its project.

    FOLDER is one auto-memory folder (…/.claude/projects/<project>/memory); without it, the
    folder of --into-project DIR, or with neither every project's. A folder's project is the
    directory its session transcripts name, unless --into-project says.
    """
    from ..importers.claude_memory import import_claude_memory

    import_claude_memory(db, report, folder=folder, into=into)


@import_from.command("claude-mem")
@click.argument("database", required=False, type=click.Path(dir_okay=False),
                default="~/.claude-mem/claude-mem.db")
@_into(required=False)
@click.option("--project-name", default=None, help="Only the rows of this claude-mem project (a directory's name).")
@dry_run_option
@json_option
@reported("claude-mem")
def claude_mem(db: Any, report: Report, database: str, into: str | None, project_name: str | None) -> None:
    """A claude-mem database's observations and session summaries, with their times, read-only.

    DATABASE defaults to ~/.claude-mem/claude-mem.db. Each row goes to the project of its Claude
    Code session (known here, or named by its transcript), else the one project here with the
    name claude-mem gave it; --into-project DIR puts every row (or those of --project-name) there.
    """
    from ..importers.claude_mem import import_claude_mem

    import_claude_mem(db, report, database, into=into, project_name=project_name)


@import_from.command("basic-memory")
@click.argument("folder", type=click.Path(file_okay=False, exists=True))
@_into(required=True)
@dry_run_option
@json_option
@reported("basic-memory")
def basic_memory(db: Any, report: Report, folder: str, into: str) -> None:
    """A basic-memory folder of notes: each observation a memory, each note's text and relations one more."""
    from ..importers.basic_memory import import_basic_memory

    import_basic_memory(db, report, folder, into=into)


@import_from.command("memory-tool")
@click.argument("folder", type=click.Path(file_okay=False, exists=True))
@_into(required=True)
@click.option("--include-user-files", "user_files", is_flag=True,
              help="Also FOLDER/user/… as user-wide memory files (shown to every project).")
@dry_run_option
@json_option
@reported("memory-tool")
def memory_tool(db: Any, report: Report, folder: str, into: str, user_files: bool) -> None:
    """A directory of Anthropic memory-tool files (/memories) as this project's memory files."""
    from ..importers.memory_tool import import_memory_tool

    import_memory_tool(db, report, folder, into=into, user_files=user_files)


COMMANDS = [import_from]
