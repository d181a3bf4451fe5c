"""The team server on a real PostgreSQL 16 + pgvector (``testing.postgres``, from the pgserver wheel).

What the database itself enforces, shown with raw SQL under each member's own credentials
(``psql`` with ``PG*`` variables, as a teammate would): schema creation and migration, team and
project isolation by row-level security, personal rows seen by their owner alone, deletes and
un-sharing that travel, the indexes a server-side search uses, and credentials kept out of
every message. Skipped, saying why, only where no PostgreSQL can start (CI installs pgserver
and sets CCMEMORY_REQUIRE_POSTGRES=1, which makes that a failure).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from ccmemory.team import admin, connection, server_schema
from ccmemory.team.connection import ServerError, Target

from testing import postgres
from testing.cli import invoke


class Server:
    """One fresh database on the cluster, its schema created, with the admin's target."""

    def __init__(self, cluster: postgres.Cluster) -> None:
        self.cluster = cluster
        self.dbname = cluster.create_database("ccm_" + uuid.uuid4().hex[:10])
        self.url = cluster.url(dbname=self.dbname)
        self.admin = Target(self.url, "test", [cluster.password])
        self.passwords: dict[str, str] = {}

    def member(self, team: str, role: str, **kw: Any) -> str:
        admin.add_team(self.admin, team)
        created = admin.add_member(self.admin, team, role, **kw)
        if created.password:
            self.passwords[role] = created.password
        return role

    def sql(self, role: str, statement: str) -> Any:
        """``statement`` run by ``role`` with psql; the CompletedProcess."""
        return self.cluster.psql(statement, user=role, password=self.passwords[role], dbname=self.dbname)

    def ok(self, role: str, statement: str) -> list[str]:
        result = self.sql(role, statement)
        assert result.returncode == 0, result.stderr
        return [line for line in result.stdout.splitlines() if line and not line.startswith(("INSERT", "UPDATE"))]

    def admin_sql(self, statement: str, params: Any = None) -> list[tuple[Any, ...]]:
        with self.cluster.connect(self.dbname) as conn:
            return conn.execute(statement, params).fetchall()


@pytest.fixture
def server(cluster: postgres.Cluster) -> Server:
    made = Server(cluster)
    server_schema.init(made.admin)
    return made


def _unique() -> str:
    return "r" + uuid.uuid4().hex[:12]


def add_memory(server: Server, role: str, team: str, *, scope: str = "team", content: str = "a decision",
               project: str = "git:1111", vector: list[float] | None = None) -> str:
    memory_id = str(uuid.uuid4())
    embedding = f"'{vector}'::ccmemory.vector, 'test-model'" if vector else "NULL, NULL"
    server.ok(role, f"INSERT INTO ccmemory.projects (team_id, project) SELECT id, '{project}' FROM ccmemory.teams "
                    f"WHERE name = '{team}' ON CONFLICT DO NOTHING")
    server.ok(role, "INSERT INTO ccmemory.memories (id, team_id, project, scope, created_at, updated_at, content, "
                    f"embedding, embedding_model) SELECT '{memory_id}', id, '{project}', '{scope}', now(), now(), "
                    f"'{content}', {embedding} FROM ccmemory.teams WHERE name = '{team}'")
    return memory_id


# --- creating and migrating ------------------------------------------------------------------------------------


