"""docmem trees on a real SQLite file: ordering, summaries, copy/move, readonly, rendering, queries."""

from __future__ import annotations

import pytest

from ccmemory import db as database
from ccmemory import projects
from ccmemory.docmem import expand, ordering, query
from ccmemory.docmem.nodes import Docmem, node_hash, token_count
from ccmemory.errors import NotFoundError, ValidationError

STAMP = "2026-02-13T18:00:00.000Z"


@pytest.fixture()
def store(tmp_path):
    db = database.connect(tmp_path / "memory.db")
    project = tmp_path / "project"
    project.mkdir()
    yield Docmem(db, projects.project_id(db, str(project)))
    db.close()


def note(store: Docmem, target: str, text: str, mode: str = "append-child", readonly: bool = False,
         context: tuple[str, str, str] = ("note", "", "")) -> str:
    return store.create_node(target, text, context, mode, readonly).id


def contents(store: Docmem, parent: str) -> list[str]:
    return [n.content for n in store.children(parent)]


def rename(store: Docmem, names: dict[str, str]) -> None:
    """Give generated ids fixed names and every node one timestamp, so renderings can be compared."""
    with store.db.transaction():
        for old, new in names.items():
            store.db.execute("UPDATE docmem_nodes SET id = ? WHERE id = ?", (new, old))
            store.db.execute("UPDATE docmem_nodes SET parent_id = ? WHERE parent_id = ?", (new, old))
        store.db.execute("UPDATE docmem_nodes SET updated_at = ?", (STAMP,))


def worked_example(store: Docmem) -> None:
    """The constructed example of specs/docmem.md section 2."""
    store.create("proj0001")
    made = {
        note(store, "proj0001", "Ship the parser by Friday.", context=("note", "topic", "goals")): "a1b2c3d4",
        note(store, "proj0001", "Created the repository.", context=("message", "user", "alice")): "k9m8n7p6",
        note(store, "proj0001", "Added a CI pipeline with lint and tests.",
             context=("message", "user", "bob")): "q1w2e3r4",
        note(store, "proj0001", "Tokenizer edge cases are untested.", context=("note", "topic", "risks")): "t5y6u7i8",
    }
    ids = {v: k for k, v in made.items()}
    summary = store.add_summary(ids["k9m8n7p6"], ids["q1w2e3r4"], "Week 1: repo and CI set up.",
                                ("summary", "week", "1"))
    rename(store, {**made, summary.id: "e5f6g7h8"})


# ---------------------------------------------------------------- ordering arithmetic

def test_order_arithmetic_matches_the_reference_weights():
    assert ordering.append(None) == 1.0
    assert ordering.append(3.0) == 4.0
    assert ordering.before(5.0, None) == 4.0
    assert ordering.before(5.0, 3.0) == pytest.approx(3.4)
    assert ordering.after(5.0, None) == 6.0
    assert ordering.after(5.0, 7.0) == pytest.approx(6.6)


def test_insert_positions_in_a_tree(store):
    store.create("r")
    first = note(store, "r", "first")
    third = note(store, "r", "third")
    second = note(store, third, "second", "before")
    zeroth = note(store, first, "zeroth", "before")
    fourth = note(store, third, "fourth", "after")
    assert contents(store, "r") == ["zeroth", "first", "second", "third", "fourth"]
    orders = {n.id: n.order_value for n in store.children("r")}
    assert orders[first] == 1.0 and orders[third] == 2.0
    assert orders[second] == pytest.approx(1.2)
    assert orders[zeroth] == 0.0
    assert orders[fourth] == 3.0


def test_inserting_where_decimals_run_out_renumbers_and_keeps_reading_order(store):
    store.create("r")
    last = note(store, "r", "0")
    tail = note(store, "r", "tail")
    for i in range(1, 80):
        last = note(store, last, str(i), "after")
    assert contents(store, "r") == [str(i) for i in range(80)] + ["tail"]
    orders = [n.order_value for n in store.children("r")]
    assert orders == sorted(orders) and len(set(orders)) == len(orders)
    assert store.get(tail).hash == node_hash("r", ("note", "", ""), "tail", store.get(tail).order_value)


def test_root_rules(store):
    root = store.create()
    assert len(root.id) == 8 and root.id.isalnum() and root.parent_id is None
    assert root.content == "" and root.context == ("", "", "") and root.order_value == 1.0 and root.token_count == 0
    with pytest.raises(ValidationError, match="already exists"):
        store.create(root.id)
    with pytest.raises(ValidationError, match="reserved"):
        store.create("session:x")
    with pytest.raises(ValidationError, match="Cannot insert before root"):
        note(store, root.id, "x", "before")
    with pytest.raises(NotFoundError, match="docmem_query_nodes"):
        note(store, "nothere", "x")


