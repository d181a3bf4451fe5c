"""``ccmemory projects``: each project with its identity, the paths where it was seen and its counts;
merge two, split a location off, undo either, and the history of both."""

from __future__ import annotations

import sys
from typing import Any

import click

from .groups import WholeHelpGroup

from .. import clock, project_merge, projects
from .common import echo, emit_json, fail, handles_errors, json_option, open_db

#: Table names as the text output says them.
TABLE_WORDS = {"sessions": "sessions", "memories": "memories", "documents": "documents", "docmem_nodes": "docmem nodes",
               "docmem_placements": "docmem placements", "memory_files": "memory files",
               "memory_file_log": "memory file log entries", "project_aliases": "paths",
               "project_roots": "root commits", "knowledge_files": "knowledge index entries"}


def _counted(counts: dict[str, int]) -> str:
    return ", ".join(f"{count} {TABLE_WORDS.get(table, table)}" for table, count in counts.items()) or "nothing"


def _named(project: dict[str, Any]) -> str:
    return f"project {project['id']} ({project['path']})"


def _user() -> str:
    """Who ran the command, for the merge log's reason."""
    import getpass

    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "an unknown user"


@click.group(name="projects", cls=WholeHelpGroup, invoke_without_command=True)
@json_option
@click.pass_context
@handles_errors
def projects_group(ctx: click.Context, as_json: bool) -> None:
    """List the projects (no subcommand): identity, the paths where each was seen, counts, last activity.

    Every clone, worktree and moved checkout of a repository is one project; merge and split
    correct a wrong guess, and undo takes either back (docs/projects.md).
    """
    if ctx.invoked_subcommand is not None:
        return
    listed = projects.list_all(open_db())
    if as_json:
        emit_json(listed)
        return
    if not listed:
        echo("No projects yet: ccmemory makes one the first time Claude Code works in a directory.")
    for project in listed:
        remote = f"  remote {project['remote']}" if project["remote"] else ""
        echo(f"{project['id']}  {project['name']}  {project['identity'] or 'no identity'}{remote}")
        echo(f"    {project['memories']} memories, {project['sessions']} sessions, {project['documents']} documents, "
             f"{project['memory_files']} memory files; last activity {clock.minute(project['last_activity'])}")
        for alias in project["aliases"]:
            marks = [alias["kind"], *(["pinned"] if alias["pinned"] else []),
                     *([] if alias["exists"] else ["no longer exists"])]
            echo(f"    {alias['path']}  ({', '.join(marks)})")


@projects_group.command()
@click.argument("keep")
@click.argument("other")
@click.option("--dry-run", is_flag=True, help="Show what would move, counted per table, and change nothing.")
@click.option("--yes", "-y", is_flag=True, help="Merge without asking.")
@json_option
@handles_errors
def merge(keep: str, other: str, dry_run: bool, yes: bool, as_json: bool) -> None:
    """Merge project OTHER into KEEP: each a project id or a path where it was seen.

    Every row of OTHER moves to KEEP and OTHER's paths stay KEEP's (pinned: never re-identified).
    Asks first at a terminal; elsewhere pass --yes. `ccmemory projects undo` takes it back.
    """
    db = open_db()
    keep_id, other_id = projects.resolve(db, keep), projects.resolve(db, other)
    counts = project_merge.plan(db, keep_id, other_id)
    kept, gone = projects.get(db, keep_id), projects.get(db, other_id)
    if dry_run:
        if as_json:
            emit_json({"dry_run": True, "into": kept, "from": gone, "counts": counts})
        else:
            echo(f"Would merge {_named(gone)} into {_named(kept)}, moving {_counted(counts)}. Nothing changed.")
        return
    if not yes:
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            fail("Merging asks you to confirm at a terminal; pass --yes to merge without asking "
                 "(--dry-run shows what would move).", 2)
        echo(f"Merge {_named(gone)} into {_named(kept)}? It moves {_counted(counts)}.", err=True)
        if not click.confirm("Merge?", default=False, err=True):
            echo("Nothing changed.", err=True)
            return
    entry = project_merge.merge(db, keep_id, other_id, pin=True,
                                reason=f"merged by {_user()} with `ccmemory projects merge {keep} {other}`")
    if as_json:
        emit_json({"id": entry["id"], "into": kept, "from": gone, "counts": entry["counts"]})
        return
    echo(f"Merged {_named(gone)} into {_named(kept)} (merge {entry['id']}): moved {_counted(entry['counts'])}. "
         f"`ccmemory projects undo {entry['id']}` takes it back.")


@projects_group.command()
@click.argument("path")
@json_option
@handles_errors
def split(path: str, as_json: bool) -> None:
    """Give PATH, a location put in the wrong project, a project of its own with the sessions that ran there.

    If a merge brought PATH into its project, that merge is undone; otherwise PATH gets a new
    project, pinned so it is never re-identified back. `ccmemory projects undo` takes it back.
    """
    db = open_db()
    where = projects.alias_for(db, path)
    result = project_merge.split(db, where, reason=f"split by {_user()} with `ccmemory projects split {path}`")
    if as_json:
        emit_json(result)
        return
    how = f"undid merge {result['undid']}: " if result["undid"] is not None else ""
    echo(f"{where} now has {_named(result['project'])} of its own ({how}moved {_counted(result['counts'])} "
         f"from project {result['from_id']}). `ccmemory projects undo {result['id']}` takes it back.")
    if result["ambiguous"]:
        echo(f"Note: {result['ambiguous']} session(s) stayed in project {result['from_id']}: their transcript folder "
             "names another path of that project as well.", err=True)


@projects_group.command()
@click.argument("merge_id", type=int, required=False)
@json_option
@handles_errors
def undo(merge_id: int | None, as_json: bool) -> None:
    """Take back the latest merge or split not yet undone, or MERGE_ID (`ccmemory projects merges` lists them)."""
    result = project_merge.undo(open_db(), merge_id)
    if as_json:
        emit_json(result)
        return
    project = result["project"]
    if result["kind"] == "split":
        echo(f"Undid split {result['id']}: the location is back in {_named(project)}.")
    else:
        echo(f"Undid merge {result['id']}: {_named(project)} is back with what the merge moved.")


@projects_group.command()
@json_option
@handles_errors
def merges(as_json: bool) -> None:
    """Every merge and split, newest first: what moved, why, and whether it was undone."""
    found = project_merge.history(open_db())
    if as_json:
        emit_json(found)
        return
    if not found:
        echo("No merges or splits yet.")
    for row in found:
        undone = f"  [undone {clock.minute(row['undone_at'])}]" if row["undone_at"] else ""
        verb = f"split {row['path']} from project {row['from_id']} into {row['into_id']}" if row["kind"] == "split" \
            else f"merged project {row['from_id']} ({row['path']}) into {row['into_id']}"
        if row["undid"] is not None:
            verb += f" (undid merge {row['undid']})"
        echo(f"{row['id']}  {clock.minute(row['at'])}  {verb}{undone}")
        echo(f"    moved {_counted(row['counts'])}; {row['reason']}")


COMMANDS = [projects_group]
