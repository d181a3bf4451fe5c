"""Scopes through the real entry points: two projects sharing one store, the MCP server, the CLI and the hooks.

A user-wide memory is shown in every project's SessionStart and search; ``scope=all`` finds another
project's memory labelled with its project, ``scope=project`` never does; ids of another project stay
refused; export and import carry user-wide memories only when asked; SessionEnd proposes, never moves.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
from pathlib import Path

import pytest
from testing.cli import spawn
from testing.hooks import common, run_hook
from testing.mcp import running_server
from testing.schema import add_memory, store_before

from ccmemory import clock, db as database, memories, migrations, projects, scopes
from ccmemory.vocabulary import MCP_SOURCE

PREFERENCE = "I always use uv to install Python packages, never pip"
ALPHA = "Alpha deploys through the blue-green script in ops/deploy.sh"
BETA = "Beta deploys with helm charts kept under charts/beta"


def _created(text: str) -> str:
    found = re.search(r"Memory created: ([0-9a-f-]{36})", text)
    assert found, text
    return found.group(1)


def _cli(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real ``ccmemory`` process (the test reads the store itself, so not in this process)."""
    return spawn(home, cwd, *args)


def _session_start(home: Path, project: Path, session_id: str) -> str:
    result = run_hook("session_start", common(session_id, project, "SessionStart", source="startup"), home)
    assert result.returncode == 0, result.stderr.decode()
    return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


@pytest.fixture
def two_projects(tmp_path: Path) -> tuple[Path, Path, Path]:
    home = tmp_path / "home"
    alpha, beta = tmp_path / "alpha", tmp_path / "beta"
    for folder in (alpha, beta):
        (folder / ".git").mkdir(parents=True)
    return home, alpha, beta


def test_user_memory_everywhere_all_labelled_project_confined(two_projects: tuple[Path, Path, Path]) -> None:
    home, alpha, beta = two_projects
    alpha, beta = alpha.resolve(), beta.resolve()
    with running_server(home, alpha) as server:
        answer = server.call("memory_add", {"content": PREFERENCE, "scope": "user"})
        assert not answer.is_error and "user-wide" in answer.text, answer.text
        preference = _created(answer.text)
        alpha_id = _created(server.call("memory_add", {"content": ALPHA}).text)

        added = _cli(home, beta, "add", "--json", BETA)
        assert added.returncode == 0, added.stderr
        beta_id = json.loads(added.stdout)["id"]

        # The user memory is in both projects' SessionStart (real hook processes), said to be user-wide.
        for project, own, other in ((alpha, ALPHA, BETA), (beta, BETA, ALPHA)):
            injected = _session_start(home, project, f"start-{project.name}")
            user_part = injected.split("User-wide memories (yours, shown in every project", 1)[1]
            assert PREFERENCE in user_part.split("Project memories", 1)[0]
            assert own in injected and other not in injected

        # ... and in search from both: the MCP server in alpha, the CLI in beta.
        found = server.call("memory_search", {"query": "install Python packages uv", "mode": "keyword"})
        assert preference in found.text and "user-wide" in found.text, found.text
        hits = json.loads(_cli(home, beta, "search", "--mode", "keyword", "--json", "install packages uv").stdout)
        assert [(hit["memory"]["id"], hit["origin"]) for hit in hits] == [(preference, "user-wide")]
        listed = server.call("memory_list", {"scope": "user"})
        assert preference in listed.text and alpha_id not in listed.text

        # scope=all finds the other project's memory, labelled with that project; scope=project never does.
        everywhere = server.call("memory_search", {"query": "helm charts deploys", "mode": "keyword", "scope": "all"})
        assert beta_id in everywhere.text and f"project beta ({beta})" in everywhere.text, everywhere.text
        here = server.call("memory_search", {"query": "helm charts deploys", "mode": "keyword"})
        assert beta_id not in here.text and BETA[:20] not in here.text
        assert beta_id not in server.call("memory_list", {"limit": 200}).text
        hits = json.loads(_cli(home, beta, "search", "--scope", "all", "--mode", "keyword", "--json",
                               "blue-green deploys").stdout)
        assert {(hit["memory"]["id"], hit["origin"]) for hit in hits} >= {(alpha_id, f"project alpha ({alpha})")}
        hits = json.loads(_cli(home, beta, "search", "--mode", "keyword", "--json", "blue-green deploys").stdout)
        assert alpha_id not in [hit["memory"]["id"] for hit in hits]

        # Ids of another project stay refused where the scope is the project; user-wide ones are everyone's.
        for tool, arguments in (("memory_get", {"ids": [beta_id]}), ("memory_delete", {"memory_id": beta_id}),
                                ("memory_reinforce", {"memory_id": beta_id}),
                                ("memory_timeline", {"anchor_id": beta_id}),
                                ("memory_supersede", {"old_memory_id": beta_id, "new_memory_id": alpha_id})):
            refused = server.call(tool, arguments)
            assert refused.is_error and BETA[:20] not in refused.text, (tool, refused.text)
        read = server.call("memory_get", {"ids": [beta_id], "scope": "all"})
        assert not read.is_error and BETA in read.text and f"project beta ({beta})" in read.text
        for command in (("get", alpha_id), ("delete", alpha_id), ("reinforce", alpha_id)):
            refused_cli = _cli(home, beta, *command)
            assert refused_cli.returncode == 1 and re.search("not found|no memory", refused_cli.stderr.lower()), \
                refused_cli.stderr
        assert _cli(home, beta, "get", "--scope", "all", alpha_id).returncode == 0
        assert PREFERENCE in _cli(home, beta, "get", preference).stdout
        db = server.connect()
        try:
            assert db.scalar("SELECT COUNT(*) FROM memories WHERE is_deleted = 0") == 3  # nothing was deleted
        finally:
            db.close()


