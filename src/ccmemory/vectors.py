"""The sqlite-vec index: bit-quantized KNN partitioned by project, rescored with int8 vectors.

Stored vectors are int8, one byte per dimension (:func:`quantize`): a quarter
of float32, and the cosine between a float query and an int8 vector differs
from the float one by about 0.001, far below the gaps that decide a ranking.
Float brute force over 100k 384-d vectors costs ~70 ms here; a ``bit[dims]``
vec0 column scanned for a few hundred candidates costs ~10 ms, and rescoring
those with the float query against their int8 vectors recovers the ranking of
the float model. The index is derived data: it is rebuilt from the embeddings
rows whenever the model (or its dimension) changes, and rows removed by
connections without the extension are queued in ``vector_tombstones`` and
drained here.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:  # db loads this module's extension when it opens the store: no import back at run time
    from .db import Database

#: kind -> (vec0 table, embeddings table, SQL giving the project of an item)
KINDS = {
    "memory": ("memory_vec", "memory_embeddings", "SELECT project_id FROM memories WHERE seq = ?"),
    "chunk": ("chunk_vec", "chunk_embeddings",
              "SELECT d.project_id FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.seq = ?"),
}
#: Bit-index candidates rescored per search: the sign bits of MiniLM vectors rank coarsely (recall@10
#: vs exact on 10k distinct real texts: 0.92 with 50, 0.97 with 100, 0.99 with 400), but sqlite-vec's
#: KNN costs several times more above ~100 candidates (see BENCHMARKS.md).
MIN_CANDIDATES = 100
MMAP_BYTES = 256 * 1024 * 1024


def extension_path() -> Path | None:
    """sqlite-vec's loadable library, found without importing the module (which imports numpy)."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        return None
    suffix = {"win32": ".dll", "darwin": ".dylib"}.get(sys.platform, ".so")
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / f"vec0{suffix}"
        if candidate.exists():
            return candidate
    return None


def load_extension(db: Database) -> bool:
    """Load vec0 into ``db``; on failure record why in ``db.vector_error`` and return False."""
    library = extension_path()
    if library is None:
        db.vector_error = "the sqlite-vec package is not installed (pip install sqlite-vec)"
        return False
    enable = getattr(db.conn, "enable_load_extension", None)
    if enable is None:
        db.vector_error = (
            "this Python's sqlite3 cannot load extensions and apsw is not installed (pip install apsw)"
        )
        return False
    try:
        enable(True)
        db.conn.load_extension(os.fspath(library.with_suffix("")) if db.binding == "sqlite3" else str(library))
        enable(False)
    except Exception as exc:  # the binding's own error type
        db.vector_error = f"sqlite-vec failed to load from {library}: {exc}"
        return False
    db.vectors_loaded = True
    db.vector_error = None
    # The KNN scan reads every bit vector of a project; memory-mapped reads spare it the page-cache copies.
    db.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
    return True


def _meta_key(kind: str) -> str:
    return f"vector_index:{kind}"


def ensure_index(db: Database, kind: str, model_id: str, dims: int) -> None:
    """Make the vec0 table of ``kind`` match the model, then bring it up to date.

    A different model or dimension drops the index and marks every embedding of
    the current model as not indexed, so it is rebuilt from stored vectors.
    """
    vec_table, emb_table, _ = KINDS[kind]
    signature = f"{model_id}|{dims}"
    current = db.scalar("SELECT value FROM meta WHERE key = ?", (_meta_key(kind),)) == signature
    if current and not _has_work(db, kind, model_id):
        return
    with db.transaction():
        if db.scalar("SELECT value FROM meta WHERE key = ?", (_meta_key(kind),)) != signature:
            db.execute(f"DROP TABLE IF EXISTS {vec_table}")
            db.execute(
                f"CREATE VIRTUAL TABLE {vec_table} USING vec0("
                f"project_id INTEGER PARTITION KEY, embedding bit[{dims}])"
            )
            db.execute(f"UPDATE {emb_table} SET indexed = 0")
            db.execute("DELETE FROM vector_tombstones WHERE kind = ?", (kind,))
            db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (_meta_key(kind), signature))
        sync(db, kind, model_id)


def _has_work(db: Database, kind: str, model_id: str) -> bool:
    _, emb_table, _ = KINDS[kind]
    return bool(
        db.scalar("SELECT 1 FROM vector_tombstones WHERE kind = ? LIMIT 1", (kind,))
        or db.scalar(f"SELECT 1 FROM {emb_table} WHERE indexed = 0 AND model_id = ? LIMIT 1", (model_id,))
    )


def sync(db: Database, kind: str, model_id: str) -> int:
    """Apply queued removals and index embeddings not yet in the vec0 table; returns rows indexed."""
    vec_table, emb_table, project_sql = KINDS[kind]
    with db.transaction():
        for row in db.rows("SELECT item_seq FROM vector_tombstones WHERE kind = ?", (kind,)):
            db.execute(f"DELETE FROM {vec_table} WHERE rowid = ?", (row["item_seq"],))
        db.execute("DELETE FROM vector_tombstones WHERE kind = ?", (kind,))
        pending = db.rows(
            f"SELECT item_seq, vector FROM {emb_table} WHERE indexed = 0 AND model_id = ?", (model_id,)
        )
        for row in pending:
            project = db.scalar(project_sql, (row["item_seq"],))
            db.execute(f"DELETE FROM {vec_table} WHERE rowid = ?", (row["item_seq"],))
            if project is not None:
                db.execute(
                    f"INSERT INTO {vec_table}(rowid, project_id, embedding) "
                    f"VALUES (?, ?, vec_quantize_binary(vec_int8(?)))",
                    (row["item_seq"], project, row["vector"]),
                )
            db.execute(f"UPDATE {emb_table} SET indexed = 1 WHERE item_seq = ?", (row["item_seq"],))
    return len(pending)


def quantize(vector: bytes) -> bytes:
    """A float32 vector as int8, scaled so its largest component is +-127 (cosine ignores the scale)."""
    import numpy

    values = numpy.frombuffer(vector, dtype=numpy.float32)
    peak = float(numpy.abs(values).max()) or 1.0
    return numpy.round(values * (127.0 / peak)).astype(numpy.int8).tobytes()


def nearest(
    db: Database, kind: str, query: bytes, *, project_id: int, model_id: str, limit: int
) -> list[tuple[int, float]]:
    """Item seqs nearest to ``query`` (float32) in the project, with cosine distance, closest first."""
    import numpy

    vec_table, emb_table, _ = KINDS[kind]
    candidates = max(MIN_CANDIDATES, limit * 4)
    rows = db.rows(
        f"WITH candidates AS (SELECT rowid FROM {vec_table} WHERE embedding MATCH vec_quantize_binary(?) "
        f"AND k = ? AND project_id = ?) "
        f"SELECT e.item_seq AS seq, e.vector AS vector FROM candidates c "
        f"JOIN {emb_table} e ON e.item_seq = c.rowid AND e.model_id = ?",
        (query, candidates, project_id, model_id),
    )
    if not rows:
        return []
    wanted = numpy.frombuffer(query, dtype=numpy.float32)
    stored = numpy.frombuffer(b"".join(row["vector"] for row in rows), dtype=numpy.int8)
    stored = stored.reshape(len(rows), -1).astype(numpy.float32)
    norms = numpy.linalg.norm(stored, axis=1) * max(float(numpy.linalg.norm(wanted)), 1e-12)
    similarity = stored @ wanted / numpy.maximum(norms, 1e-12)
    order = numpy.argsort(-similarity)
    return [(rows[index]["seq"], 1.0 - float(similarity[index])) for index in order]