def test_server_init_creates_the_schema_then_finds_it_up_to_date(cluster: postgres.Cluster, home: Path) -> None:
    dbname = cluster.create_database("ccm_" + uuid.uuid4().hex[:10])
    url = cluster.url(dbname=dbname)
    first = invoke(home, None, "server", "init", url)
    assert first.returncode == 0, first.stderr
    assert f"version {server_schema.target_version()} (was 0)" in first.stdout
    again = invoke(home, None, "server", "init", url, "--json")
    assert again.returncode == 0, again.stderr
    latest = server_schema.target_version()
    assert f'"version_before": {latest}' in again.stdout and f'"version": {latest}' in again.stdout
    with cluster.connect(dbname) as conn:
        assert conn.execute("SELECT version FROM ccmemory.schema_version ORDER BY version").fetchall() == [
            (n,) for n in range(1, latest + 1)]
        tables = {row[0] for row in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'ccmemory'").fetchall()}
        secured = {row[0] for row in conn.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = 'ccmemory'::regnamespace AND relrowsecurity")}
    assert {"teams", "members", "projects", "memories", "tombstones", "schema_version"} <= tables
    assert {"teams", "members", "projects", "memories", "tombstones"} <= secured


def test_a_schema_newer_than_this_client_is_refused(server: Server) -> None:
    server.admin_sql("INSERT INTO ccmemory.schema_version (version) VALUES (99) RETURNING version")
    with pytest.raises(ServerError, match="newer than this ccmemory knows"):
        server_schema.init(server.admin)


@pytest.mark.parametrize(("number", "refused"), [(90624, True), (120017, True), (130000, False), (160002, False)])
def test_server_versions_older_than_13_are_refused(number: int, refused: bool) -> None:
    if refused:
        with pytest.raises(ServerError, match="older than the oldest ccmemory supports"):
            connection.check_server_version(number)
    else:
        connection.check_server_version(number)


def test_pgvector_must_be_there_and_have_hnsw() -> None:
    for missing_or_old in (None, "0.4.4"):
        with pytest.raises(ServerError, match="pgvector|vector"):
            connection.check_pgvector(missing_or_old)
    connection.check_pgvector("0.5.0")
    connection.check_pgvector("0.6.2")


# --- isolation, enforced by the database ----------------------------------------------------------------------


def test_another_teams_credentials_cannot_read_or_change_its_rows(server: Server) -> None:
    alpha, beta = _unique(), _unique()
    alice = server.member(alpha, _unique())
    bob = server.member(beta, _unique())
    memory = add_memory(server, alice, alpha, content="alpha keeps the deploy key rotation schedule")
    add_memory(server, alice, alpha, scope="personal", content="alice own note")

    assert server.ok(bob, "SELECT count(*) FROM ccmemory.memories") == ["0"]
    assert server.ok(bob, "SELECT count(*) FROM ccmemory.projects") == ["0"]
    assert server.ok(bob, "SELECT count(*) FROM ccmemory.teams") == ["1"]  # his own team only
    assert server.ok(bob, "SELECT count(*) FROM ccmemory.members") == ["1"]  # his own membership only
    assert server.ok(bob, f"UPDATE ccmemory.memories SET content = 'x' WHERE id = '{memory}' RETURNING id") == []
    refused = server.sql(bob, f"DELETE FROM ccmemory.memories WHERE id = '{memory}'")
    assert refused.returncode != 0 and "permission denied" in refused.stderr
    forged = server.sql(bob, "INSERT INTO ccmemory.memories (id, team_id, project, scope, created_at, updated_at, "
                             f"content) SELECT '{uuid.uuid4()}', id, 'git:1111', 'team', now(), now(), 'planted' "
                             f"FROM ccmemory.teams WHERE name = '{alpha}'")
    assert forged.returncode == 0 and "INSERT 0 0" in forged.stdout  # he cannot even name alpha's team id
    team_id = server.admin_sql("SELECT id FROM ccmemory.teams WHERE name = %s", (alpha,))[0][0]
    planted = server.sql(bob, "INSERT INTO ccmemory.memories (id, team_id, project, scope, created_at, updated_at, "
                              f"content) VALUES ('{uuid.uuid4()}', {team_id}, 'git:1111', 'team', now(), now(), 'x')")
    assert planted.returncode != 0 and "row-level security" in planted.stderr
    for table in ("members", "teams"):
        changed = server.sql(bob, f"DELETE FROM ccmemory.{table}")
        assert changed.returncode != 0 and "permission denied" in changed.stderr
    assert server.admin_sql("SELECT content FROM ccmemory.memories WHERE id = %s", (memory,)) == [
        ("alpha keeps the deploy key rotation schedule",)]


def test_personal_rows_are_seen_by_their_owner_alone(server: Server) -> None:
    team = _unique()
    alice, carol = server.member(team, _unique()), server.member(team, _unique())
    shared = add_memory(server, alice, team, content="team decision")
    private = add_memory(server, alice, team, scope="personal", content="alice own note")
    assert sorted(server.ok(alice, "SELECT id FROM ccmemory.memories")) == sorted([shared, private])
    assert server.ok(carol, "SELECT id FROM ccmemory.memories") == [shared]
    assert server.ok(carol, f"UPDATE ccmemory.memories SET content = 'mine now' WHERE id = '{shared}' "
                            "RETURNING id") == []  # a teammate's row is read-only to her
    posing = server.sql(carol, "INSERT INTO ccmemory.memories (id, team_id, project, scope, owner, created_at, "
                               f"updated_at, content) SELECT '{uuid.uuid4()}', id, 'git:1111', 'personal', '{alice}', "
                               f"now(), now(), 'as alice' FROM ccmemory.teams WHERE name = '{team}'")
    assert posing.returncode != 0 and "row-level security" in posing.stderr


def test_project_limited_and_read_only_members(server: Server) -> None:
    team = _unique()
    alice = server.member(team, _unique())
    dave = server.member(team, _unique(), projects=["git:2222"])
    erin = server.member(team, _unique(), read_only=True)
    add_memory(server, alice, team, project="git:1111", content="in project one")
    other = add_memory(server, alice, team, project="git:2222", content="in project two")
    assert server.ok(dave, "SELECT id FROM ccmemory.memories") == [other]
    assert server.ok(erin, "SELECT count(*) FROM ccmemory.memories") == ["2"]
    refused = server.sql(erin, "INSERT INTO ccmemory.memories (id, team_id, project, scope, created_at, updated_at, "
                               f"content) SELECT '{uuid.uuid4()}', id, 'git:1111', 'team', now(), now(), 'x' "
                               f"FROM ccmemory.teams WHERE name = '{team}'")
    assert refused.returncode != 0 and "row-level security" in refused.stderr
    admin.remove_member(server.admin, team, dave)
    assert server.ok(dave, "SELECT count(*) FROM ccmemory.memories") == ["0"]


# --- changes, cursors, deletes and un-sharing ---------------------------------------------------------------------


def test_changes_travel_in_cursor_order_and_deletes_clear_content(server: Server) -> None:
    team = _unique()
    alice, carol = server.member(team, _unique()), server.member(team, _unique())
    first, second = add_memory(server, alice, team, content="first"), add_memory(server, alice, team, content="two")
    pull = "SELECT id || ' ' || updated_seq FROM ccmemory.memories WHERE updated_seq > {} ORDER BY updated_seq"
    rows = server.ok(carol, pull.format(0))
    assert [row.split()[0] for row in rows] == [first, second]
    cursor = int(rows[-1].split()[1])
    assert server.ok(carol, pull.format(cursor)) == []
    server.ok(alice, f"UPDATE ccmemory.memories SET deleted = true WHERE id = '{first}'")
    [changed] = server.ok(carol, pull.format(cursor))
    assert changed.split()[0] == first and int(changed.split()[1]) > cursor
    assert server.ok(carol, f"SELECT deleted::text || '|' || content FROM ccmemory.memories WHERE id = '{first}'") == [
        "true|"]
    moved = server.sql(alice, f"UPDATE ccmemory.memories SET owner = '{carol}' WHERE id = '{second}'")
    assert moved.returncode != 0


def test_a_row_taken_back_from_the_team_leaves_a_tombstone(server: Server) -> None:
    team = _unique()
    alice, carol = server.member(team, _unique()), server.member(team, _unique())
    memory = add_memory(server, alice, team, content="shared, then taken back")
    server.ok(alice, f"UPDATE ccmemory.memories SET scope = 'personal' WHERE id = '{memory}'")
    assert server.ok(carol, "SELECT count(*) FROM ccmemory.memories") == ["0"]
    assert server.ok(carol, "SELECT memory_id FROM ccmemory.tombstones") == [memory]
    assert server.ok(alice, "SELECT scope FROM ccmemory.memories") == ["personal"]
    outsider = server.member(_unique(), _unique())
    assert server.ok(outsider, "SELECT count(*) FROM ccmemory.tombstones") == ["0"]


# --- server-side search ------------------------------------------------------------------------------------------


def _vector(seed: int) -> list[float]:
    import random

    rng = random.Random(seed)
    return [round(rng.uniform(-1, 1), 4) for _ in range(server_schema.DEFAULT_DIMENSIONS)]


def test_search_functions_use_the_gin_and_hnsw_indexes_and_see_what_the_caller_may(server: Server) -> None:
    team, other = _unique(), _unique()
    alice, bob = server.member(team, _unique()), server.member(other, _unique())
    target = add_memory(server, alice, team, content="flaky webhook retries after the signature check",
                        vector=_vector(1))
    for n in range(30):
        add_memory(server, alice, team, content=f"unrelated note number {n}", vector=_vector(100 + n))
    hit = server.ok(alice, f"SELECT id FROM ccmemory.search_text('{team}', 'git:1111', 'webhook signature', 5)")
    assert hit == [target]
    assert server.ok(bob, f"SELECT count(*) FROM ccmemory.search_text('{team}', 'git:1111', 'webhook', 5)") == ["0"]
    nearest = server.ok(alice, f"SELECT id FROM ccmemory.search_vector('{team}', 'git:1111', "
                               f"'{_vector(1)}'::ccmemory.vector, 'test-model', 3)")
    assert nearest[0] == target
    assert server.ok(bob, f"SELECT count(*) FROM ccmemory.search_vector('{team}', 'git:1111', "
                          f"'{_vector(1)}'::ccmemory.vector, 'test-model', 3)") == ["0"]

    with server.cluster.connect(server.dbname) as conn:
        conn.execute("SET search_path = ccmemory, pg_catalog")
        conn.execute(f"PREPARE by_vector(text, text, vector, text, int) AS {server_schema.SEARCH_VECTOR_SQL}")
        vector_plan = "\n".join(row[0] for row in conn.execute(  # the planner's own choice, nothing forced
            f"EXPLAIN EXECUTE by_vector('{team}', 'git:1111', '{_vector(1)}', 'test-model', 5)"))
        conn.execute("SET enable_seqscan = off")  # 31 rows: a scan is cheaper; forced, the plan shows the index fits
        conn.execute(f"PREPARE by_text(text, text, text, int) AS {server_schema.SEARCH_TEXT_SQL}")
        text_plan = "\n".join(row[0] for row in conn.execute(
            f"EXPLAIN EXECUTE by_text('{team}', 'git:1111', 'webhook', 5)"))
    assert "memories_fts" in text_plan, text_plan
    assert "memories_hnsw_384" in vector_plan, vector_plan


# --- members and their credentials -------------------------------------------------------------------------------


def test_add_member_prints_a_working_pgpass_line_and_stores_only_a_verifier(
        server: Server, home: Path, tmp_path: Path) -> None:
    team, role = _unique(), _unique()
    assert invoke(home, None, "server", "add-team", team, server.url).returncode == 0
    added = invoke(home, None, "server", "add-member", team, role, server.url)
    assert added.returncode == 0, added.stderr
    [line] = [text.strip() for text in added.stdout.splitlines() if text.strip().startswith("127.0.0.1:")]
    password = line.rsplit(":", 1)[1]
    assert f"sync.url postgresql://{role}@127.0.0.1:" in added.stdout and password not in line.rsplit(":", 1)[0]
    [(stored,)] = server.admin_sql("SELECT rolpassword FROM pg_authid WHERE rolname = %s", (role,))
    assert stored.startswith("SCRAM-SHA-256$") and password not in stored
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(line + "\n")
    pgpass.chmod(0o600)
    env = {**os.environ, "PGHOST": "127.0.0.1", "PGPORT": str(server.cluster.port), "PGUSER": role,
           "PGDATABASE": server.dbname, "PGPASSFILE": str(pgpass)}
    env.pop("PGPASSWORD", None)
    import subprocess

    who = subprocess.run([str(server.cluster.bin / "psql"), "-X", "-At", "-c", "SELECT current_user"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert who.stdout.strip() == role, who.stderr
    again = invoke(home, None, "server", "add-member", team, role, server.url)
    assert "already existed" in again.stdout and password not in again.stdout


def test_credentials_never_appear_in_errors(server: Server, home: Path) -> None:
    secret = "Sup3r-" + uuid.uuid4().hex
    cluster = server.cluster
    wrong = f"postgresql://ccm_admin:{secret}@127.0.0.1:{cluster.port}/{server.dbname}"
    with pytest.raises(ServerError) as refused:
        server_schema.init(connection.resolve(wrong))
    assert "password authentication failed" in str(refused.value) and secret not in str(refused.value)

    closed = f"postgresql://someone:{secret}@127.0.0.1:1/{server.dbname}"
    keywords = f"host=127.0.0.1 port=1 user=someone password={secret} dbname=x"
    for conninfo in (closed, keywords, wrong):
        result = invoke(home, None, "server", "init", conninfo)
        assert result.returncode == 1
        assert secret not in result.stdout + result.stderr and "failed on the server" in result.stderr
    env_run = invoke(home, None, "server", "add-team", "t", CCMEMORY_SYNC_URL=closed)
    assert env_run.returncode == 1 and secret not in env_run.stdout + env_run.stderr
    for written in home.rglob("*") if home.exists() else []:
        if written.is_file():
            assert secret.encode() not in written.read_bytes(), written


def test_a_password_in_a_config_file_others_can_read_is_refused(home: Path) -> None:
    secret = "Sup3r-" + uuid.uuid4().hex
    assert invoke(home, None, "config", "set", "sync.url", f"postgresql://me:{secret}@127.0.0.1:1/db").returncode == 0
    config_file = home / "config.json"
    assert config_file.stat().st_mode & 0o077 == 0
    shown = invoke(home, None, "config", "show")
    assert secret not in shown.stdout and "postgresql://me:***@127.0.0.1:1/db" in shown.stdout
    assert secret not in invoke(home, None, "config", "get", "sync.url").stdout
    config_file.chmod(0o644)
    refused = invoke(home, None, "server", "init")
    assert refused.returncode == 1 and "chmod 600" in refused.stderr and secret not in refused.stderr
    config_file.chmod(0o600)
    unreachable = invoke(home, None, "server", "init")
    assert unreachable.returncode == 1 and f"sync.url in {config_file}" in unreachable.stderr
    assert secret not in unreachable.stderr


def test_scrub_masks_url_and_keyword_passwords() -> None:
    text = "postgresql://u:p%40ss@h/db and password='a b' and host=h password=xyz; also hunter2"
    cleaned = connection.scrub(text, ["hunter2"])
    for secret in ("p%40ss", "a b", "xyz", "hunter2"):
        assert secret not in cleaned
    assert "postgresql://u:***@h/db" in cleaned
