"""Captured memory as docmem trees: sessions and documents listed, expanded, summarized, copied, queried."""

from __future__ import annotations

import pytest

from ccmemory import documents, memories, sessions
from ccmemory.docmem import expand, query
from ccmemory.docmem.nodes import Docmem
from ccmemory.errors import NotFoundError, ValidationError

GUIDE = """# Guide

Intro text.

## Install

pip install thing

## Usage

Run it.
"""


@pytest.fixture
def store(db, project) -> Docmem:
    return Docmem(db, project)


@pytest.fixture
def session(db, project) -> list[str]:
    """A session with a summary and three observations; returns the memory node ids in capture order."""
    ids = [memories.add(db, project_id=project, content=text, session_id="s-1", category="gotcha").id
           for text in ("Tests need the fixture.", "The build uses make.", "Deploy runs on Fridays.")]
    sessions.set_summary(db, "s-1", "Fixed the test setup.")
    return [f"memory:{i}" for i in ids]


def token_count_of(*texts: str) -> int:
    return sum((len(t) + 3) // 4 for t in texts)


def test_a_session_is_a_tree_of_its_summary_and_observations(store, session):
    root = store.get("session:s-1")
    assert root.content == "Fixed the test setup." and root.parent_id is None and root.readonly
    assert root.context_type == "session" and root.context_value == "ended"
    assert [n.id for n in store.children("session:s-1")] == session
    text = expand.expand_to_length(store, "session:s-1", 1000)
    assert text.split("\n\n")[0].startswith("session:s-1 session:")
    assert text.endswith("Deploy runs on Fridays.") and "memory:gotcha:" in text
    budget = token_count_of("Fixed the test setup.", "Deploy runs on Fridays.")
    tight = expand.expand_to_length(store, "session:s-1", budget)
    assert "Deploy runs on Fridays." in tight and "Tests need the fixture." not in tight  # newest first
    assert expand.ancestor_path(store, session[1]).splitlines()[1].startswith(f"  - {session[1]} memory:")


def test_deleted_memories_leave_the_tree(store, session, db):
    memories.delete(db, session[0].removeprefix("memory:"), project_id=None)
    assert [n.id for n in store.children("session:s-1")] == session[1:]
    assert store.find(session[0]) is None


def test_a_document_is_a_tree_of_sections_and_chunks(store, db, project):
    doc = documents.ingest(db, project_id=project, content=GUIDE, title="Guide")
    root = f"doc:{doc.id}"
    sections = store.children(root)
    assert [n.content for n in sections] == ["Guide", "Guide > Install", "Guide > Usage"]
    assert all(n.kind == "section" and n.parent_id == root for n in sections)
    chunk = store.children(sections[1].id)[0]
    assert store.find(f"chunk:{doc.id}:01") is None
    assert chunk.id == f"chunk:{doc.id}:1" and "pip install thing" in chunk.content
    assert store.get(chunk.id).parent_id == sections[1].id
    assert expand.serialize(store, root).startswith("Guide\n\nIntro text.\n\nGuide > Install\n\npip install thing")
    path = expand.ancestor_path(store, chunk.id).splitlines()
    assert [line.split()[1] for line in path] == [root, sections[1].id, chunk.id]


def test_virtual_nodes_cannot_be_edited_moved_or_deleted(store, session):
    store.create("notes")
    for attempt in (
        lambda: store.update_content(session[0], "x"),
        lambda: store.update_context("session:s-1", ("a", "", "")),
        lambda: store.delete(session[0]),
        lambda: store.delete("session:s-1"),
        lambda: store.move_node(session[0], session[2], "after"),
    ):
        with pytest.raises(ValidationError, match="captured memory"):
            attempt()
    assert memories.get(store.db, session[0].removeprefix("memory:"), project_id=None).content == "Tests need the fixture."


def test_notes_can_be_attached_to_a_session(store, session):
    note = store.create_node(session[0], "Only in CI.", ("note", "", ""), "after")
    assert [n.id for n in store.children("session:s-1")] == [session[0], note.id, *session[1:]]
    appended = store.create_node("session:s-1", "Follow up.", ("note", "", ""), "append-child")
    assert store.children("session:s-1")[-1].id == appended.id
    assert expand.serialize(store, "session:s-1").endswith("Deploy runs on Fridays.\n\nFollow up.")


def test_inserting_between_observations_never_reorders_them(store, session):
    last = session[0]
    with pytest.raises(ValidationError, match="No room left"):
        for _ in range(200):
            last = store.create_node(last, "note", ("note", "", ""), "after").id
    order = [n.id for n in store.children("session:s-1")]
    assert order[0] == session[0] and order[-2:] == session[1:]
    orders = [n.order_value for n in store.children("session:s-1")]
    assert orders == sorted(orders) and len(set(orders)) == len(orders)


def test_session_observations_can_be_summarized_without_copying(store, session, db):
    memory_rows = db.scalar("SELECT count(*) FROM memories")
    summary = store.add_summary(session[0], session[1], "Test and build setup.", ("summary", "", ""))
    assert summary.parent_id == "session:s-1"
    assert [n.id for n in store.children("session:s-1")] == [summary.id, session[2]]
    assert [(n.id, n.order_value) for n in store.children(summary.id)] == [(session[0], 1.0), (session[1], 2.0)]
    assert store.get(session[0]).parent_id == summary.id
    assert db.scalar("SELECT count(*) FROM memories") == memory_rows
    assert db.scalar("SELECT count(*) FROM docmem_nodes") == 1
    budget = token_count_of("Fixed the test setup.", "Deploy runs on Fridays.", "Test and build setup.")
    tight = expand.expand_to_length(store, "session:s-1", budget)
    assert "Test and build setup." in tight and "Tests need the fixture." not in tight
    rows, _ = query.run(db, store.project_id, f"SELECT parent_id FROM nodes WHERE id = '{session[0]}'")
    assert rows == [{"parent_id": summary.id}]
    store.delete(summary.id)  # undoes the summary
    assert [n.id for n in store.children("session:s-1")] == session
    assert store.get(session[0]).parent_id == "session:s-1"


def test_copying_a_session_makes_an_editable_docmem(store, session):
    store.create("notes")
    copy = store.copy_node("session:s-1", "notes", "append-child")
    assert copy.content == "Fixed the test setup." and not copy.readonly and copy.kind == "docmem"
    kids = store.children(copy.id)
    assert [k.content for k in kids] == ["Tests need the fixture.", "The build uses make.", "Deploy runs on Fridays."]
    store.update_content(kids[0].id, "Edited.")
    assert store.get(session[0]).content == "Tests need the fixture."


def test_virtual_trees_are_listed_by_query(store, session, db, project):
    documents.ingest(db, project_id=project, content=GUIDE, title="Guide")
    store.create("notes")
    rows, _ = query.run(db, project, "SELECT kind, content FROM nodes WHERE parent_id IS NULL ORDER BY kind")
    assert [r["kind"] for r in rows] == ["docmem", "document", "session"]
    rows, _ = query.run(db, project, "SELECT count(*) AS n FROM nodes WHERE kind = 'memory'")
    assert rows == [{"n": 3}]


def test_unknown_virtual_ids(store, session):
    for node_id in ("session:nope", "memory:nope", "doc:nope", "chunk:nope:1", "section:x", "chunk:d:x", "session:"):
        assert store.find(node_id) is None
        with pytest.raises(NotFoundError, match="docmem_query_nodes"):
            expand.expand_to_length(store, node_id, 10)
