"""``ccmemory import-from``: one test family per source, on fixtures laid out as each tool writes them, run
through the real CLI process.

* claude-memory: Claude Code's ``projects/<encoded cwd>/memory/`` (``MEMORY.md`` index lines pointing at
  topic files, a topic file with ``name``/``description``/``metadata.type`` front matter, a notes file by
  subject) beside a session transcript whose ``cwd`` names the project.
* claude-mem: a database made with claude-mem's own DDL (``src/services/sqlite/schema.sql`` of
  thedotmack/claude-mem, the tables read here, copied as they are), and one in the shape of its
  migration 004 + 8 (the columns before migration 17 renamed them).
* basic-memory: a note in the format of basic-memory's NOTE-FORMAT.md (front matter, ``- [category] …
  #tag (context)`` observations, ``- relation [[Target]]`` relations).
* memory-tool: a ``/memories`` folder as a client-side memory tool keeps it.

Every source also holds hostile entries (a FIFO, a link leading out of the folder, a binary file, a
``<private>`` span and a secret): each is reported, none is stored, nothing crashes.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ccmemory import db as database
from ccmemory import projects, sessions

SECRET = "ghp_" + "a1B2c3D4" * 5


def run(home: Path, *args: str, config: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CCMEMORY_HOME": str(home)}
    env.pop("CLAUDE_PROJECT_DIR", None)
    if config is not None:
        env["CLAUDE_CONFIG_DIR"] = str(config)
    return subprocess.run([sys.executable, "-m", "ccmemory", "import-from", *args], env=env, capture_output=True,
                          text=True, timeout=120)


def run_json(home: Path, *args: str, config: Path | None = None) -> dict:
    result = run(home, *args, "--json", config=config)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def stored(home: Path, source: str) -> list[dict]:
    db = database.connect(home / "ccmemory.db")
    try:
        return db.rows("SELECT m.content, m.category, m.tags, m.files, m.created_at, m.tier, m.metadata, "
                       "p.path AS project FROM memories m JOIN projects p ON p.id = m.project_id "
                       "WHERE m.source = ? ORDER BY m.seq", (source,))
    finally:
        db.close()


def hostile_entries(folder: Path, outside: Path) -> None:
    """A FIFO, a link out of the folder and a binary file, all with the source's file suffix."""
    outside.write_text("- [secret] outside the folder\n", encoding="utf-8")
    (folder / "leak.md").symlink_to(outside)
    os.mkfifo(folder / "pipe.md")
    (folder / "blob.md").write_bytes(b"\x00\x01binary\xff")


def reasons(report: dict) -> dict[str, str]:
    return {problem["path"]: problem["reason"] for problem in report["problems"]}


# -- Claude Code's auto memory ------------------------------------------------------------------------
def auto_memory(config: Path, project_dir: Path, tmp_path: Path) -> Path:
    folder = config / "projects" / str(project_dir).replace("/", "-").replace("_", "-").replace(".", "-")
    memory = folder / "memory"
    memory.mkdir(parents=True)
    line = {"type": "user", "sessionId": "s-1", "cwd": str(project_dir), "timestamp": "2026-01-01T10:00:00.000Z",
            "message": {"role": "user", "content": "hello"}}
    (folder / "s-1.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    (memory / "MEMORY.md").write_text(
        "# Memory index\n\n- [Deploy steps](deploy.md) — how releases go out\n\n"
        "## Preferences\n\n- The user wants answers in British English\n"
        "- <private>my home address is 1 Secret Lane</private>Prefers short commit messages\n", encoding="utf-8")
    (memory / "deploy.md").write_text(
        "---\nname: deploy-steps\ndescription: Releases go out with make release after the tests pass\n"
        "metadata:\n  type: project\n---\n\nRun `make release`; the token is " + SECRET + ".\n", encoding="utf-8")
    (memory / "debugging.md").write_text("# Debugging\n\n## Flaky test\n\ntest_sync fails when run in parallel.\n",
                                         encoding="utf-8")
    hostile_entries(memory, tmp_path / "outside.md")
    return memory


