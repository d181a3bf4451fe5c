"""Sign bits held in memory by long-lived processes: the same candidates as the vec0 index, kept current."""

from __future__ import annotations

import numpy
import pytest

from ccmemory import db as database
from ccmemory import embeddings, memories, projects, vectors

MODEL = "test-model"
DIMS = 64


@pytest.fixture
def store(vdb, project_dir):
    """200 random vectors in one project and 20 in another, indexed by vec0."""
    rng = numpy.random.default_rng(7)
    mine = projects.project_id(vdb, project_dir)
    other = projects.project_id(vdb, project_dir.parent / "other")
    seqs = {}
    for number in range(220):
        project = mine if number < 200 else other
        memory = memories.add(vdb, project_id=project, content=f"memory {number}")
        seqs[memory.seq] = rng.normal(size=DIMS).astype(numpy.float32)
    _store(vdb, seqs)
    vectors.ensure_index(vdb, "memory", MODEL, DIMS)
    return vdb, mine, other, seqs, rng


def _store(db, found: dict[int, numpy.ndarray]) -> None:
    model = embeddings.model_number(db, MODEL)
    with db.transaction():
        for seq, vector in found.items():
            db.execute("INSERT INTO memory_embeddings(item_seq, model, vector, indexed) "
                       "VALUES (?, ?, ?, 0) ON CONFLICT(item_seq, part) DO UPDATE SET vector = excluded.vector, "
                       "indexed = 0", (seq, model, vectors.quantize(vector.tobytes())))


def _nearest(db, project, query, *, in_memory: bool, monkeypatch) -> list[int]:
    monkeypatch.setattr(vectors, "keep_in_memory", in_memory)
    return [seq for seq, _ in vectors.nearest(db, "memory", query.tobytes(), project_id=project, model_id=MODEL,
                                               limit=10)]


def test_memory_scan_finds_what_the_vec0_index_finds(store, monkeypatch):
    db, mine, _, seqs, rng = store
    for _ in range(5):
        query = rng.normal(size=DIMS).astype(numpy.float32)
        from_index = _nearest(db, mine, query, in_memory=False, monkeypatch=monkeypatch)
        from_memory = _nearest(db, mine, query, in_memory=True, monkeypatch=monkeypatch)
        assert from_memory[:10] == from_index[:10]
        assert len(from_memory) == 100 and set(from_memory) <= set(seqs)


def test_only_the_project_is_scanned(store, monkeypatch):
    db, mine, other, seqs, rng = store
    query = rng.normal(size=DIMS).astype(numpy.float32)
    found = _nearest(db, other, query, in_memory=True, monkeypatch=monkeypatch)
    assert len(found) == 20 and not set(found) & set(_nearest(db, mine, query, in_memory=True,
                                                             monkeypatch=monkeypatch))


def test_changes_made_here_and_by_another_process_are_seen(store, monkeypatch, home):
    db, mine, _, seqs, rng = store
    target = next(iter(seqs))
    query = seqs[target]
    assert _nearest(db, mine, query, in_memory=True, monkeypatch=monkeypatch)[0] == target
    # here: the vector of a new memory is synced by this connection and applied in place
    added = memories.add(db, project_id=mine, content="new")
    _store(db, {added.seq: query * 2})
    vectors.sync(db, "memory", MODEL)
    assert added.seq in _nearest(db, mine, query, in_memory=True, monkeypatch=monkeypatch)[:2]
    # elsewhere: another connection (as another process would) removes it and syncs
    other = database.connect(vectors=True)
    try:
        memories.delete(other, added.id, project_id=mine, hard=True)
        vectors.sync(other, "memory", MODEL)
    finally:
        other.close()
    assert added.seq not in _nearest(db, mine, query, in_memory=True, monkeypatch=monkeypatch)
    assert _nearest(db, mine, query, in_memory=True, monkeypatch=monkeypatch)[0] == target
