"""Team-memory test support: a real PostgreSQL cluster, a server database with members, and "machines".

A *machine* is a throwaway data dir with its own clone of one git repository (another path, the
same portable identity) that syncs as one member role through ``CCMEMORY_SYNC_URL``. Its
commands run in this process (:func:`testing.cli.invoke`) or as real processes
(:func:`testing.cli.spawn`, :meth:`Machine.start_sync`) where the process is the point. What
reached the server is read as the admin with raw SQL. No mock of the server or of the driver.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any, Iterator

from ccmemory.team import admin, server_schema
from ccmemory.team.connection import Target

from testing import postgres
from testing.cli import MODULE, invoke, spawn
from testing.env import isolated_env


def cluster_or_skip() -> Iterator[postgres.Cluster]:
    """A module fixture's body: a started cluster, stopped after; a skip (a failure under CI) without one."""
    import pytest

    try:
        started = postgres.start()
    except postgres.Unavailable as error:
        if os.environ.get("CCMEMORY_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"CCMEMORY_REQUIRE_POSTGRES=1 but no PostgreSQL could start: {error}")
        pytest.skip(f"no PostgreSQL with pgvector could start here: {error}")
    yield started
    started.stop()


class Server:
    """A fresh database with the schema, one team ``core`` and its members' URLs."""

    def __init__(self, cluster: postgres.Cluster) -> None:
        self.cluster = cluster
        self.dbname = cluster.create_database("ccm_" + uuid.uuid4().hex[:10])
        self.admin = Target(cluster.url(dbname=self.dbname), "test", [cluster.password])
        server_schema.init(self.admin)
        admin.add_team(self.admin, "core")
        self.roles: dict[str, str] = {}

    def member(self, name: str, team: str = "core") -> str:
        """A member's URL (its password in it: a test's shortcut; users keep it in ~/.pgpass).

        Roles belong to the whole cluster: each test's ``alice`` is a role of its own (``roles[name]``).
        """
        role = self.roles[name] = f"{name}_{uuid.uuid4().hex[:8]}"
        admin.add_team(self.admin, team)
        made = admin.add_member(self.admin, team, role)
        assert made.password
        return self.cluster.url(role, made.password, self.dbname)

    def rows(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        with self.cluster.connect(self.dbname) as conn:
            return conn.execute(sql, params).fetchall()

    def execute(self, statement: str, params: Any = None, *, triggers: bool = True) -> None:
        """Run one statement as the admin; ``triggers=False`` as a hostile server would (no trigger fires)."""
        with self.cluster.connect(self.dbname) as conn:
            if not triggers:
                conn.execute("SET session_replication_role = replica")
            conn.execute(statement, params)

    def count(self) -> int:
        return int(self.rows("SELECT count(*) FROM ccmemory.memories")[0][0])

    def dump(self) -> bytes:
        """Every byte of the database, as ``pg_dump`` (the bundled one) writes it: schema and rows."""
        env = {**os.environ, "PGPASSWORD": self.cluster.password}
        return subprocess.run([str(self.cluster.bin / "pg_dump"), "-h", self.cluster.host,
                               "-p", str(self.cluster.port), "-U", postgres.SUPERUSER, self.dbname],
                              env=env, capture_output=True, check=True, timeout=120).stdout


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=isolated_env(None), check=True, capture_output=True, timeout=60)


def make_origin(folder: Path) -> Path:
    """A git repository with one commit: the project every machine clones."""
    folder.mkdir(parents=True)
    git(folder, "init", "-q", "-b", "main")
    (folder / "README.md").write_text("the app\n")
    git(folder, "add", "README.md")
    git(folder, "commit", "-q", "-m", "first")
    return folder


class Machine:
    """One data dir with its own clone of ``origin``, syncing as ``url``'s role."""

    def __init__(self, tmp_path: Path, name: str, origin: Path, url: str | None) -> None:
        self.home = tmp_path / f"{name}-data"
        self.project = tmp_path / f"{name}-checkout" / "app"
        self.project.parent.mkdir(parents=True)
        git(self.project.parent, "clone", "-q", str(origin), str(self.project))
        self.url = url

    def env(self) -> dict[str, str]:
        return {"CCMEMORY_SYNC_URL": self.url} if self.url else {}

    def run(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        result = invoke(self.home, self.project, *args, **self.env())
        if ok:
            assert result.returncode == 0, result.stdout + result.stderr
        return result

    def spawn(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """``ccmemory *args`` as a real process."""
        return spawn(self.home, self.project, *args, timeout=timeout, **self.env())

    def start_sync(self) -> subprocess.Popen[str]:
        """``ccmemory sync --json`` started as a real process (the caller waits for it, or kills it)."""
        return subprocess.Popen([*MODULE, "sync", "--json"], cwd=self.project,
                                env=isolated_env(self.home, **self.env()), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def sync(self) -> dict[str, Any]:
        report: dict[str, Any] = json.loads(self.run("sync", "--json").stdout)
        return report

    def add(self, text: str, **options: str) -> str:
        args = [f"--{key}={value}" for key, value in options.items()]
        created = json.loads(self.run("add", text, *args, "--json").stdout)
        return str(created["id"])

    def fill(self, texts: list[str], *, source: str = "manual") -> list[str]:
        """Store ``texts`` as memories of the project at once (the store's own ``add``, one transaction): their ids.

        Opens the store in this process: run the CLI as a real process (:meth:`spawn`) afterwards.
        """
        from ccmemory import db as database, memories, paths, projects

        store = database.connect(paths.ensure_private_dir(self.home) / paths.DB_FILENAME)
        try:
            project_id = projects.project_id(store, self.project)
            assert project_id is not None
            with store.transaction():
                return [memories.add(store, project_id=project_id, content=text, source=source).id for text in texts]
        finally:
            store.close()

    def search(self, query: str, *extra: str) -> list[dict[str, Any]]:
        hits: list[dict[str, Any]] = json.loads(self.run("search", query, "--mode", "keyword", "--json",
                                                         *extra).stdout)
        return hits

    def memories(self) -> dict[str, dict[str, Any]]:
        listed = json.loads(self.run("list", "--include-deleted", "--limit", "10000", "--json").stdout)
        return {row["id"]: row for row in listed}


def state(machine: Machine) -> set[tuple[Any, ...]]:
    """What must be equal on every machine: each memory's id, text, deleted and superseded marks."""
    return {(m["id"], m["content"] if not m["is_deleted"] else "", m["is_deleted"], m["is_superseded"])
            for m in machine.memories().values()}