def test_claude_memory_every_project_lands_in_the_project_its_transcripts_name(home, project_dir, tmp_path):
    config = tmp_path / "claude"
    auto_memory(config, project_dir, tmp_path)
    report = run_json(home, "claude-memory", config=config)
    assert report["added"] == {"memory": 3}
    assert report["projects"] == {str(project_dir.resolve()): 3}
    assert set(reasons(report)) == {"leak.md", "pipe.md", "blob.md"}
    rows = stored(home, "claude-memory")
    text = "\n---\n".join(row["content"] for row in rows)
    assert "Releases go out with make release" in text and "Run `make release`" in text
    assert "test_sync fails when run in parallel" in text and "British English" in text
    assert "Deploy steps" not in text  # the index line pointing at deploy.md: the topic file is imported
    assert SECRET not in text and "Secret Lane" not in text and "[REDACTED]" in text
    assert "outside the folder" not in text and report["redacted"] == 2
    assert all(row["tier"] == "project" and row["project"] == str(project_dir.resolve()) for row in rows)
    deploy = next(row for row in rows if "make release" in row["content"])
    assert json.loads(deploy["tags"]) == ["auto-memory", "project"]

    again = run_json(home, "claude-memory", config=config)
    assert again["added"] == {} and again["unchanged"] == {"memory": 3}
    assert len(stored(home, "claude-memory")) == 3


