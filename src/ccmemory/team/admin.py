"""Administering a team server: teams, and members with their own database role and password.

Run by the role that ran ``ccmemory server init`` (it owns the schema and needs CREATEROLE).
A member's password is generated here, sent to the server only as a SCRAM-SHA-256 verifier
(the server, its logs and ``pg_stat_activity`` never see it), and printed once for the member
to keep in ``~/.pgpass``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError
from .connection import ServerError, Target, connect, translated
from .server_schema import MEMBER_ROLE, current_version, target_version

if TYPE_CHECKING:
    import psycopg

_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,62}$")
_ROLE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
SCRAM_ITERATIONS = 4096


@dataclass
class NewMember:
    """What ``add-member`` tells the admin: the role, and its password when the role was created now."""

    role: str
    team: str
    password: str | None
    host: str
    port: int
    dbname: str

    def pgpass_line(self) -> str:
        fields = (self.host, str(self.port), self.dbname, self.role, self.password or "")
        return ":".join(field.replace("\\", "\\\\").replace(":", "\\:") for field in fields)


def scram_verifier(password: str, *, salt: bytes | None = None, iterations: int = SCRAM_ITERATIONS) -> str:
    """The SCRAM-SHA-256 verifier PostgreSQL stores for ``password`` (RFC 5802/7677, as ``\\password`` sends it)."""
    salt = salt or secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    stored_key = hashlib.sha256(client_key).digest()
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()
    salt_text, stored, server = (base64.b64encode(raw).decode("ascii") for raw in (salt, stored_key, server_key))
    return f"SCRAM-SHA-256${iterations}:{salt_text}${stored}:{server}"


def check_team_name(name: str) -> str:
    if not _NAME.match(name):
        raise ValidationError(f"team name {name!r} must be 1-63 lowercase letters, digits, '.', '_' or '-', "
                              "starting with a letter or digit")
    return name


def check_role_name(name: str) -> str:
    if not _ROLE.match(name) or name.startswith("pg_") or name == MEMBER_ROLE:
        raise ValidationError(f"role name {name!r} must be 1-63 lowercase letters, digits or '_', starting with a "
                              f"letter or '_', not starting with pg_ and not {MEMBER_ROLE}")
    return name


def _initialised(conn: psycopg.Connection[Any]) -> None:
    version = current_version(conn)
    if version != target_version():
        raise ServerError(f"the server's schema is at version {version}, this ccmemory expects {target_version()}: "
                          "run `ccmemory server init` first")


def _team_id(conn: psycopg.Connection[Any], team: str) -> int:
    row = conn.execute("SELECT id FROM ccmemory.teams WHERE name = %s", (team,)).fetchone()
    if row is None:
        raise ServerError(f"no team named {team!r} on this server; create it with `ccmemory server add-team {team}`")
    return int(row[0])


def add_team(target: Target, name: str) -> bool:
    """Create team ``name``; False when it already existed."""
    check_team_name(name)
    with connect(target) as conn, translated(target, "adding the team"):
        _initialised(conn)
        row = conn.execute("INSERT INTO ccmemory.teams (name) VALUES (%s) ON CONFLICT (name) DO NOTHING "
                           "RETURNING id", (name,)).fetchone()
        return row is not None


def add_member(target: Target, team: str, role: str, *, read_only: bool = False,
               projects: list[str] | None = None) -> NewMember:
    """Make ``role`` a member of ``team``, creating the login role with a generated password if it does not exist."""
    check_team_name(team)
    check_role_name(role)
    from psycopg import sql

    with connect(target) as conn, translated(target, "adding the member"):
        _initialised(conn)
        team_id = _team_id(conn, team)
        password = None
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() is None:
            password = secrets.token_urlsafe(24)
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(role), sql.Literal(scram_verifier(password))))
        conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(MEMBER_ROLE), sql.Identifier(role)))
        conn.execute("INSERT INTO ccmemory.members (team_id, role_name, can_write, projects) VALUES (%s, %s, %s, %s) "
                     "ON CONFLICT (team_id, role_name) DO UPDATE SET can_write = excluded.can_write, "
                     "projects = excluded.projects", (team_id, role, not read_only, projects or None))
        info = conn.info
        return NewMember(role=role, team=team, password=password, host=info.host, port=info.port,
                         dbname=info.dbname)


def remove_member(target: Target, team: str, role: str) -> bool:
    """Take ``role`` out of ``team`` (its rows stay; it sees none of them any more); False if it was not a member."""
    with connect(target) as conn, translated(target, "removing the member"):
        _initialised(conn)
        team_id = _team_id(conn, team)
        row = conn.execute("DELETE FROM ccmemory.members WHERE team_id = %s AND role_name = %s RETURNING 1",
                           (team_id, role)).fetchone()
        return row is not None
