"""``ccmemory files list|show|edit|rm|mv|log``: the memory tool's files from a terminal.

Paths are the memory tool's (``/memories/notes.md``, ``/memories/user/prefs.md``)
or short (``notes.md``, ``user/prefs.md``). Every command goes through the same
core as the MCP tool (:mod:`ccmemory.files.commands`), so the checks, the
redaction and the audit log are the same.
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable

import click

from .groups import WholeHelpGroup

from .. import clock
from ..files import commands, paths, store
from ..vocabulary import CLI_SOURCE
from .common import echo, emit_json, fail, handles_errors, json_option, open_store, project_option


def file_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """The memory tool's error text on stderr (once prefixed with "Error:"); exit 1 if refused, 2 if bad input."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except paths.MemoryFileError as exc:
            message = str(exc)
            fail(message[len("Error: "):] if message.startswith("Error: ") else message, 1 if exc.failed else 2)

    return handles_errors(wrapper)


def _call(project: int) -> commands.Call:
    return commands.Call(project, None, CLI_SOURCE)


@click.group(cls=WholeHelpGroup)
def files() -> None:
    """Memory files of Claude's memory tool (/memories: this project; /memories/user: all projects)."""


@files.command("list")
@click.option("--scope", type=click.Choice(["all", "project", "user"]), default="all", show_default=True,
              help="Which files: this project's, the user-wide ones, or both.")
@project_option
@json_option
@file_errors
def list_files(scope: str, project_dir: str | None, as_json: bool) -> None:
    """List memory files with their size and last change."""
    db, project = open_store(project_dir)
    try:
        rows = [row for row in store.visible(db, project)
                if scope == "all" or (scope == "user") == row.user]
    finally:
        db.close()
    if as_json:
        emit_json([{k: v for k, v in row.to_dict().items() if k != "content"} | {"bytes": row.size}
                   for row in rows])
        return
    if not rows:
        echo("No memory files yet. Claude creates them with the memory tool; "
                   "or write one with `ccmemory files edit notes.md`.")
        return
    for row in rows:
        echo(f"{commands.human_size(row.size):>6}  {clock.minute(row.updated_at)}  {row.display}")


@files.command()
@click.argument("path")
@click.option("--numbered", is_flag=True, help="Show it as the memory tool's view does, with line numbers.")
@project_option
@json_option
@file_errors
def show(path: str, numbered: bool, project_dir: str | None, as_json: bool) -> None:
    """Print one memory file (a directory path lists what is inside, as the tool's view does)."""
    full = paths.from_shorthand(path)
    db, project = open_store(project_dir)
    try:
        location = paths.parse(full)
        row = store.get(db, store.scope_of(location, project), location.rel) if location.is_file else None
        if as_json or (row is not None and not numbered):
            if row is None:
                raise paths.MemoryFileError(f"The path {location.path} does not exist. Please provide a valid path.")
            emit_json(row.to_dict()) if as_json else echo(row.content, nl=not row.content.endswith("\n"))
            return
        echo(commands.execute(db, {"command": "view", "path": full}, _call(project)))
    finally:
        db.close()


@files.command()
@click.argument("path")
@project_option
@file_errors
def edit(path: str, project_dir: str | None) -> None:
    """Edit (or create) a memory file in $EDITOR; from a pipe, the new text is read from standard input.

    If the file changes while you edit (Claude wrote to it), nothing is saved and you are told so.
    """
    full = paths.from_shorthand(path)
    db, project = open_store(project_dir)
    try:
        location = paths.parse_file(full)
        row = store.get(db, store.scope_of(location, project), location.rel)
        before = row.content if row else ""
        version = row.version if row else None
        if sys.stdin.isatty():
            edited = click.edit(before, extension=".md", require_save=True)
            if edited is None:
                echo(f"No change to {location.path}.")
                return
        else:
            edited = sys.stdin.read()
        echo(commands.overwrite(db, location.path, edited, _call(project), expected_version=version))
    finally:
        db.close()


@files.command()
@click.argument("path")
@project_option
@file_errors
def rm(path: str, project_dir: str | None) -> None:
    """Delete a memory file, or a directory of them."""
    _run(project_dir, {"command": "delete", "path": paths.from_shorthand(path)})


@files.command()
@click.argument("old_path")
@click.argument("new_path")
@project_option
@file_errors
def mv(old_path: str, new_path: str, project_dir: str | None) -> None:
    """Rename or move a memory file or directory (also between this project and the user scope)."""
    _run(project_dir, {"command": "rename", "old_path": paths.from_shorthand(old_path),
                       "new_path": paths.from_shorthand(new_path)})


@files.command()
@click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True)
@click.option("--all-projects", is_flag=True, help="Every project's operations, not just this one's.")
@project_option
@json_option
@file_errors
def log(limit: int, all_projects: bool, project_dir: str | None, as_json: bool) -> None:
    """The audit log: every memory-file operation (tool, CLI, import), newest first; never the content."""
    db, project = open_store(project_dir)
    try:
        rows = store.log_rows(db, None if all_projects else project, limit)
    finally:
        db.close()
    if as_json:
        emit_json(rows)
        return
    for row in rows:
        where = row["path"] or ""
        if row["new_path"]:
            where += f" -> {row['new_path']}"
        status = "ok" if row["ok"] else "FAILED"
        echo(f"{row['at'][:19].replace('T', ' ')}  {row['source']:<6} {row['command']:<11} {status:<6} "
                   f"{where}  {row['detail']}")


def _run(project_dir: str | None, arguments: dict[str, Any]) -> None:
    db, project = open_store(project_dir)
    try:
        echo(commands.execute(db, arguments, _call(project)))
    finally:
        db.close()


COMMANDS = [files]