def test_context_and_token_rules(store):
    store.create("r")
    with pytest.raises(ValidationError, match="0 to 24 characters"):
        store.create_node("r", "x", ("t" * 25, "", ""), "append-child")
    with pytest.raises(ValidationError, match="required"):
        store.create_node("r", "x", ("t", None, ""), "append-child")
    node = store.create_node("r", "hello", ("t" * 24, "", ""), "append-child")
    assert node.token_count == 2
    assert [token_count(t) for t in ("", "abcd", "hello", "x" * 100)] == [0, 1, 2, 25]


# ---------------------------------------------------------------- summaries

def test_summary_takes_the_middle_order_and_files_the_run_under_it(store):
    store.create("r")
    a, b, c, d = (note(store, "r", t) for t in "abcd")
    summary = store.add_summary(c, b, "b and c", ("summary", "", ""))  # endpoints in either order
    assert summary.order_value == 2.5 and summary.parent_id == "r"
    assert contents(store, "r") == ["a", "b and c", "d"]
    kids = store.children(summary.id)
    assert [(k.content, k.order_value) for k in kids] == [("b", 1.0), ("c", 2.0)]
    assert all(k.hash == node_hash(summary.id, k.context, k.content, k.order_value) for k in kids)
    assert store.get(a).parent_id == "r" and store.get(d).parent_id == "r"


def test_summary_accepts_leaves_only_and_siblings_only(store):
    store.create("r")
    a, b = note(store, "r", "a"), note(store, "r", "b")
    note(store, b, "child of b")
    with pytest.raises(ValidationError, match="has children and cannot be summarized"):
        store.add_summary(a, b, "s", ("", "", ""))
    other = note(store, b, "other")
    with pytest.raises(ValidationError, match="different parents"):
        store.add_summary(a, other, "s", ("", "", ""))
    with pytest.raises(ValidationError, match="root"):
        store.add_summary("r", a, "s", ("", "", ""))


def test_summary_is_reversible(store):
    store.create("r")
    ids = [note(store, "r", t) for t in ("one", "two", "three", "four")]
    before = expand.serialize(store, "r")
    summary = store.add_summary(ids[1], ids[2], "two and three", ("summary", "", ""))
    assert expand.serialize(store, "r") == "one\n\ntwo and three\n\ntwo\n\nthree\n\nfour"
    store.move_node(ids[1], summary.id, "before")
    store.move_node(ids[2], ids[1], "after")
    store.delete(summary.id)
    assert expand.serialize(store, "r") == before


# ---------------------------------------------------------------- copy and move

def test_copy_is_deep_with_new_ids_and_may_cross_trees(store):
    store.create("src")
    store.create("dst")
    top = note(store, "src", "top")
    note(store, top, "kid one", readonly=True)
    note(store, top, "kid two")
    copy = store.copy_node(top, "dst", "append-child")
    assert copy.id != top and copy.parent_id == "dst" and copy.content == "top"
    kids = store.children(copy.id)
    assert [(k.content, k.order_value, k.readonly) for k in kids] == [("kid one", 1.0, True), ("kid two", 2.0, False)]
    assert not {k.id for k in kids} & {k.id for k in store.children(top)}
    assert contents(store, top) == ["kid one", "kid two"]


def test_copy_into_its_own_subtree_copies_the_subtree_once(store):
    store.create("r")
    top = note(store, "r", "top")
    kid = note(store, top, "kid")
    store.copy_node(top, kid, "append-child")
    assert expand.serialize(store, top) == "kid\n\ntop\n\nkid"


def test_move_rules(store):
    store.create("r")
    store.create("other")
    a, b = note(store, "r", "a"), note(store, "r", "b")
    a_kid = note(store, a, "a kid")
    store.move_node(a, b, "after")
    assert contents(store, "r") == ["b", "a"]
    moved = store.get(a)
    assert moved.hash == node_hash("r", moved.context, "a", moved.order_value)
    store.move_node(b, a, "append-child")
    assert contents(store, a) == ["a kid", "b"]
    with pytest.raises(ValidationError, match="inside the node being moved"):
        store.move_node(a, a_kid, "append-child")
    with pytest.raises(ValidationError, match="inside the node being moved"):
        store.move_node(a, b, "before")
    with pytest.raises(ValidationError, match="itself"):
        store.move_node(a, a, "after")
    with pytest.raises(ValidationError, match="within one tree"):
        store.move_node(b, "other", "append-child")
    with pytest.raises(ValidationError, match="root"):
        store.move_node(b, "r", "before")


# ---------------------------------------------------------------- readonly

def test_readonly_is_enforced_by_every_mutating_operation(store):
    store.create("r")
    locked = note(store, "r", "locked", readonly=True)
    free = note(store, "r", "free")
    for attempt in (
        lambda: store.update_content(locked, "x"),
        lambda: store.update_context(locked, ("a", "b", "c")),
        lambda: store.delete(locked),
        lambda: store.move_node(locked, free, "after"),
        lambda: store.add_summary(locked, free, "s", ("", "", "")),
        lambda: store.delete("r"),
    ):
        with pytest.raises(ValidationError, match="readonly"):
            attempt()
    assert store.get(locked).content == "locked" and contents(store, "r") == ["locked", "free"]
    # Annotating is allowed: a sibling note after it, or a child under it.
    note(store, locked, "note on locked", "after")
    note(store, locked, "child note")
    assert contents(store, "r") == ["locked", "note on locked", "free"]


