"""Commands over memories: add, search, list, get, delete, restore, reinforce, deemphasize, supersede, scope."""

from __future__ import annotations

import sys

import click

from .. import memories, projects, scopes, search as searching, staleness
from ..knowledge import promotion
from ..db import Database
from ..redaction import REDACTED
from ..memories import Memory
from ..team import labels
from ..vocabulary import CATEGORIES, MEMORY_SCOPES, SEARCH_SCOPES, SECTORS
from .common import (default_project_dir, describe, echo, emit_json, fail, handles_errors, json_option, open_store,
                     preview, project_option, report_search, search_embedder)


def _valid_category(value: str) -> str:
    """``value`` if it is a category; else the user's pick among the categories on a terminal,
    and ``general`` with a warning without one (what ``memory_add`` does too)."""
    chosen = value.strip().lower()
    if chosen in CATEGORIES:
        return chosen
    import difflib

    listed = ", ".join(CATEGORIES)
    near = difflib.get_close_matches(chosen, CATEGORIES, n=1, cutoff=0.6)
    guess = f" Did you mean {near[0]!r}?" if near else ""
    if sys.stdin.isatty():
        echo(f"Unknown category {value!r}.{guess} Valid categories: {listed}", err=True)
        return click.prompt("Category", type=click.Choice(CATEGORIES, case_sensitive=False),
                            default=near[0] if near else "general", err=True).lower()
    echo(f"Warning: unknown category {value!r}{' (did you mean ' + repr(near[0]) + '?)' if near else ''}; "
               f"stored as 'general' (valid: {listed}).", err=True)
    return "general"


scope_option = click.option(
    "--scope", type=click.Choice(SEARCH_SCOPES), default="project", show_default=True,
    help="project: this project and your user-wide memories; user: only the user-wide ones; all: every project.")


def _origins(db: Database, project: int, found: list[Memory]) -> dict[str, str]:
    """Where each memory comes from, seen from ``project``: "user-wide", another project, or "" (this one)."""
    labels = scopes.project_labels(db, {memory.project_id for memory in found if memory.project_id != project})
    return {memory.id: scopes.label(memory, project, labels) for memory in found}


def _labelled(memory: Memory, origins: dict[str, str]) -> str:
    origin = origins.get(memory.id)
    return f"{describe(memory)}  [{origin}]" if origin else describe(memory)