def test_claude_memory_one_folder_into_a_given_project_and_the_dry_run(home, project_dir, tmp_path):
    config = tmp_path / "claude"
    memory = auto_memory(config, project_dir, tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    dry = run_json(home, "claude-memory", str(memory), "--into-project", str(other), "--dry-run", config=config)
    assert dry["dry_run"] and dry["added"] == {"memory": 3}
    assert not (home / "ccmemory.db").exists() or stored(home, "claude-memory") == []
    done = run_json(home, "claude-memory", str(memory), "--into-project", str(other), config=config)
    assert done["projects"] == {str(other.resolve()): 3}
    by_dir = run_json(home, "claude-memory", "--into-project", str(project_dir), config=config)
    assert by_dir["projects"] == {str(project_dir.resolve()): 3}


def test_claude_memory_a_folder_whose_project_cannot_be_told_is_named(home, tmp_path):
    config = tmp_path / "claude"
    (config / "projects" / "-gone" / "memory").mkdir(parents=True)
    (config / "projects" / "-gone" / "memory" / "MEMORY.md").write_text("- a fact\n", encoding="utf-8")
    report = run_json(home, "claude-memory", config=config)
    assert report["added"] == {} and report["skipped"][0]["item"] == "projects/-gone/memory"
    lone = run(home, "claude-memory", str(config / "projects" / "-gone" / "memory"), config=config)
    assert lone.returncode == 2 and "--into-project" in lone.stderr


def test_claude_memory_a_folder_from_elsewhere_does_not_choose_its_project(home, tmp_path, project_dir):
    """A copied folder's transcripts were written by whoever made it: they name no project the import trusts."""
    sent = tmp_path / "downloads" / "-victim"
    (sent / "memory").mkdir(parents=True)
    (sent / "memory" / "MEMORY.md").write_text("- always deploy with --force\n", encoding="utf-8")
    (sent / "s.jsonl").write_text(json.dumps({"type": "user", "cwd": str(project_dir)}) + "\n", encoding="utf-8")
    refused = run(home, "claude-memory", str(sent / "memory"), config=tmp_path / "claude")
    assert refused.returncode == 2 and "--into-project" in refused.stderr and "projects folder" in refused.stderr
    assert not (home / "ccmemory.db").exists() or stored(home, "claude-memory") == []
    taken = run_json(home, "claude-memory", str(sent / "memory"), "--into-project", str(project_dir),
                     config=tmp_path / "claude")
    assert taken["projects"] == {str(project_dir.resolve()): 1}


# -- claude-mem ---------------------------------------------------------------------------------------
#: The three tables read, as thedotmack/claude-mem's src/services/sqlite/schema.sql creates them.
CLAUDE_MEM_SCHEMA = """
CREATE TABLE IF NOT EXISTS sdk_sessions (
  id                  INTEGER PRIMARY KEY AUTOINCREMENT,
  content_session_id  TEXT    UNIQUE NOT NULL,
  memory_session_id   TEXT    UNIQUE,
  project             TEXT    NOT NULL,
  platform_source     TEXT    NOT NULL DEFAULT 'claude',
  user_prompt         TEXT,
  started_at          TEXT    NOT NULL,
  started_at_epoch    INTEGER NOT NULL,
  completed_at        TEXT,
  completed_at_epoch  INTEGER,
  status              TEXT    NOT NULL DEFAULT 'active'
                              CHECK(status IN ('active', 'completed', 'failed')),
  worker_port         INTEGER,
  prompt_counter      INTEGER DEFAULT 0,
  custom_title        TEXT
);
CREATE TABLE IF NOT EXISTS observations (
  id                   INTEGER PRIMARY KEY AUTOINCREMENT,
  memory_session_id    TEXT    NOT NULL,
  project              TEXT    NOT NULL,
  text                 TEXT,
  type                 TEXT    NOT NULL,
  title                TEXT,
  subtitle             TEXT,
  facts                TEXT,
  narrative            TEXT,
  concepts             TEXT,
  files_read           TEXT,
  files_modified       TEXT,
  prompt_number        INTEGER,
  discovery_tokens     INTEGER DEFAULT 0,
  content_hash         TEXT,
  agent_type           TEXT,
  agent_id             TEXT,
  merged_into_project  TEXT,
  generated_by_model   TEXT,
  metadata             TEXT,
  created_at           TEXT    NOT NULL,
  created_at_epoch     INTEGER NOT NULL,
  FOREIGN KEY(memory_session_id) REFERENCES sdk_sessions(memory_session_id)
    ON DELETE CASCADE ON UPDATE CASCADE,
  UNIQUE(memory_session_id, content_hash)
);
CREATE TABLE IF NOT EXISTS session_summaries (
  id                   INTEGER PRIMARY KEY AUTOINCREMENT,
  memory_session_id    TEXT    NOT NULL,
  project              TEXT    NOT NULL,
  request              TEXT,
  investigated         TEXT,
  learned              TEXT,
  completed            TEXT,
  next_steps           TEXT,
  files_read           TEXT,
  files_edited         TEXT,
  notes                TEXT,
  prompt_number        INTEGER,
  discovery_tokens     INTEGER DEFAULT 0,
  merged_into_project  TEXT,
  created_at           TEXT    NOT NULL,
  created_at_epoch     INTEGER NOT NULL,
  FOREIGN KEY(memory_session_id) REFERENCES sdk_sessions(memory_session_id)
    ON DELETE CASCADE ON UPDATE CASCADE
);
"""

#: Migration 004's tables with migration 8's columns, before migration 17 renamed the session columns.
CLAUDE_MEM_LEGACY_SCHEMA = """
CREATE TABLE sdk_sessions (id INTEGER PRIMARY KEY AUTOINCREMENT, claude_session_id TEXT UNIQUE NOT NULL,
  sdk_session_id TEXT UNIQUE, project TEXT NOT NULL, user_prompt TEXT, started_at TEXT NOT NULL,
  started_at_epoch INTEGER NOT NULL, completed_at TEXT, completed_at_epoch INTEGER,
  status TEXT CHECK(status IN ('active', 'completed', 'failed')) NOT NULL DEFAULT 'active');
CREATE TABLE observations (id INTEGER PRIMARY KEY AUTOINCREMENT, sdk_session_id TEXT NOT NULL, project TEXT NOT NULL,
  text TEXT NOT NULL, type TEXT NOT NULL CHECK(type IN ('decision', 'bugfix', 'feature', 'refactor', 'discovery')),
  created_at TEXT NOT NULL, created_at_epoch INTEGER NOT NULL, title TEXT, subtitle TEXT, facts TEXT, narrative TEXT,
  concepts TEXT, files_read TEXT, files_modified TEXT);
CREATE TABLE session_summaries (id INTEGER PRIMARY KEY AUTOINCREMENT, sdk_session_id TEXT UNIQUE NOT NULL,
  project TEXT NOT NULL, request TEXT, investigated TEXT, learned TEXT, completed TEXT, next_steps TEXT,
  files_read TEXT, files_edited TEXT, notes TEXT, created_at TEXT NOT NULL, created_at_epoch INTEGER NOT NULL);
"""

JAN_2025 = 1_736_000_000_000  # 2025-01-04T14:13:20Z


def claude_mem_db(path: Path, *, legacy: bool = False) -> None:
    session_col, content_col = ("sdk_session_id", "claude_session_id") if legacy else ("memory_session_id",
                                                                                         "content_session_id")
    connection = sqlite3.connect(path)
    connection.executescript(CLAUDE_MEM_LEGACY_SCHEMA if legacy else CLAUDE_MEM_SCHEMA)
    for content, memory, project in [("cc-known", "mem-1", "project"), ("cc-transcript", "mem-2", "renamed"),
                                     ("cc-x", "mem-3", "mystery")]:
        connection.execute(f"INSERT INTO sdk_sessions({content_col}, {session_col}, project, started_at, "
                           "started_at_epoch) VALUES (?, ?, ?, ?, ?)", (content, memory, project, "x", JAN_2025))
    rows = [("mem-1", "project", "decision", "Use WAL mode", "For concurrent readers",
             "We chose WAL so the viewer can read while hooks write. " + SECRET,
             '["WAL allows one writer", "<private>internal host db7</private>readers never block"]',
             '["sqlite", "concurrency"]', '["src/db.py"]', '["src/store.py"]', JAN_2025),
            ("mem-2", "renamed", "bugfix", "Fixed the flaky sync test", None, "A race in the scheduler.", None, None,
             None, None, JAN_2025 + 60_000),
            ("mem-3", "mystery", "feature", "Something elsewhere", None, "Not placeable.", None, None, None, None,
             JAN_2025 + 120_000)]
    for row in rows:
        connection.execute(f"INSERT INTO observations({session_col}, project, text, type, title, subtitle, narrative, "
                           "facts, concepts, files_read, files_modified, created_at, created_at_epoch) "
                           "VALUES (?, ?, '', ?, ?, ?, ?, ?, ?, ?, ?, 'x', ?)", row)
    connection.execute(f"INSERT INTO session_summaries({session_col}, project, request, learned, completed, "
                       "next_steps, files_edited, created_at, created_at_epoch) VALUES "
                       "('mem-1', 'project', 'Make the viewer fast', 'WAL helps', 'Switched to WAL', "
                       "'Benchmark', '[\"src/db.py\"]', 'x', ?)", (JAN_2025 + 300_000,))
    connection.commit()
    connection.close()


@pytest.fixture
def claude_mem_world(home, project_dir, tmp_path):
    """A store that knows session cc-known in ``project_dir``, a transcript of cc-transcript in another
    directory (since deleted), and a claude-mem database naming both and a third project."""
    db = database.connect(home / "ccmemory.db")
    sessions.ensure(db, "cc-known", projects.project_id(db, project_dir))
    db.close()
    config = tmp_path / "claude"
    gone = tmp_path / "deleted-checkout"
    folder = config / "projects" / "-deleted-checkout"
    folder.mkdir(parents=True)
    (folder / "cc-transcript.jsonl").write_text(json.dumps({"type": "user", "sessionId": "cc-transcript",
                                                            "cwd": str(gone), "message": {"content": "hi"}}) + "\n")
    return config, gone


@pytest.mark.parametrize("legacy", [False, True], ids=["schema.sql", "before-migration-17"])
def test_claude_mem_rows_land_in_their_projects_with_their_times_and_the_file_is_untouched(
        home, project_dir, tmp_path, claude_mem_world, legacy):
    config, gone = claude_mem_world
    source = tmp_path / "claude-mem.db"
    claude_mem_db(source, legacy=legacy)
    before = hashlib.sha256(source.read_bytes()).hexdigest()
    listing = sorted(os.listdir(tmp_path))

    report = run_json(home, "claude-mem", str(source), config=config)
    assert report["added"] == {"observation": 2, "summary": 1}
    assert report["projects"] == {str(project_dir.resolve()): 2, str(gone): 1}
    assert report["skipped_count"] == 1 and "'mystery'" in report["skipped"][0]["item"]
    rows = stored(home, "claude-mem")
    wal = next(row for row in rows if "Use WAL mode" in row["content"])
    assert wal["created_at"] == "2025-01-04T14:13:20.000Z" and wal["category"] == "architecture"
    assert "For concurrent readers" in wal["content"] and "- WAL allows one writer" in wal["content"]
    assert SECRET not in wal["content"] and "db7" not in wal["content"]
    assert json.loads(wal["files"]) == ["src/db.py", "src/store.py"]
    assert {"observation", "decision", "sqlite"} <= set(json.loads(wal["tags"]))
    assert json.loads(wal["metadata"])["claude_code_session"] == "cc-known"
    summary = next(row for row in rows if row["content"].startswith("Session summary"))
    assert "Request: Make the viewer fast" in summary["content"] and "Next steps: Benchmark" in summary["content"]
    assert summary["created_at"] == "2025-01-04T14:18:20.000Z"

    assert run_json(home, "claude-mem", str(source), config=config)["added"] == {}
    assert len(stored(home, "claude-mem")) == 3
    assert hashlib.sha256(source.read_bytes()).hexdigest() == before
    assert sorted(os.listdir(tmp_path)) == listing  # no journal, WAL or lock file left beside it

    placed = run_json(home, "claude-mem", str(source), "--project-name", "mystery", "--into-project",
                      str(project_dir), config=config)
    assert placed["added"] == {"observation": 1} and placed["skipped_count"] == 0


def test_claude_mem_a_project_known_by_name_and_the_dry_run(home, tmp_path):
    source = tmp_path / "claude-mem.db"
    claude_mem_db(source)
    renamed = tmp_path / "renamed"
    renamed.mkdir()
    db = database.connect(home / "ccmemory.db")
    projects.project_id(db, renamed)
    db.close()
    dry = run_json(home, "claude-mem", str(source), "--dry-run", config=tmp_path / "none")
    assert dry["added"] == {"observation": 1} and stored(home, "claude-mem") == []
    assert dry["projects"] == {str(renamed.resolve()): 1}


def test_claude_mem_files_that_are_not_its_database(home, tmp_path):
    text = tmp_path / "notes.db"
    text.write_text("not a database")
    result = run(home, "claude-mem", str(text))
    assert result.returncode == 2 and "not an SQLite database" in result.stderr
    os.mkfifo(tmp_path / "pipe.db")
    result = run(home, "claude-mem", str(tmp_path / "pipe.db"))
    assert result.returncode == 2 and "not a regular file" in result.stderr
    corrupt = tmp_path / "corrupt.db"
    claude_mem_db(corrupt)
    data = bytearray(corrupt.read_bytes())
    data[100:] = b"\xff" * (len(data) - 100)
    corrupt.write_bytes(bytes(data))
    result = run(home, "claude-mem", str(corrupt), "--json", "--into-project", str(tmp_path))
    assert result.returncode in (0, 2), result.stderr
    assert "Traceback" not in result.stderr
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).execute("CREATE TABLE other(x)").connection.close()
    result = run(home, "claude-mem", str(empty))
    assert result.returncode == 2 and "not a claude-mem database" in result.stderr