def test_a_user_memory_from_elsewhere_brings_no_session_of_its_project(home: Path, tmp_path: Path) -> None:
    alpha, beta = tmp_path / "alpha", tmp_path / "beta"
    db = database.connect(vectors=False)
    try:
        a, b = projects.project_id(db, alpha), projects.project_id(db, beta)
        from ccmemory import sessions

        made = memories.add(db, project_id=a, content=PREFERENCE, session_id="secret-session", scope="user")
        sessions.set_summary(db, "secret-session", "Request: rotate the alpha database password")
        memories.add(db, project_id=a, content="alpha neighbour written right after", session_id="secret-session")
        result = memories.timeline(db, made.id, project_id=b)
        assert result["sessions"] == {} and result["before"] == result["after"] == []
        own = memories.timeline(db, made.id, project_id=a)
        assert own["sessions"] and own["after"]
    finally:
        db.close()


def test_export_carries_user_memories_and_import_writes_them_only_when_asked(home: Path, tmp_path: Path) -> None:
    from ccmemory.archive import jsonl, records
    from ccmemory.redaction import redact

    alpha = tmp_path / "alpha"
    db = database.connect(vectors=False)
    try:
        a = projects.project_id(db, alpha)
        user = memories.add(db, project_id=a, content=PREFERENCE, scope="user")
        memories.add(db, project_id=a, content=ALPHA)
        every = io.StringIO()
        jsonl.export(db, every, records.Scope())
        one_project = io.StringIO()
        jsonl.export(db, one_project, records.Scope(project_ids=(a,)))
    finally:
        db.close()
    exported = [json.loads(line) for line in every.getvalue().splitlines() if '"memory"' in line]
    assert [(record["content"], record.get("scope")) for record in exported] == [(PREFERENCE, "user"), (ALPHA, None)]
    assert PREFERENCE not in one_project.getvalue() and ALPHA in one_project.getvalue()

    elsewhere = tmp_path / "elsewhere"
    other = database.connect(tmp_path / "other.db", vectors=False)
    try:
        into = projects.project_id(other, elsewhere)
        report = jsonl.import_file(other, io.BytesIO(every.getvalue().encode()), redact=redact, into_project=into)
        assert report.user_memories == [] and report.skipped >= 1
        assert other.scalar("SELECT COUNT(*) FROM memories WHERE scope = 'user'") == 0
        assert other.scalar("SELECT COUNT(*) FROM memories") == 1
        asked = jsonl.import_file(other, io.BytesIO(every.getvalue().encode()), redact=redact, into_project=into,
                                  user_files=True)
        assert asked.user_memories == [user.id]
        assert memories.get(other, user.id, project_id=into).scope == "user"
        # A file cannot take a user-wide memory back into a project without the flag either: a newer copy of
        # it that says "project" is left out.
        lines = [json.loads(line) for line in every.getvalue().splitlines()]
        for record in lines:
            if record.get("id") == user.id:
                record.update(scope="project", updated_at=clock.now())
        demoted = "\n".join(json.dumps(record) for record in lines)
        report = jsonl.import_file(other, io.BytesIO(demoted.encode()), redact=redact, into_project=into)
        assert report.skipped >= 1 and memories.get(other, user.id, project_id=into).scope == "user"
    finally:
        other.close()


