"""Migration 13 on a store built at schema 12: locations of one repository merge, nothing is lost.

The store holds two clones of one repository (two projects then), an unrelated repository, and a
project whose folder no longer exists, each with sessions, memories, documents, memory files (one
path in both clones) and docmem trees. After the upgrade every table holds as many rows as before
(but ``projects``, one fewer), ``ccmemory export`` gives every memory's content byte for byte as the
old store held it, the two clones are aliases of one project, and a backup of the old store exists.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from ccmemory import db as database
from ccmemory import documents, migrations, sessions
from ccmemory.docmem.nodes import Docmem
from ccmemory.files import commands
from testing.cli import spawn
from testing.git_repos import GIT, commit, git, new_repo, root_commit
from testing.schema import add_memory, old_project, store_before

pytestmark = pytest.mark.skipif(GIT is None, reason="needs git")
#: Contents that a careless copy would change: accents, emoji, CRLF, a tab, trailing spaces, a NUL-free control.
TRICKY = ["plain words", "naïve café — “quotes” ✓ 🚀", "line one\r\nline two\r\n", "\ttabbed  \n\n",
          "ends with spaces   ", "bell \x07 and escape \x1b[31m"]
#: Tables whose rows are derived or new in schema 13.
SKIPPED = {"project_aliases", "project_roots", "project_merges"}


def table_counts(path: Path) -> dict[str, int]:
    """Rows per table (virtual tables' shadow tables included) of the store at ``path``."""
    connection = sqlite3.connect(path)
    try:
        names = [row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%'")]
        return {name: connection.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0]
                for name in names if name not in SKIPPED}
    finally:
        connection.close()


def stored_contents(path: Path, table: str = "memories") -> dict[str, bytes]:
    """Each row's content as bytes, by id."""
    connection = sqlite3.connect(path)
    try:
        return {row[0]: row[1] for row in connection.execute(f"SELECT id, CAST(content AS BLOB) FROM {table}")}
    finally:
        connection.close()


def fill(db: database.Database, project: int, folder: Path, label: str) -> None:
    """Sessions, memories, a document, memory files and a docmem tree for ``project``, as their writers store them."""
    for number in range(2):
        session = f"{label}-session-{number}"
        sessions.ensure(db, session, project)
        for text in TRICKY:
            add_memory(db, project_id=project, content=f"{label} {number}: {text}", session_id=session)
    guide = folder / "docs" / "guide.md"
    guide.parent.mkdir(parents=True, exist_ok=True)
    guide.write_text(f"# Guide of {label}\n\nHow {label} deploys: make release.\n")
    documents.ingest(db, project_id=project, path=str(guide), root=str(folder))
    call = commands.Call(project, f"{label}-session-0", "test")
    for name in ("notes.md", f"{label}-only.md"):  # notes.md is in both clones: it collides in the merge
        commands.execute(db, {"command": "create", "path": f"/memories/{name}", "file_text": f"{label} {name}\n"}, call)
    tree = Docmem(db, project)
    root = tree.create()
    tree.create_node(root.id, f"{label} architecture", ("section", "name", label), "append-child")


def test_two_clones_of_one_repository_merge_with_every_row_kept(home, tmp_path):
    origin = new_repo(tmp_path / "origin", commits=2)
    second = tmp_path / "second"
    git(tmp_path, "clone", "-q", str(origin), str(second))
    commit(second, "only-in-second.txt")
    other = new_repo(tmp_path / "unrelated", commits=1)
    gone = tmp_path / "deleted-checkout"
    gone.mkdir()
    store = home / "ccmemory.db"
    home.mkdir(parents=True)
    old = store_before(migrations._m013_portable_projects, store)
    with old.transaction():
        ids = {label: old_project(old, folder) for label, folder in
               (("origin", origin), ("second", second), ("unrelated", other), ("gone", gone))}
        for label, folder in (("origin", origin), ("second", second), ("unrelated", other), ("gone", gone)):
            fill(old, ids[label], folder, label)
    old.close()
    shutil.rmtree(gone)
    before_counts = table_counts(store)
    before_contents = stored_contents(store)
    before_files = stored_contents(store, "memory_files")
    assert before_counts["projects"] == 4 and len(before_contents) == 4 * 2 * len(TRICKY)

    upgraded = database.connect(store)  # the upgrade: backup, then migrations 13 on
    try:
        assert migrations.current_version(upgraded) == migrations.target_version()
        aliases = {row["path"]: row for row in upgraded.rows("SELECT * FROM project_aliases")}
        identities = {row["id"]: row["identity"] for row in upgraded.rows("SELECT id, identity FROM projects")}
        renamed = [row["path"] for row in upgraded.rows(
            "SELECT path FROM memory_files WHERE project_id = ? ORDER BY path", (ids["origin"],))]
        counts_of = {row["project_id"]: row["n"] for row in upgraded.rows(
            "SELECT project_id, COUNT(*) AS n FROM memories GROUP BY project_id")}
        sources = sorted(row["source_path"] for row in upgraded.rows(
            "SELECT source_path FROM documents WHERE project_id = ?", (ids["origin"],)))
    finally:
        upgraded.close()

    backups = [path for path in home.iterdir() if path.name.endswith(".bak")]
    assert len(backups) == 1 and ".v12-" in backups[0].name
    assert table_counts(backups[0]) == before_counts
    after_counts = table_counts(store)
    assert {name: after_counts[name] for name in before_counts} == {**before_counts, "projects": 3}
    assert not any(after_counts[name] for name in set(after_counts) - set(before_counts))  # later tables: empty
    assert stored_contents(store) == before_contents
    assert stored_contents(store, "memory_files") == before_files

    assert aliases[str(origin)]["project_id"] == aliases[str(second)]["project_id"] == ids["origin"]
    assert aliases[str(other)]["project_id"] == ids["unrelated"]
    assert aliases[str(gone)]["project_id"] == ids["gone"] and aliases[str(gone)]["kind"] == "path"
    assert counts_of[ids["gone"]] == 2 * len(TRICKY)  # a checkout deleted since keeps its project and rows
    assert identities == {ids["origin"]: f"git:{root_commit(origin)}", ids["unrelated"]: f"git:{root_commit(other)}",
                          ids["gone"]: f"path:{gone}"}
    assert renamed == ["notes.from-project-%d.md" % ids["second"], "notes.md", "origin-only.md", "second-only.md"]
    assert sources == sorted([str(origin / "docs" / "guide.md"), str(second / "docs" / "guide.md")])

    exported = spawn(home, tmp_path, "export")
    assert exported.returncode == 0, exported.stderr
    records = [json.loads(line) for line in exported.stdout.splitlines()]
    contents = {record["id"]: record["content"].encode("utf-8") for record in records if record["type"] == "memory"}
    assert contents == before_contents
    for label in ("origin", "second"):  # both clones now answer with every memory of the repository
        listed = spawn(home, origin if label == "origin" else second, "list", "--json", "--limit", "100")
        assert listed.returncode == 0, listed.stderr
        assert len(json.loads(listed.stdout)) == 2 * 2 * len(TRICKY)
