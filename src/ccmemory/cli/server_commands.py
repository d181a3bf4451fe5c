"""``ccmemory server``: create and migrate a team server's schema, and add its teams and members."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .groups import WholeHelpGroup

from .common import echo, emit_json, handles_errors, json_option

if TYPE_CHECKING:
    from ..team.connection import Target

url_argument = click.argument("url", required=False)
URL_HELP = ("URL names the server (postgresql://USER@HOST:PORT/DB); without it, CCMEMORY_SYNC_URL, the "
            "sync.url setting, then libpq's PG* variables, PGSERVICE and ~/.pgpass. Keep the password in "
            "~/.pgpass, not in the URL.")


def _target(url: str | None) -> Target:
    from ..team import connection

    return connection.resolve(url)


@click.group(cls=WholeHelpGroup)
def server() -> None:
    """A team server on PostgreSQL + pgvector: create its schema, add teams and members (docs/team.md)."""


@server.command(epilog=URL_HELP)
@url_argument
@json_option
@handles_errors
def init(url: str | None, as_json: bool) -> None:
    """Create or migrate the team server's schema (PostgreSQL 13+ with pgvector 0.5+)."""
    from ..team import server_schema

    before, after = server_schema.init(_target(url))
    if as_json:
        emit_json({"version_before": before, "version": after})
    elif before == after:
        echo(f"The server's schema is up to date (version {after}).")
    else:
        echo(f"The server's schema is at version {after} (was {before}).")


@server.command("add-team", epilog=URL_HELP)
@click.argument("name")
@url_argument
@handles_errors
def add_team(name: str, url: str | None) -> None:
    """Create a team (lowercase letters, digits, '.', '_', '-')."""
    from ..team import admin

    created = admin.add_team(_target(url), name)
    echo(f"Team {name} {'created' if created else 'already exists'}.")


@server.command("add-member", epilog=URL_HELP)
@click.argument("team")
@click.argument("role")
@url_argument
@click.option("--read-only", is_flag=True, help="The member reads the team's memories but shares none.")
@click.option("--project", "projects", multiple=True,
              help="Limit the member to this project identity (repeatable; default: every project of the team).")
@handles_errors
def add_member(team: str, role: str, url: str | None, read_only: bool, projects: tuple[str, ...]) -> None:
    """Add ROLE to TEAM, creating the database login role with a generated password (printed once)."""
    from ..team import admin

    member = admin.add_member(_target(url), team, role, read_only=read_only,
                              projects=list(projects) or None)
    echo(f"{role} is a {'read-only ' if read_only else ''}member of {team}.")
    if member.password is None:
        echo(f"The role {role} already existed: its password is unchanged.")
        return
    echo("Its password is shown this once. The member adds this line to ~/.pgpass (then chmod 600 ~/.pgpass):")
    echo(f"  {member.pgpass_line()}")
    echo("and points ccmemory at the server, without the password:")
    echo(f"  ccmemory config set sync.url postgresql://{role}@{member.host}:{member.port}/{member.dbname}")


@server.command("remove-member", epilog=URL_HELP)
@click.argument("team")
@click.argument("role")
@url_argument
@handles_errors
def remove_member(team: str, role: str, url: str | None) -> None:
    """Take ROLE out of TEAM: it no longer sees or changes the team's memories (the role itself stays)."""
    from ..team import admin

    removed = admin.remove_member(_target(url), team, role)
    echo(f"{role} {'removed from' if removed else 'was not a member of'} {team}.")


COMMANDS = [server]