# -- basic-memory -------------------------------------------------------------------------------------
NOTE = """---
title: Authentication Design
type: note
tags: [auth, security]
permalink: authentication-design
---

# Authentication Design

We evaluated sessions and JWT; JWT won for the stateless API.

## Observations
- [decision] Using JWT tokens for stateless authentication #security
- [gotcha] Refresh tokens must be rotated on every use (found in the 2024 audit)
- [secret] The signing key is """ + SECRET + """
- [ ] a task, not an observation
- [the docs](https://example.com) is a link, not one either

```markdown
- [example] inside a fence, not an observation
```

## Relations
- implements [[API Security Requirements]]
- depends_on [[User Database Schema]] (for the user ids)
"""


def test_basic_memory_observations_and_notes(home, project_dir, tmp_path):
    notes = tmp_path / "basic-memory"
    (notes / "design").mkdir(parents=True)
    (notes / "design" / "auth.md").write_text(NOTE, encoding="utf-8")
    (notes / "bare.md").write_text("---\ntitle: Bare\n---\n\n- [fact] A lone observation\n", encoding="utf-8")
    (notes / "image.png").write_bytes(b"\x89PNG")
    (notes / ".obsidian").mkdir()
    (notes / ".obsidian" / "workspace.md").write_text("- [ui] hidden folder\n")
    hostile_entries(notes, tmp_path / "outside.md")

    report = run_json(home, "basic-memory", str(notes), "--into-project", str(project_dir))
    assert report["added"] == {"observation": 4, "note": 1}
    assert set(reasons(report)) == {"leak.md", "pipe.md", "blob.md"}
    assert [s["item"] for s in report["skipped"]] == ["image.png"]
    rows = stored(home, "basic-memory")
    observations = {row["content"]: row for row in rows if json.loads(row["metadata"]).get("category")}
    jwt = observations["Authentication Design: Using JWT tokens for stateless authentication #security"]
    assert jwt["category"] == "general" and {"decision", "security", "auth"} <= set(json.loads(jwt["tags"]))
    assert "Authentication Design: Refresh tokens must be rotated on every use (found in the 2024 audit)" in observations
    assert observations["Bare: A lone observation"]["project"] == str(project_dir.resolve())
    gotcha = next(row for row in rows if "Refresh tokens" in row["content"])
    assert gotcha["category"] == "gotcha"
    text = "\n".join(row["content"] for row in rows)
    assert SECRET not in text and "[REDACTED]" in text
    assert "inside a fence" not in "\n".join(observations) and "hidden folder" not in text
    note = next(row for row in rows if not json.loads(row["metadata"]).get("category"))
    assert "JWT won for the stateless API" in note["content"]
    assert "- implements: API Security Requirements" in note["content"]
    assert "- depends_on: User Database Schema (for the user ids)" in note["content"]
    assert "a task, not an observation" in note["content"]

    again = run_json(home, "basic-memory", str(notes), "--into-project", str(project_dir))
    assert again["added"] == {} and again["unchanged"] == {"observation": 4, "note": 1}


