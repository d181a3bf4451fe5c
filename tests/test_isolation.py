"""Project isolation by id: from another project every id is "not found" and nothing changes.

Project A's memories, session, document and docmem tree are made first; then every operation
that takes an id is tried from project B (store functions, every MCP tool of the server's registry
that takes an id, over stdio, every id-taking CLI command) with A's full ids and 8-character
prefixes. Each must fail as not found, and a dump of the whole database must be byte-for-byte what
it was before. ``docmem_create`` with A's root id must not tell that the id exists. An export of A
imported into B (as it is, and with every record made newer) must leave A's rows as they were.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

from ccmemory import clock, db as database, documents, memories, projects, sessions
from ccmemory.docmem.nodes import Docmem
from ccmemory.errors import NotFoundError
from testing.mcp import running_server
from testing.cli import spawn as _cli

TABLES = ("memories", "memory_relationships", "documents", "chunks", "docmem_nodes", "docmem_placements",
          "session_memories")


def snapshot(db: database.Database) -> str:
    """Every row of every table that an id operation could change, as text.

    Without ``needs_embedding``: the MCP server's background embedder may embed the pending rows meanwhile (its
    job: every memory is findable by meaning within seconds), which on a slow machine happens before the
    server stops.
    """
    tables = {t: [{column: value for column, value in row.items() if column != "needs_embedding"}
                  for row in db.rows(f"SELECT * FROM {t} ORDER BY rowid")] for t in TABLES}
    return json.dumps(tables, sort_keys=True, default=str)


@pytest.fixture
def two_projects(tmp_path: Path, db: database.Database) -> dict[str, Any]:
    a_dir, b_dir = tmp_path / "alpha", tmp_path / "beta"
    for folder in (a_dir, b_dir):
        (folder / ".git").mkdir(parents=True)
    a, b = projects.project_id(db, a_dir), projects.project_id(db, b_dir)
    sessions.ensure(db, "alpha-session", a)
    old = memories.add(db, project_id=a, content="Staging DB port is 5433", session_id="alpha-session")
    new = memories.add(db, project_id=a, content="Staging DB port is 6543 since the move")
    memories.add(db, project_id=a, content="A neighbour in project alpha")
    mine = memories.add(db, project_id=b, content="Project beta's own memory")
    document = documents.ingest(db, project_id=a, content="# Alpha runbook\n\nRestart with make bounce.")
    memories.supersede(db, old.id, new.id, project_id=a)
    tree = Docmem(db, a)
    root = tree.create("alpha-notes")
    node = tree.create_node(root.id, "Alpha private note", ("note", "alpha", ""), "append-child")
    tree.add_summary(f"memory:{old.id}", f"memory:{old.id}", "Alpha port history", ("summary", "", ""))
    return {"a_dir": a_dir, "b_dir": b_dir, "a": a, "b": b, "old": old.id, "new": new.id, "mine": mine.id,
            "document": document.id, "root": root.id, "node": node.id}


def _store_operations(p: dict[str, Any]) -> list[tuple[str, Callable[[database.Database, str], Any]]]:
    b = p["b"]
    return [
        ("get", lambda db, i: memories.get(db, i, project_id=b)),
        ("resolve_id", lambda db, i: memories.resolve_id(db, i, project_id=b)),
        ("timeline", lambda db, i: memories.timeline(db, i, project_id=b)),
        ("reinforce", lambda db, i: memories.reinforce(db, i, 0.5, project_id=b)),
        ("deemphasize", lambda db, i: memories.deemphasize(db, i, 0.5, project_id=b)),
        ("restore", lambda db, i: memories.restore(db, i, project_id=b)),
        ("rewrite", lambda db, i: memories.rewrite(db, i, "overwritten", project_id=b)),
        ("supersede-old", lambda db, i: memories.supersede(db, i, p["mine"], project_id=b)),
        ("supersede-new", lambda db, i: memories.supersede(db, p["mine"], i, project_id=b)),
        ("document-get", lambda db, i: documents.get(db, p["document"], project_id=b)),
        ("document-delete", lambda db, i: documents.delete(db, p["document"], project_id=b)),
        ("docmem-get", lambda db, i: Docmem(db, b).get(p["node"])),
        ("docmem-delete", lambda db, i: Docmem(db, b).delete(p["root"])),
        ("docmem-update", lambda db, i: Docmem(db, b).update_content(p["node"], "overwritten")),
    ]


def test_store_operations_from_another_project_find_nothing_and_change_nothing(
        db: database.Database, two_projects: dict[str, Any]) -> None:
    p = two_projects
    before = snapshot(db)
    for memory_id in (p["old"], p["old"][:8], p["new"][:12]):
        for _name, operation in _store_operations(p):
            with pytest.raises(NotFoundError):
                operation(db, memory_id)
        assert memories.get_many(db, [memory_id], project_id=p["b"]) == ([], [memory_id])
        assert memories.delete(db, memory_id, project_id=p["b"])["deleted"] is False
        assert memories.delete(db, memory_id, project_id=p["b"], hard=True)["deleted"] is False
    assert snapshot(db) == before
    assert memories.get(db, p["old"][:8], project_id=p["a"]).id == p["old"]


MCP_CALLS = [
    ("memory_get", lambda p, i: {"ids": [i]}),
    ("memory_timeline", lambda p, i: {"anchor_id": i}),
    ("memory_reinforce", lambda p, i: {"memory_id": i, "amount": 0.5}),
    ("memory_deemphasize", lambda p, i: {"memory_id": i, "amount": 0.5}),
    ("memory_delete", lambda p, i: {"memory_id": i}),
    ("memory_delete", lambda p, i: {"memory_id": i, "hard": True}),
    ("memory_supersede", lambda p, i: {"old_memory_id": i, "new_memory_id": p["mine"]}),
    ("memory_supersede", lambda p, i: {"old_memory_id": p["mine"], "new_memory_id": i}),
    ("docmem_delete", lambda p, i: {"id": p["root"]}),
    ("docmem_update_content", lambda p, i: {"id": p["node"], "content": "x"}),
    ("docmem_update_context", lambda p, i: {"id": p["node"], "context_type": "a", "context_name": "b",
                                            "context_value": "c"}),
    ("docmem_copy_node", lambda p, i: {"source_id": p["node"], "target_id": p["root"], "mode": "append-child"}),
    ("docmem_move_node", lambda p, i: {"source_id": p["node"], "target_id": p["root"], "mode": "append-child"}),
    ("docmem_add_summary", lambda p, i: {"start_node_id": p["node"], "end_node_id": p["node"], "content": "s",
                                         "context_type": "a", "context_name": "b", "context_value": "c"}),
    ("docmem_serialize", lambda p, i: {"node_id": p["root"]}),
    ("docmem_expand_to_length", lambda p, i: {"node_id": p["root"], "max_tokens": 100}),
    ("docmem_get_root", lambda p, i: {"node_id": p["node"]}),
    ("docmem_create_node", lambda p, i: {"target_id": p["root"], "content": "x", "context_type": "a",
                                         "context_name": "b", "context_value": "c", "mode": "append-child"}),
    ("docmem_serialize", lambda p, i: {"node_id": f"memory:{p['old']}"}),
    ("docmem_serialize", lambda p, i: {"node_id": f"doc:{p['document']}"}),
    ("docmem_view", lambda p, i: {"action": "add", "node_id": p["root"]}),
    ("docmem_create", lambda p, i: {"root_id": p["root"]}),
]
#: What each tool answers when given another project's id (default: "not found").
EXPECTED = {"docmem_create": "cannot be used here"}


def takes_an_id(tool: Any) -> bool:
    """Whether a registered tool has a parameter naming an id (``id``, ``ids``, ``*_id``, ``*_ids``)."""
    names = (tool.input_schema or {}).get("properties", {})
    return any(name in ("id", "ids") or name.endswith(("_id", "_ids")) for name in names)


def test_every_id_taking_mcp_tool_from_another_project(home: Path, db: database.Database,
                                                      two_projects: dict[str, Any]) -> None:
    p = two_projects
    before = snapshot(db)
    tools_called = set()
    with running_server(home, p["b_dir"]) as server:
        registered = server.list_tools()
        for memory_id in (p["old"], p["old"][:8]):
            for name, make_args in MCP_CALLS:
                answer = server.call(name, make_args(p, memory_id))
                assert answer.is_error, (name, answer.text)
                expected = EXPECTED.get(name, "not found")
                assert expected in answer.text.lower() or "no memory" in answer.text.lower(), (name, answer.text)
                assert "exist" not in answer.text.lower() or expected == "not found", (name, answer.text)
                assert "Staging DB port" not in answer.text and "Alpha" not in answer.text
                tools_called.add(name)
        answer = server.call("docmem_query_nodes", {"sql": "SELECT id, content FROM nodes"})
        assert "Alpha" not in answer.text and "Staging" not in answer.text
    id_taking = {tool.name for tool in registered if takes_an_id(tool)}
    assert len(id_taking) >= 15 and {"memory_get", "docmem_create", "docmem_view"} <= id_taking
    assert tools_called == id_taking, f"not tried from another project: {id_taking - tools_called}"
    assert snapshot(db) == before


def test_every_id_taking_cli_command_from_another_project(home: Path, db: database.Database,
                                                         two_projects: dict[str, Any]) -> None:
    p = two_projects
    before = snapshot(db)
    memory_id = p["old"][:8]
    for args in (["get", memory_id], ["get", p["old"]], ["delete", memory_id], ["delete", memory_id, "--hard"],
                 ["restore", memory_id], ["reinforce", memory_id], ["deemphasize", memory_id],
                 ["supersede", memory_id, p["mine"]], ["supersede", p["mine"], memory_id],
                 ["docs", "delete", p["document"]]):
        result = _cli(home, p["b_dir"], *args)
        assert result.returncode == 1, (args, result.stdout, result.stderr)
        assert "Staging DB port" not in result.stdout + result.stderr
    assert snapshot(db) == before
    assert _cli(home, p["a_dir"], "get", memory_id).returncode == 0


_OWN_ROWS = {
    "projects": "SELECT * FROM projects WHERE id = :p",
    "sessions": "SELECT * FROM sessions WHERE project_id = :p",
    "memories": "SELECT * FROM memories WHERE project_id = :p",
    "memory_relationships": "SELECT * FROM memory_relationships WHERE source_id IN (SELECT id FROM memories WHERE "
                            "project_id = :p) OR target_id IN (SELECT id FROM memories WHERE project_id = :p)",
    "session_memories": "SELECT * FROM session_memories WHERE session_id IN (SELECT id FROM sessions WHERE "
                        "project_id = :p) OR memory_id IN (SELECT id FROM memories WHERE project_id = :p)",
    "documents": "SELECT * FROM documents WHERE project_id = :p",
    "chunks": "SELECT * FROM chunks WHERE document_id IN (SELECT id FROM documents WHERE project_id = :p)",
    "docmem_nodes": "SELECT * FROM docmem_nodes WHERE project_id = :p",
    "docmem_placements": "SELECT * FROM docmem_placements WHERE project_id = :p",
    "memory_files": "SELECT * FROM memory_files WHERE project_id = :p",
}


def rows_of(db: database.Database, project: int) -> str:
    """Every row of one project, and every link touching one of its rows, as text."""
    return json.dumps({table: db.rows(f"{sql} ORDER BY rowid", {"p": project}) for table, sql in _OWN_ROWS.items()},
                      sort_keys=True, default=str)


@pytest.mark.usefixtures("idle_embedder")  # the rows compared include whether each one waits for a vector
def test_an_export_of_one_project_imported_into_another_never_touches_the_first(
        home: Path, tmp_path: Path, db: database.Database, two_projects: dict[str, Any]) -> None:
    """Item 2 of the audit: A's ids in the file never reach A's rows; B gets its own copies under new ids."""
    p = two_projects
    exported = _cli(home, p["a_dir"], "export", "--project", str(p["a_dir"]))
    assert exported.returncode == 0, exported.stderr
    newer = []
    for record in map(json.loads, exported.stdout.splitlines()):
        for key in ("content", "summary", "title"):
            if record.get(key):
                record[key] = "Overwritten by an import into beta"
        for key in ("updated_at", "ended_at"):
            if key in record:
                record[key] = clock.now()  # newer than the export, and not in the future
        newer.append(json.dumps(record))
    (tmp_path / "as-is.jsonl").write_text(exported.stdout)
    (tmp_path / "newer.jsonl").write_text("\n".join(newer) + "\n")
    a_before, b_memories = rows_of(db, p["a"]), db.scalar("SELECT count(*) FROM memories WHERE project_id = ?",
                                                           (p["b"],))
    reports = []
    for name in ("as-is.jsonl", "newer.jsonl", "as-is.jsonl"):
        result = _cli(home, p["b_dir"], "import", str(tmp_path / name), "--into-project", str(p["b_dir"]), "--json")
        assert result.returncode == 0, result.stderr
        reports.append(json.loads(result.stdout))
        assert rows_of(db, p["a"]) == a_before, name

    first, updated, again = reports
    assert first["records"]["memory"] == {"added under a new id": 3}
    assert first["records"]["session"] == {"added under a new id": 1}
    assert first["records"]["document"] == {"added under a new id": 1}
    assert first["records"]["docmem_node"] == {"added under a new id": 3}
    assert first["records"]["relationship"] == {"added": 1}
    # the memory's link to the session it was made in: its session_id already says so, no row is added
    assert first["records"]["session_memory"] == {"unchanged": 1}
    assert first["records"]["docmem_placement"] == {"added": 1} and first["failed"] == 0
    new_ids = first["new_ids"]
    assert new_ids[f"memory {p['old']}"] != p["old"] and new_ids[f"docmem_node {p['root']}"].startswith("alpha-notes-")
    assert updated["records"]["memory"] == {"updated": 3} and updated["new_ids"] == new_ids
    assert all(set(outcomes) == {"unchanged"} for outcomes in again["records"].values()), again

    # B's copies are B's own: found from B, linked among themselves, the newer text kept
    assert db.scalar("SELECT count(*) FROM memories WHERE project_id = ?", (p["b"],)) == b_memories + 3
    copy = memories.get(db, new_ids[f"memory {p['old']}"], project_id=p["b"])
    assert copy.content == "Overwritten by an import into beta" and copy.session_id == new_ids["session alpha-session"]
    assert memories.superseded_by(db, [copy.id]) == {copy.id: new_ids[f"memory {p['new']}"]}
    tree = Docmem(db, p["b"])
    assert [n.id for n in tree.children(new_ids[f"docmem_node {p['root']}"])] == [new_ids[f"docmem_node {p['node']}"]]
    summary = next(n for n in tree.children(f"session:{copy.session_id}") if n.kind == "docmem")
    assert [n.id for n in tree.children(summary.id)] == [f"memory:{copy.id}"]
    assert memories.get(db, p["old"], project_id=p["a"]).content == "Staging DB port is 5433"