def test_session_end_proposes_a_memory_that_recurs_in_another_project(home: Path, tmp_path: Path) -> None:
    alpha, beta = (tmp_path / "alpha").resolve(), (tmp_path / "beta").resolve()
    for folder in (alpha, beta):
        (folder / ".git").mkdir(parents=True)
    text = "Our services all log through structlog with JSON output and request ids"
    db = database.connect(vectors=False)
    try:
        a, b = projects.project_id(db, alpha), projects.project_id(db, beta)
        earlier = memories.add(db, project_id=b, content=text + ".", source=MCP_SOURCE, session_id="beta-1")
        mine = memories.add(db, project_id=a, content=text, source=MCP_SOURCE, session_id="alpha-1")
        unrelated = memories.add(db, project_id=a, content="Alpha keeps its fixtures in tests/data",
                                 source=MCP_SOURCE, session_id="alpha-1")
    finally:
        db.close()
    result = run_hook("session_end", common("alpha-1", alpha, "SessionEnd", reason="other"), home)
    assert result.returncode == 0 and not result.stdout

    listed = json.loads(_cli(home, alpha, "scope", "--json").stdout)
    assert [(found["id"], found["projects"], found["copies"]) for found in listed] == \
        [(mine.id, sorted([str(alpha), str(beta)]), [earlier.id])]
    assert [found["id"] for found in json.loads(_cli(home, beta, "scope", "--json").stdout)] == [earlier.id]
    with running_server(home, alpha) as server:
        status = server.call("memory_status").text
        assert "Proposed for your user scope" in status and mine.id in status and unrelated.id not in status
    db = database.connect(vectors=False)
    try:
        assert memories.get(db, mine.id, project_id=a).scope == "project"  # proposed, not moved
    finally:
        db.close()

    accepted = _cli(home, alpha, "scope", mine.id, "user")
    assert accepted.returncode == 0 and "user-wide" in accepted.stdout
    declined = _cli(home, beta, "scope", earlier.id, "project")
    assert declined.returncode == 0
    db = database.connect(vectors=False)
    try:
        assert memories.get(db, mine.id, project_id=b).scope == "user"  # now every project's
        assert scopes.proposals(db, a) == [] and scopes.proposals(db, b) == []
        assert scopes.DECLINED in memories.get(db, earlier.id, project_id=b).metadata
    finally:
        db.close()


def test_the_scope_migration_keeps_every_row_a_project_memory(tmp_path: Path) -> None:
    path = tmp_path / "v12.db"
    old = store_before(migrations._m014_memory_scope, path)
    with old.transaction():
        project = projects.project_id(old, str(tmp_path))
        made = [add_memory(old, project_id=project, content=f"memory {n}") for n in range(3)]
    old.close()
    db = database.connect(path)
    try:
        assert migrations.current_version(db) == migrations.target_version()
        assert [(m.id, m.scope) for m in memories.list_memories(db, project_id=project)] == \
            [(m.id, "project") for m in reversed(made)]
        plan = " ".join(str(row) for row in db.rows(
            "EXPLAIN QUERY PLAN SELECT id FROM memories WHERE scope = 'user' AND is_deleted = 0 "
            "ORDER BY created_at DESC"))
        assert "memories_user" in plan
    finally:
        db.close()


def test_list_pages_merge_the_project_and_the_user_wide_memories(home: Path, tmp_path: Path) -> None:
    db = database.connect(vectors=False)
    try:
        a, b = projects.project_id(db, tmp_path / "a"), projects.project_id(db, tmp_path / "b")
        for n in range(6):
            memories.add(db, project_id=a if n % 3 else b, content=f"note {n}", scope="user" if n % 3 == 0 else "project",
                         created_at=f"2026-01-0{n + 1}")
        memories.add(db, project_id=b, content="only b's", created_at="2026-01-09")
        seen = [m.content for m in memories.list_memories(db, project_id=a, scope="project")]
        assert seen == ["note 5", "note 4", "note 3", "note 2", "note 1", "note 0"]
        pages = [m.content for offset in (0, 2, 4)
                 for m in memories.list_memories(db, project_id=a, scope="project", limit=2, offset=offset)]
        assert pages == seen
        assert memories.count_memories(db, project_id=a, scope="project") == 6
        assert [m.content for m in memories.list_memories(db, project_id=a, scope="user")] == ["note 3", "note 0"]
        assert len(memories.list_memories(db, project_id=a, scope="all")) == 7
    finally:
        db.close()
