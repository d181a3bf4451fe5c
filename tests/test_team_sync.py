"""The sync client against a real PostgreSQL 16 + pgvector (``testing.postgres``): two machines and a teammate.

A "machine" is a throwaway data dir with its own clone of one git repository (another path, the
same portable identity), running the real ``ccmemory`` command line (and the real hooks where
the hook is the point) with ``CCMEMORY_SYNC_URL`` naming the server as its member role. What
reached the server is read as the admin, with raw SQL. No mock of the server or of the driver.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from ccmemory.team import admin, server_schema
from ccmemory.team.connection import Target

from testing import postgres
from testing.cli import invoke
from testing.env import isolated_env
from testing.hooks import assert_quiet_success, bash_call, common, run_hook, write_config


@pytest.fixture(scope="module")
def cluster() -> Iterator[postgres.Cluster]:
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

    def member(self, role: str, team: str = "core") -> str:
        """A member's URL (its password in it: a test's shortcut; users keep it in ~/.pgpass)."""
        admin.add_team(self.admin, team)
        made = admin.add_member(self.admin, team, role)
        assert made.password
        return self.cluster.url(role, made.password, self.dbname)

    def rows(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        with self.cluster.connect(self.dbname) as conn:
            return conn.execute(sql, params).fetchall()

    def dump(self) -> bytes:
        """Every byte of the database's rows, as ``pg_dump --data-only`` writes them."""
        env = {**os.environ, "PGPASSWORD": self.cluster.password}
        return subprocess.run([str(self.cluster.bin / "pg_dump"), "--data-only", "-h", self.cluster.host,
                               "-p", str(self.cluster.port), "-U", postgres.SUPERUSER, self.dbname],
                              env=env, capture_output=True, check=True, timeout=120).stdout


@pytest.fixture
def server(cluster: postgres.Cluster) -> Server:
    return Server(cluster)


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=isolated_env(None), check=True, capture_output=True, timeout=60)


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    repo = tmp_path / "origin"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("the app\n")
    _git(repo, "add", "README.md")
    _git(repo, "commit", "-q", "-m", "first")
    return repo


class Machine:
    """One data dir with its own clone of ``origin``, syncing as ``url``'s role."""

    def __init__(self, tmp_path: Path, name: str, origin: Path, url: str | None) -> None:
        self.home = tmp_path / f"{name}-data"
        self.project = tmp_path / f"{name}-checkout" / "app"
        self.project.parent.mkdir(parents=True)
        _git(self.project.parent, "clone", "-q", str(origin), str(self.project))
        self.url = url

    def env(self) -> dict[str, str]:
        return {"CCMEMORY_SYNC_URL": self.url} if self.url else {}

    def run(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        result = invoke(self.home, self.project, *args, **self.env())
        if ok:
            assert result.returncode == 0, result.stdout + result.stderr
        return result

    def sync(self) -> dict[str, Any]:
        report: dict[str, Any] = json.loads(self.run("sync", "--json").stdout)
        return report

    def add(self, text: str, **options: str) -> str:
        args = [f"--{key}={value}" for key, value in options.items()]
        created = json.loads(self.run("add", text, *args, "--json").stdout)
        return str(created["id"])

    def search(self, query: str, *extra: str) -> list[dict[str, Any]]:
        hits: list[dict[str, Any]] = json.loads(self.run("search", query, "--mode", "keyword", "--json",
                                                         *extra).stdout)
        return hits

    def memories(self) -> dict[str, dict[str, Any]]:
        listed = json.loads(self.run("list", "--include-deleted", "--limit", "1000", "--json").stdout)
        return {row["id"]: row for row in listed}


def _state(machine: Machine) -> set[tuple[Any, ...]]:
    """What must be equal on every machine: each memory's id, text, deleted and superseded marks."""
    return {(m["id"], m["content"] if not m["is_deleted"] else "", m["is_deleted"], m["is_superseded"])
            for m in machine.memories().values()}


def test_a_memory_added_on_one_machine_is_found_on_the_other(tmp_path: Path, server: Server, origin: Path) -> None:
    url = server.member("alice")
    laptop = Machine(tmp_path, "laptop", origin, url)
    desktop = Machine(tmp_path, "desktop", origin, url)
    desktop.add("warm-up so the project exists here")
    memory_id = laptop.add("We chose the blue-green deploy because the database migrations are slow",
                           category="architecture")
    pushed = laptop.sync()
    assert pushed["pushed"] == 1 and pushed["team"] == "core" and pushed["role"] == "alice", pushed
    pulled = desktop.sync()
    assert pulled["pulled"] >= 1, pulled
    hits = desktop.search("blue-green deploy")
    assert [hit["memory"]["id"] for hit in hits] == [memory_id]
    assert hits[0]["shared"] is None  # my own memory, from my other machine: no teammate label
    again = laptop.sync()
    assert again["pushed"] == 0 and again["pulled"] >= 1  # the desktop's warm-up memory; nothing echoed back
    assert laptop.sync()["pulled"] == 0
    assert _state(laptop) == _state(desktop)