def _checked_time(value: str | None) -> str | None:
    """``--created-at`` parsed before anything is opened, so a bad one is named as the option it came from."""
    if value is None:
        return None
    from .. import clock

    try:
        return clock.parse(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--created-at'") from None


@click.command()
@click.argument("content", required=False)
@click.option("--category", default="general", show_default=True,
              help=f"What kind of knowledge this is: {', '.join(CATEGORIES)}.")
@click.option("--sector", type=click.Choice(SECTORS), default=None,
              help="Memory sector (default: guessed from the text).")
@click.option("--tags", default="", help="Comma-separated tags.")
@click.option("--importance", type=click.FloatRange(0, 1), default=None, help="0..1, also the starting salience.")
@click.option("--created-at", "created_at", default=None, metavar="TIME",
              help="When it happened: ISO-8601 date or date-time, e.g. 2023-05-08T13:56 (default: now).")
@click.option("--scope", type=click.Choice(MEMORY_SCOPES), default="project", show_default=True,
              help="user: a preference or convention of yours, shown in every project.")
@project_option
@json_option
@handles_errors
def add(content: str | None, category: str, sector: str | None, tags: str, importance: float | None,
        created_at: str | None, scope: str, project_dir: str | None, as_json: bool) -> None:
    """Add a memory. Without CONTENT, reads standard input, or opens $EDITOR on a terminal."""
    created_at = _checked_time(created_at)
    category = _valid_category(category)
    if content is None:
        if sys.stdin.isatty():
            content = click.edit("\n# Write the memory above; lines starting with # are dropped.\n")
            content = "\n".join(line for line in (content or "").splitlines() if not line.startswith("#")).strip()
        else:
            content = sys.stdin.read().strip()
    db, project = open_store(project_dir)
    memory = memories.add(db, project_id=project, content=content or "", sector=sector, category=category,
                          tags=tags, importance=importance, created_at=created_at, scope=scope)
    _embed_now(db, memory.seq)
    hidden = memory.content.count(REDACTED) - (content or "").count(REDACTED)
    notes = [f"{hidden} secret-looking value{'s' if hidden > 1 else ''} replaced by {REDACTED}"] if hidden > 0 else []
    if "<private>" in (content or "").lower():
        notes.append("the <private>…</private> text left out")
    if notes:
        echo(f"Note: {' and '.join(notes)} before storing; `ccmemory get {memory.id[:8]}` shows what was kept.",
                   err=True)
    if as_json:
        emit_json(memory.to_dict())
    else:
        where = ", user-wide: every project sees it" if memory.scope == "user" else ""
        echo(f"Memory created: {memory.id} (sector: {memory.sector}, category: {memory.category}{where})")


def _embed_now(db: Database, seq: int) -> None:
    """Embed a memory just added, so the next search finds it by meaning (a warning, not a failure, if it cannot).

    The vector is written beside the memory; the next search that loads sqlite-vec indexes it (as it does
    every vector written by a connection without the extension).
    """
    from .. import embeddings, vectors

    if vectors.extension_path() is None:
        return

    try:
        embeddings.embed_memories(db, embeddings.get_embedder(), [seq])
    except Exception as exc:  # the memory is stored: a model that cannot run leaves it to keyword search
        echo(f"Note: the memory is stored but not embedded yet ({exc}); it is found by keywords until "
             "`ccmemory embed` runs.", err=True)


@click.command()
@click.argument("query")
@click.option("--limit", type=click.IntRange(1, searching.MAX_LIMIT), default=searching.DEFAULT_LIMIT,
              show_default=True, help="Most results to show.")
@click.option("--mode", type=click.Choice(searching.MODES), default=searching.DEFAULT_MODE,
              show_default=True, help="keyword needs no model and is fastest.")
@click.option("--sector", type=click.Choice(SECTORS), default=None, help="Only this sector.")
@click.option("--include-superseded", is_flag=True, help="Also show memories replaced by newer ones.")
@scope_option
@click.option("--team/--no-team", default=True, show_default=True,
              help="Include memories teammates shared through the team server (docs/team.md).")
@project_option
@json_option
@handles_errors
def search(query: str, limit: int, mode: str, sector: str | None, include_superseded: bool, scope: str, team: bool,
           project_dir: str | None, as_json: bool) -> None:
    """Search this project's memories (hybrid keyword + semantic by default)."""
    if not query.strip():
        fail("Query cannot be empty", 2)
    db, project = open_store(project_dir, vectors=mode != "keyword")
    embedder = search_embedder(db, mode)
    result = searching.search_with_info(db, query, project_id=project, scope=scope, mode=mode, sector=sector,
                                        limit=limit, include_superseded=include_superseded, embedder=embedder,
                                        team=team)
    promotion.after_search(db, project, project_dir or default_project_dir(), result.hits)
    if not report_search(result, query, as_json):
        return
    for number, hit in enumerate(result.hits, 1):
        echo(f"{number}. [{hit.score:.2f}{' weak match' if hit.weak else ''}] "
             f"{_labelled(hit.memory, {hit.memory.id: hit.origin})}")
        echo(f"   {preview(hit.memory)}")
        if hit.superseded_by:
            echo(f"   superseded by {hit.superseded_by[:8]}")
        for entry in hit.stale:
            echo(f"   STALE: {staleness.describe(entry)}")
        if hit.shared:
            echo(f"   {labels.describe(hit.shared)}")
        echo()


@click.command(name="list")
@click.option("--category", default=None, help="Only this category (an unknown one lists nothing).")
@click.option("--sector", type=click.Choice(SECTORS), default=None, help="Only this sector.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=memories.DEFAULT_LIST_LIMIT, show_default=True)
@click.option("--include-deleted", is_flag=True, help="Also list soft-deleted memories.")
@scope_option
@project_option
@json_option
@handles_errors
def list_command(category: str | None, sector: str | None, limit: int, include_deleted: bool, scope: str,
                 project_dir: str | None, as_json: bool) -> None:
    """List this project's memories and your user-wide ones, newest first."""
    db, project = open_store(project_dir)
    found = memories.list_memories(db, project_id=project, scope=scope, category=category, sector=sector,
                                   limit=limit, include_deleted=include_deleted)
    origins = _origins(db, project, found)
    if as_json:
        emit_json([{**memory.to_dict(), "origin": origins[memory.id]} for memory in found])
        return
    if not found:
        root = projects.project_root(project_dir or default_project_dir())
        narrowed = " matching these filters" if category or sector else ""
        echo(f"No memories{narrowed} in the project at {root}. `ccmemory list --project PATH` lists "
                   "another project's; `ccmemory stats --all-projects` counts every project's.")
    for memory in found:
        echo(f"{_labelled(memory, origins)}  {preview(memory, 80)}")


@click.command()
@click.argument("memory_ids", nargs=-1, required=True)
@click.option("--scope", type=click.Choice(("project", "all")), default="project", show_default=True,
              help="all: also ids of other projects (as `search --scope all` shows them).")
@json_option
@project_option
@handles_errors
def get(memory_ids: tuple[str, ...], scope: str, as_json: bool, project_dir: str | None) -> None:
    """Show whole memories of this project by id (or a unique id prefix of 4+ characters)."""
    db, project = open_store(project_dir)
    found, missing = memories.get_many(db, list(memory_ids), project_id=None if scope == "all" else project)
    origins = _origins(db, project, found)
    if as_json:
        emit_json({"memories": [{**memory.to_dict(), "origin": origins[memory.id]} for memory in found],
                   "missing": missing})
    else:
        for memory in found:
            echo(f"{memory.id}  {_labelled(memory, origins)}")
            echo(f"salience {memory.salience:.2f}  references {memory.reference_count}  "
                       f"tier {memory.tier}  source {memory.source}")
            if memory.tags or memory.files:
                echo(f"tags {', '.join(memory.tags) or '-'}  files {', '.join(memory.files) or '-'}")
            echo(memory.content)
            echo()
    if missing:
        fail("\n".join(_not_found(db, None if scope == "all" else project, memory_id) for memory_id in missing))


def _not_found(db: Database, project: int | None, memory_id: str) -> str:
    """The error line for an id that names no memory: not found, or a prefix too short or ambiguous."""
    why = memories.why_not_found(db, memory_id, project_id=project)
    if why.startswith("No memory"):
        return f"Entry not found: {memory_id}. Find ids with `ccmemory search` or `ccmemory list`."
    return why


@click.command()
@click.argument("memory_id")
@click.option("--hard", is_flag=True, help="Remove for good instead of a restorable soft delete.")
@json_option
@project_option
@handles_errors
def delete(memory_id: str, hard: bool, as_json: bool, project_dir: str | None) -> None:
    """Delete a memory (soft by default: `ccmemory restore` brings it back)."""
    db, project = open_store(project_dir)
    result = memories.delete(db, memory_id, project_id=project, hard=hard)
    if as_json:
        emit_json(result)
    if not result["deleted"]:
        if result["reason"] == "already deleted":
            fail(f"Memory {result['id']} is already deleted; nothing changed (`ccmemory restore {result['id']}` "
                 "brings it back, `ccmemory delete --hard` removes it for good).")
        fail(_not_found(db, project, memory_id))
    if not as_json:
        echo(f"Memory permanently deleted: {result['id']}" if hard
                   else f"Memory soft-deleted: {result['id']} (can be restored with `ccmemory restore`)")


@click.command()
@click.argument("memory_id")
@project_option
@handles_errors
def restore(memory_id: str, project_dir: str | None) -> None:
    """Bring back a soft-deleted memory."""
    db, project = open_store(project_dir)
    echo(f"Memory restored: {memories.restore(db, memory_id, project_id=project).id}")


@click.command()
@click.argument("memory_id")
@click.option("--amount", type=click.FloatRange(0, 1), default=memories.DEFAULT_REINFORCE_AMOUNT,
              show_default=True)
@project_option
@handles_errors
def reinforce(memory_id: str, amount: float, project_dir: str | None) -> None:
    """Raise a memory's salience (diminishing returns; never reaches 1)."""
    db, project = open_store(project_dir)
    memory = memories.reinforce(db, memory_id, amount, project_id=project)
    echo(f"Memory reinforced: {memory.id} (new salience: {memory.salience:.2f})")


@click.command()
@click.argument("memory_id")
@click.option("--amount", type=click.FloatRange(0, 1), default=memories.DEFAULT_DEEMPHASIZE_AMOUNT,
              show_default=True)
@project_option
@handles_errors
def deemphasize(memory_id: str, amount: float, project_dir: str | None) -> None:
    """Lower a memory's salience."""
    db, project = open_store(project_dir)
    memory = memories.deemphasize(db, memory_id, amount, project_id=project)
    echo(f"Memory de-emphasized: {memory.id} (new salience: {memory.salience:.2f})")


@click.command()
@click.argument("old_id")
@click.argument("new_id")
@project_option
@handles_errors
def supersede(old_id: str, new_id: str, project_dir: str | None) -> None:
    """Mark OLD_ID as replaced by NEW_ID (kept for history, hidden from default search)."""
    db, project = open_store(project_dir)
    old, new = memories.supersede(db, old_id, new_id, project_id=project)
    echo(f"Memory {old.id} marked as superseded by {new.id}")


@click.command(name="scope")
@click.argument("memory_id", required=False)
@click.argument("new_scope", metavar="SCOPE", required=False, type=click.Choice(MEMORY_SCOPES))
@project_option
@json_option
@handles_errors
def scope_command(memory_id: str | None, new_scope: str | None, project_dir: str | None, as_json: bool) -> None:
    """Make a memory user-wide (SCOPE user: every project sees it) or this project's alone (project).

    Without arguments, lists this project's memories proposed for your user scope (a near-identical
    memory is in another project too); `project` declines a proposal for good.
    """
    db, project = open_store(project_dir)
    if memory_id is None:
        found = scopes.proposals(db, project)
        if as_json:
            emit_json(found)
        elif not found:
            echo("No memory of this project is proposed for your user scope.")
        for proposal in [] if as_json else found:
            echo(f"{proposal['id']}  also in {', '.join(proposal['projects'])}")
            echo(f"   {preview(memories.get(db, proposal['id'], project_id=project), 80)}")
        return
    if new_scope is None:
        raise click.UsageError("Give the scope too: `ccmemory scope ID user` or `ccmemory scope ID project`.")
    memory = memories.set_scope(db, memory_id, new_scope, project_id=project)
    if as_json:
        emit_json(memory.to_dict())
    elif memory.scope == "user":
        echo(f"Memory {memory.id} is user-wide: every project's search and session start show it.")
    else:
        echo(f"Memory {memory.id} belongs to its project alone ({projects.get(db, memory.project_id)['path']}).")


COMMANDS = [add, search, list_command, get, delete, restore, reinforce, deemphasize, supersede, scope_command]
