"""``ccmemory gc``: retention by age, tier and sector, purge of soft deletes, VACUUM, and --dry-run."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from ccmemory import db as database, memories, projects, retention
from testing.cli import spawn

OLD = "2020-01-01T00:00:00.000Z"


def _aged(db: database.Database, project: int, content: str, *, tier: str = "session", sector: str = "episodic",
          deleted: bool = False) -> str:
    memory = memories.add(db, project_id=project, content=content, tier=tier, sector=sector)
    with db.transaction():
        db.execute("UPDATE memories SET created_at = ?, updated_at = ? WHERE id = ?", (OLD, OLD, memory.id))
    if deleted:
        memories.delete(db, memory.id, project_id=project)
        with db.transaction():
            db.execute("UPDATE memories SET deleted_at = ? WHERE id = ?", (OLD, memory.id))
    return memory.id


def _contents(db: database.Database) -> set[str]:
    return {row["content"] for row in db.rows("SELECT content FROM memories")}


def test_gc_dry_run_then_collect(db: database.Database, project: int, tmp_path: Path) -> None:
    other = projects.project_id(db, tmp_path / "other")
    _aged(db, project, "old observation GCMARKER-ONE")
    _aged(db, project, "old procedural observation", sector="procedural")
    _aged(db, project, "old project decision", tier="project")
    _aged(db, project, "old deleted note GCMARKER-TWO", tier="project", deleted=True)
    _aged(db, other, "other project's old observation")
    memories.add(db, project_id=project, content="fresh observation", tier="session")
    kept_old = memories.add(db, project_id=project, content="port is 5433", tier="project")
    newer = _aged(db, project, "port is 6543")
    memories.supersede(db, kept_old.id, newer, project_id=project)
    before = _contents(db)

    plan = retention.collect(db, project_id=project, dry_run=True)
    assert (plan.expired, plan.purged) == (3, 1) and _contents(db) == before

    narrow = retention.collect(db, project_id=project, sectors=["procedural"], dry_run=True)
    assert narrow.expired == 1 and narrow.by_sector == {"procedural": 1, "episodic": 1}

    report = retention.collect(db, project_id=project)
    assert (report.expired, report.purged) == (3, 1)
    assert _contents(db) == {"old project decision", "other project's old observation", "fresh observation",
                             "port is 5433"}
    assert not memories.get(db, kept_old.id, project_id=project).is_superseded, "its replacement expired"
    assert db.scalar("SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH 'GCMARKER'") == 0
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = b"".join(Path(p).read_bytes() for p in (db.path, f"{db.path}-wal") if os.path.exists(p))
    assert b"GCMARKER" not in raw, "VACUUM leaves no copy of removed text in the file"

    again = retention.collect(db, project_id=project)
    assert (again.expired, again.purged) == (0, 0)


def test_project_tier_and_all_projects(db: database.Database, project: int, tmp_path: Path) -> None:
    other = projects.project_id(db, tmp_path / "other")
    _aged(db, project, "old decision", tier="project")
    _aged(db, other, "other old observation")
    report = retention.collect(db, project_id=None, tiers=["session", "project"], vacuum=False)
    assert report.expired == 2 and _contents(db) == set()


def test_gc_command(home: Path, db: database.Database, project: int, project_dir: Path) -> None:
    _aged(db, project, "old observation")

    def gc(*args: str) -> subprocess.CompletedProcess[str]:
        return spawn(home, project_dir, "gc", *args)

    dry = gc("--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["expired"] == 1 and _contents(db) == {"old observation"}
    done = gc()
    assert done.returncode == 0 and "Removed 1 expired" in done.stdout and _contents(db) == set()
    assert gc("--tier", "nope").returncode == 2
