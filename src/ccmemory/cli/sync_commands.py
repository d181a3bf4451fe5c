"""``ccmemory sync``: one sync round with the team server; ``sync status``; ``sync share`` (docs/team.md)."""

from __future__ import annotations

import os

import click

from .groups import WholeHelpGroup

from .common import echo, embed_in_background, emit_json, handles_errors, json_option, load_settings, open_db, project_option

#: How long ``ccmemory sync`` waits for a background round holding the lock, and its own default bound.
LOCK_WAIT_SECONDS = 30.0
ROUND_SECONDS = 600.0


@click.group(cls=WholeHelpGroup, invoke_without_command=True)
@click.option("--full", is_flag=True, help="Queue every stored memory again (after changing what is shared).")
@click.option("--background", is_flag=True, hidden=True,
              help="A quiet bounded round for SessionEnd: nothing without a configured server, never waits.")
@json_option
@click.pass_context
@handles_errors
def sync(ctx: click.Context, full: bool, background: bool, as_json: bool) -> None:
    """Push this machine's shared memories to the team server, then pull what changed there."""
    if ctx.invoked_subcommand is not None:
        return
    from .. import locks, paths
    from ..team import sync as syncing
    from ..team.connection import ServerError, resolve

    settings = load_settings()
    if background:
        if syncing.background_round(syncing.BACKGROUND_SECONDS) is not None:
            db = open_db()
            try:
                embed_in_background(db)  # what it pulled
            finally:
                db.close()
        return
    db = open_db()
    try:
        with locks.held(os.path.join(paths.data_dir(), "sync.lock"), wait=LOCK_WAIT_SECONDS,
                        stale_after=ROUND_SECONDS + 60, command="sync"):
            try:
                report = syncing.run(db, resolve(settings=settings), settings, timeout=ROUND_SECONDS, requeue=full)
            except ServerError as error:
                syncing.record_failure(db, str(error))
                raise ServerError(f"{error}. Nothing was lost: this machine's memories stay here and in the "
                                  "outbox, and search works as before; run `ccmemory sync` again later") from None
    except locks.Busy:
        raise ServerError("another sync round is running on this machine; try again when it ends") from None
    else:
        embed_in_background(db)  # what it pulled
    finally:
        db.close()
    if as_json:
        emit_json(report.to_dict())
    else:
        echo(report.line())


@sync.command()
@json_option
@handles_errors
def status(as_json: bool) -> None:
    """What is shared and pending, the last round, the server and team (never a password)."""
    from ..team import sync as syncing
    from ..team.connection import resolve

    settings = load_settings()
    db = open_db()
    try:
        shown = syncing.status(db, settings, resolve(settings=settings))
    finally:
        db.close()
    if as_json:
        emit_json(shown)
        return
    echo(f"Server: {shown['server']} (from {shown['server_from']})"
         + ("" if shown["configured"] else "; no sync.url or CCMEMORY_SYNC_URL, so no background rounds"))
    echo(f"Team: {shown['team'] or 'not chosen yet (the only team you are a member of)'}; "
         f"role: {shown['role'] or 'unknown until the first sync'}")
    last = shown["last_sync"]
    echo("Last sync: " + ("never" if last is None else f"{last['at']} {'ok' if last['ok'] else 'FAILED'}: {last['line']}"))
    shared = shown["shared"]
    echo(f"Shared: {shared['personal']} personal (your machines only), {shared['team']} with the team; "
         f"{shared['from_teammates']} from teammates here")
    echo(f"Pending: {shown['pending']} in the outbox" if shown["enabled"]
         else "Pending: sync is not set up on this machine yet (the first `ccmemory sync` queues every memory)")
    if shown["waiting_for_projects"]:
        echo(f"Waiting: {shown['waiting_for_projects']} pulled memories of projects not on this machine")
    rules = shown["rules"]
    echo(f"Rules: personal {'on' if rules['personal'] else 'off'}; team sources: {', '.join(rules['team_sources'])}")
    for project in shown["projects"]:
        echo(f"  {project['name']} ({project['identity']}): {project['why']}")


@sync.command()
@click.argument("memory_id")
@click.option("--scope", type=click.Choice(["personal", "team"]), required=True,
              help="personal: only your machines; team: every member of the team.")
@project_option
@handles_errors
def share(memory_id: str, scope: str, project_dir: str | None) -> None:
    """Share one memory with the team, or take it back (personal); it travels with the next round."""
    from ..team import sync as syncing
    from .common import open_store

    db, project = open_store(project_dir)
    try:
        memory = syncing.share(db, memory_id, scope, project_id=project)
    finally:
        db.close()
    echo(f"Memory {memory.id} will be {'shared with the team' if scope == 'team' else 'personal'} "
         "after the next `ccmemory sync`.")


COMMANDS = [sync]