# ---------------------------------------------------------------- rendering

def test_expand_worked_example(store):
    worked_example(store)
    assert expand.expand_to_length(store, "proj0001", 10) == (
        f"proj0001 :: {STAMP}\n\n"
        f"t5y6u7i8 note:topic:risks {STAMP}\nTokenizer edge cases are untested."
    )
    assert expand.expand_to_length(store, "proj0001", 30) == (
        f"proj0001 :: {STAMP}\n\n"
        f"a1b2c3d4 note:topic:goals {STAMP}\nShip the parser by Friday.\n\n"
        f"e5f6g7h8 summary:week:1 {STAMP}\nWeek 1: repo and CI set up.\n\n"
        f"t5y6u7i8 note:topic:risks {STAMP}\nTokenizer edge cases are untested."
    )
    everything = expand.expand_to_length(store, "proj0001", 39)
    assert [block.split(" ")[0] for block in everything.split("\n\n")] == [
        "proj0001", "a1b2c3d4", "e5f6g7h8", "k9m8n7p6", "q1w2e3r4", "t5y6u7i8"]
    just_short = expand.expand_to_length(store, "proj0001", 38)  # 33 with q1, then k9 (6) no longer fits
    assert [block.split(" ")[0] for block in just_short.split("\n\n")] == [
        "proj0001", "a1b2c3d4", "e5f6g7h8", "q1w2e3r4", "t5y6u7i8"]


def test_expand_edges(store):
    store.create("r")
    big = note(store, "r", "  " + "x" * 40 + "\n  second line  \n")
    note(store, big, "child")
    block = store.get(big).metadata_line() + "\n" + "x" * 40 + "\n  second line"  # trimmed, inner lines kept
    assert expand.expand_to_length(store, big, 1) == block  # the start node is shown even when over budget
    assert expand.expand_to_length(store, big, 100).startswith(block + "\n\n")
    with pytest.raises(ValidationError, match="positive"):
        expand.expand_to_length(store, "r", 0)
    with pytest.raises(NotFoundError):
        expand.expand_to_length(store, "missing", 10)


def test_serialize_worked_example(store):
    worked_example(store)
    note(store, "t5y6u7i8", "   ")
    assert expand.serialize(store, "proj0001") == "\n\n".join((
        "Ship the parser by Friday.", "Week 1: repo and CI set up.", "Created the repository.",
        "Added a CI pipeline with lint and tests.", "Tokenizer edge cases are untested."))
    assert expand.serialize(store, "k9m8n7p6") == ""


def test_get_root_returns_the_ancestor_path(store):
    worked_example(store)
    assert expand.ancestor_path(store, "q1w2e3r4") == (
        f"- proj0001 :: {STAMP}\n  - e5f6g7h8 summary:week:1 {STAMP}\n    - q1w2e3r4 message:user:bob {STAMP}")
    assert expand.ancestor_path(store, "proj0001") == f"- proj0001 :: {STAMP}"


# ---------------------------------------------------------------- queries

def test_query_reads_nodes_and_refuses_writes(store):
    worked_example(store)
    rows, more = query.run(store.db, store.project_id,
                           "SELECT id, content FROM nodes WHERE context_type = 'message' ORDER BY id")
    assert [r["id"] for r in rows] == ["k9m8n7p6", "q1w2e3r4"] and not more
    rows, more = query.run(store.db, store.project_id, "SELECT id FROM nodes ORDER BY id;", limit=2)
    assert len(rows) == 2 and more
    for sql in ("DELETE FROM nodes", "UPDATE docmem_nodes SET content = 'x'", "DROP TABLE docmem_nodes",
                "INSERT INTO docmem_nodes(id) VALUES ('x')", "CREATE TEMP TABLE t(a)", "PRAGMA writable_schema = 1",
                "ATTACH ':memory:' AS other", "SELECT 1; DELETE FROM docmem_nodes"):
        with pytest.raises(ValidationError, match="Query failed"):
            query.run(store.db, store.project_id, sql)
    with pytest.raises(ValidationError, match='only the "nodes" view'):
        query.run(store.db, store.project_id, "SELECT * FROM memories")
    with pytest.raises(ValidationError, match="ran longer"):
        query.run(store.db, store.project_id,
                  "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT max(x) FROM r",
                  deadline_seconds=0.2)
    assert store.db.scalar("SELECT count(*) FROM docmem_nodes") == 6


def test_trees_are_scoped_to_their_project(store, tmp_path):
    store.create("mine")
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    other = Docmem(store.db, projects.project_id(store.db, str(other_dir)))
    assert other.find("mine") is None
    with pytest.raises(NotFoundError):
        other.create_node("mine", "x", ("", "", ""), "append-child")
    assert query.run(store.db, other.project_id, "SELECT id FROM nodes") == ([], False)