def test_basic_memory_needs_a_project(home, tmp_path):
    result = run(home, "basic-memory", str(tmp_path))
    assert result.returncode == 2 and "--into-project" in result.stderr


# -- memory-tool files --------------------------------------------------------------------------------
def test_memory_tool_files_become_memory_files(home, project_dir, tmp_path):
    folder = tmp_path / "memories"
    (folder / "user").mkdir(parents=True)
    (folder / "notes.md").write_text("# Notes\n\nThe API is versioned by path.\n", encoding="utf-8")
    (folder / "progress.xml").write_text("<progress><step>2</step></progress>\n", encoding="utf-8")
    (folder / "keys.md").write_text(f"deploy token {SECRET}\n<private>my pin</private>", encoding="utf-8")
    (folder / "user" / "prefs.md").write_text("Prefers tabs.\n", encoding="utf-8")
    (folder / "bad name.md").write_text("x", encoding="utf-8")
    (folder / "huge.md").write_text("x" * 300_000, encoding="utf-8")
    hostile_entries(folder, tmp_path / "outside.md")

    report = run_json(home, "memory-tool", str(folder), "--into-project", str(project_dir))
    assert report["added"] == {"memory file": 3}
    assert report["renamed"] == [{"from": "progress.xml", "to": "/memories/progress.xml.md"}]
    assert set(reasons(report)) == {"leak.md", "pipe.md", "blob.md", "huge.md"}
    skipped = {s["item"]: s["reason"] for s in report["skipped"]}
    assert "--include-user-files" in skipped["user/prefs.md"] and "bad name.md" in skipped
    db = database.connect(home / "ccmemory.db")
    try:
        files = {row["path"]: row["content"] for row in db.rows("SELECT path, content FROM memory_files")}
        logged = db.scalar("SELECT count(*) FROM memory_file_log WHERE source = 'import'")
    finally:
        db.close()
    assert set(files) == {"notes.md", "progress.xml.md", "keys.md"} and logged == 3
    assert SECRET not in files["keys.md"] and "pin" not in files["keys.md"]

    (folder / "notes.md").write_text("Changed meanwhile.\n", encoding="utf-8")
    again = run_json(home, "memory-tool", str(folder), "--into-project", str(project_dir), "--include-user-files")
    assert again["added"] == {"memory file": 1} and again["user_files"] == ["/memories/user/prefs.md"]
    assert again["unchanged"] == {"memory file": 2}
    assert any(s["item"] == "/memories/notes.md" and "kept" in s["reason"] for s in again["skipped"])


def test_the_text_report(home, project_dir, tmp_path):
    folder = tmp_path / "memories"
    folder.mkdir()
    (folder / "notes.md").write_text("A note.\n", encoding="utf-8")
    os.mkfifo(folder / "pipe.md")
    result = run(home, "memory-tool", str(folder), "--into-project", str(project_dir))
    assert result.returncode == 0, result.stderr
    assert "memory-tool: added 1 memory file" in result.stdout
    assert f"Added 1 to project {project_dir.resolve()}" in result.stdout
    assert "Could not read pipe.md: it is not a regular file" in result.stderr
