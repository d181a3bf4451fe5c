"""The sqlite-vec index: bit-quantized KNN partitioned by project, rescored with int8 vectors.

Stored vectors are int8, one byte per dimension (:func:`quantize`): a quarter
of float32, and the cosine between a float query and an int8 vector differs
from the float one by about 0.001, far below the gaps that decide a ranking.
Float brute force over 100k 384-d vectors costs ~70 ms here; a ``bit[dims]``
vec0 column scanned for a few hundred candidates costs ~10 ms, and rescoring
those with the float query against their int8 vectors recovers the ranking of
the float model. A memory may have several vectors, one per window of its text
(``part``; :func:`ccmemory.tokens.windows`) or, for a turn or note, its own and one per
sentence (:func:`ccmemory.embedding_text.sentence_spans`): each is a row of its own, the index is
keyed by the row's id (``rowid``; a chunk's row id is its seq), and a memory scores
by its best vector. A long-lived process (the MCP server, the viewer) keeps the
sign bits of the projects it searches in memory instead (:data:`keep_in_memory`),
because sqlite-vec's KNN costs grow with the number of candidates. The index is derived data: it is rebuilt from the embeddings
rows whenever the model (or its dimension) changes, and rows removed by
connections without the extension are queued in ``vector_tombstones`` and
drained here.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any, Sequence

TYPE_CHECKING = False
if TYPE_CHECKING:  # db loads this module's extension when it opens the store: no import back at run time
    from .db import Database

#: kind -> (vec0 table, embeddings table, SQL giving the project of an item)
KINDS = {
    "memory": ("memory_vec", "memory_embeddings", "SELECT project_id FROM memories WHERE seq = ?"),
    "chunk": ("chunk_vec", "chunk_embeddings",
              "SELECT d.project_id FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.seq = ?"),
}
#: The number an embeddings row stores for the model whose id is the parameter (``embedding_models``).
MODEL_NUMBER = "SELECT id FROM embedding_models WHERE model_id = ?"
#: kind -> SQL giving (id, vector) of every stored vector of a model in a project.
PROJECT_VECTORS = {
    "memory": "SELECT e.rowid AS id, e.vector AS vector FROM memory_embeddings e "
              f"JOIN memories m ON m.seq = e.item_seq WHERE e.model = ({MODEL_NUMBER}) AND m.project_id = ?",
    "chunk": "SELECT e.rowid AS id, e.vector AS vector FROM chunk_embeddings e JOIN chunks c ON c.seq = e.item_seq "
             f"JOIN documents d ON d.id = c.document_id WHERE e.model = ({MODEL_NUMBER}) AND d.project_id = ?",
}
#: (seq, vector) of every stored vector of a model of a user-wide memory (few: ranked exactly, from their index).
USER_MEMORY_VECTORS = ("SELECT e.item_seq AS seq, e.vector AS vector FROM memories m INDEXED BY memories_user "
                       f"JOIN memory_embeddings e ON e.item_seq = m.seq WHERE m.scope = 'user' "
                       f"AND e.model = ({MODEL_NUMBER})")
#: Bit-index candidates rescored per search, at least: the sign bits of MiniLM vectors rank coarsely
#: (recall@10 vs exact on 10k distinct real texts: 0.92 with 50, 0.97 with 100, 0.99 with 400).
#: A search asks for 4 candidates per neighbour it wants (400 for its list of 100).
MIN_CANDIDATES = 100
MMAP_BYTES = 256 * 1024 * 1024
#: Set by long-lived processes (the MCP server, the viewer): keep each searched project's sign bits in
#: memory and scan them there. sqlite-vec's KNN costs grow with the number of candidates asked for
#: (at 100k vectors: ~9 ms for 100, ~40 ms for 400), while a scan of the bits in memory costs ~3 ms
#: for any number, for 56 bytes of memory per vector (5.6 MB at 100k). A one-shot process (the CLI)
#: would pay more to load the bits than it saves, so it asks the vec0 index.
keep_in_memory = False
_GENERATION_KEY = "vector_generation:{}"


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
        or db.scalar(f"SELECT 1 FROM {emb_table} WHERE indexed = 0 AND model = ({MODEL_NUMBER}) LIMIT 1", (model_id,))
    )


def sync(db: Database, kind: str, model_id: str) -> int:
    """Apply queued removals and index embeddings not yet in the vec0 table; returns rows indexed.

    Any change also moves the kind's generation on (in ``meta``), so a process holding sign bits in
    memory knows another one changed the vectors; this process's own copies are updated in place.
    """
    vec_table, emb_table, project_sql = KINDS[kind]
    with db.transaction():
        removed = [row["vector_id"] for row in db.rows("SELECT vector_id FROM vector_tombstones WHERE kind = ?",
                                                       (kind,))]
        for vector_id in removed:
            db.execute(f"DELETE FROM {vec_table} WHERE rowid = ?", (vector_id,))
        db.execute("DELETE FROM vector_tombstones WHERE kind = ?", (kind,))
        pending = db.rows(f"SELECT rowid AS id, item_seq, vector FROM {emb_table} "
                          f"WHERE indexed = 0 AND model = ({MODEL_NUMBER})", (model_id,))
        added: list[tuple[int, int, bytes]] = []
        for row in pending:
            project = db.scalar(project_sql, (row["item_seq"],))
            db.execute(f"DELETE FROM {vec_table} WHERE rowid = ?", (row["id"],))
            if project is not None:
                db.execute(
                    f"INSERT INTO {vec_table}(rowid, project_id, embedding) "
                    f"VALUES (?, ?, vec_quantize_binary(vec_int8(?)))",
                    (row["id"], project, row["vector"]),
                )
                added.append((row["id"], project, row["vector"]))
            db.execute(f"UPDATE {emb_table} SET indexed = 1 WHERE rowid = ?", (row["id"],))
        if removed or pending:
            before = _generation(db, kind)
            db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                       (_GENERATION_KEY.format(kind), str(before + 1)))
            _SignIndex.apply(db, kind, model_id, before, removed + [row["id"] for row in pending], added)
    return len(pending)


def _generation(db: Database, kind: str) -> int:
    return int(db.scalar("SELECT value FROM meta WHERE key = ?", (_GENERATION_KEY.format(kind),)) or 0)


def sign_bits(vectors: Any) -> Any:
    """Rows of int8 (or float) vectors as packed sign bits, 64 dimensions per uint64 word."""
    import numpy

    matrix = numpy.atleast_2d(numpy.asarray(vectors))
    packed = numpy.packbits(matrix > 0, axis=1)
    padding = (-packed.shape[1]) % 8
    if padding:
        packed = numpy.pad(packed, ((0, 0), (0, padding)))
    return numpy.ascontiguousarray(packed).view(numpy.uint64)


class _SignIndex:
    """The sign bits of one project's vectors of one model, held by a long-lived process, by vector id.

    Built from the stored int8 vectors on first use; kept current by :func:`sync` in this
    process, and rebuilt when the generation shows another process changed the vectors.
    ``table`` (ids, codes) is replaced as one value, so a search in another thread (the
    server embeds in the background) always reads a matching pair.
    """

    held: dict[tuple[str, str, int, str], _SignIndex] = {}

    def __init__(self, generation: int, ids: Any, codes: Any) -> None:
        self.generation = generation
        self.table = (ids, codes)

    @classmethod
    def get(cls, db: Database, kind: str, project_id: int, model_id: str) -> _SignIndex:
        import numpy

        key = (db.path, kind, project_id, model_id)
        generation = _generation(db, kind)
        held = cls.held.get(key)
        if held is None or held.generation != generation:
            rows = db.rows(PROJECT_VECTORS[kind], (model_id, project_id))
            ids = numpy.array([row["id"] for row in rows], dtype=numpy.int64)
            stored = numpy.frombuffer(b"".join(row["vector"] for row in rows), dtype=numpy.int8)
            codes = sign_bits(stored.reshape(len(rows), -1)) if rows else numpy.zeros((0, 1), numpy.uint64)
            held = cls.held[key] = cls(generation, ids, codes)
        return held

    @classmethod
    def apply(cls, db: Database, kind: str, model_id: str, before: int, changed: list[int],
              added: list[tuple[int, int, bytes]]) -> None:
        """Bring this process's copies from generation ``before`` to the next: drop ``changed``, add ``added``."""
        import numpy

        for (path, held_kind, project_id, held_model), held in cls.held.items():
            if (path, held_kind, held_model) != (db.path, kind, model_id) or held.generation != before:
                continue
            ids, codes = held.table
            keep = ~numpy.isin(ids, numpy.array(changed, dtype=numpy.int64))
            mine = [(vector_id, vector) for vector_id, project, vector in added if project == project_id]
            ids, codes = ids[keep], codes[keep]
            if mine:
                stored = numpy.frombuffer(b"".join(vector for _, vector in mine), dtype=numpy.int8)
                ids = numpy.concatenate([ids, numpy.array([vector_id for vector_id, _ in mine], dtype=numpy.int64)])
                new_codes = sign_bits(stored.reshape(len(mine), -1))
                codes = numpy.vstack([codes, new_codes]) if len(codes) else new_codes
            held.table, held.generation = (ids, codes), before + 1

    def nearest(self, query: bytes, count: int) -> list[int]:
        """The ids of the ``count`` vectors whose sign bits differ least from the query's."""
        import numpy

        ids, codes = self.table
        if not len(ids):
            return []
        wanted = sign_bits(numpy.frombuffer(query, dtype=numpy.float32))[0]
        distance = numpy.bitwise_count(codes ^ wanted).sum(axis=1, dtype=numpy.int32)
        best = numpy.argpartition(distance, count)[:count] if count < len(distance) else numpy.arange(len(distance))
        return ids[best].tolist()


def quantize(vector: bytes) -> bytes:
    """A float32 vector as int8, scaled so its largest component is +-127 (cosine ignores the scale)."""
    import numpy

    values = numpy.frombuffer(vector, dtype=numpy.float32)
    peak = float(numpy.abs(values).max()) or 1.0
    return numpy.round(values * (127.0 / peak)).astype(numpy.int8).tobytes()


def nearest(
    db: Database, kind: str, query: bytes, *, project_id: int | None, model_id: str, limit: int
) -> list[tuple[int, float]]:
    """Items nearest to ``query`` (float32) in the project (None: every project), with cosine distance, closest first.

    The sign bits give ``max(MIN_CANDIDATES, 4 * limit)`` candidate vectors (per project); each is rescored,
    and an item with several (windows of a long memory, sentences of a turn) counts by its nearest one.
    """
    vec_table, emb_table, _ = KINDS[kind]
    candidates = max(MIN_CANDIDATES, limit * 4)
    if keep_in_memory:
        if project_id is None:
            ids = [found for row in db.rows("SELECT id FROM projects ORDER BY id")
                   for found in _SignIndex.get(db, kind, row["id"], model_id).nearest(query, candidates)]
        else:
            ids = _SignIndex.get(db, kind, project_id, model_id).nearest(query, candidates)
        rows = db.rows(f"SELECT item_seq AS seq, vector FROM {emb_table} WHERE model = ({MODEL_NUMBER}) "
                       f"AND rowid IN ({','.join('?' * len(ids))})", (model_id, *ids)) if ids else []
    else:
        in_project = "" if project_id is None else " AND project_id = ?"
        rows = db.rows(
            f"WITH candidates AS (SELECT rowid FROM {vec_table} WHERE embedding MATCH vec_quantize_binary(?) "
            f"AND k = ?{in_project}) "
            f"SELECT e.item_seq AS seq, e.vector AS vector FROM candidates c "
            f"JOIN {emb_table} e ON e.rowid = c.rowid AND e.model = ({MODEL_NUMBER})",
            (query, candidates, *(() if project_id is None else (project_id,)), model_id),
        )
    return _rescored(query, rows)[:candidates]


def nearest_user_memories(db: Database, query: bytes, *, model_id: str) -> list[tuple[int, float]]:
    """Every user-wide memory with a vector of the model, with its cosine distance to ``query``, closest first.

    They are few (preferences, conventions), so they are ranked exactly, whatever project they were written in.
    """
    return _rescored(query, db.rows(USER_MEMORY_VECTORS, (model_id,)))


def similarities(db: Database, kind: str, query: bytes, seqs: Sequence[int], *, model_id: str) -> list[tuple[int, float]]:
    """(seq, cosine distance) of the given items to ``query`` (float32), exactly; an item without a vector is left out.

    For candidates another ranking found (the keyword search's), so fusion weighs every candidate on both
    sides: the sign bits of :func:`nearest` miss some items whose exact cosine is among the best.
    """
    if not seqs:
        return []
    _, emb_table, _ = KINDS[kind]
    rows = db.rows(f"SELECT item_seq AS seq, vector FROM {emb_table} WHERE model = ({MODEL_NUMBER}) "
                   f"AND item_seq IN ({','.join('?' * len(seqs))})", (model_id, *seqs))
    return _rescored(query, rows)


def _rescored(query: bytes, rows: list[dict[str, Any]]) -> list[tuple[int, float]]:
    """(seq, cosine distance) of each row's int8 vector to the float32 ``query``, closest first."""
    import numpy

    if not rows:
        return []
    wanted = numpy.frombuffer(query, dtype=numpy.float32)
    stored = numpy.frombuffer(b"".join(row["vector"] for row in rows), dtype=numpy.int8)
    stored = stored.reshape(len(rows), -1).astype(numpy.float32)
    norms = numpy.linalg.norm(stored, axis=1) * max(float(numpy.linalg.norm(wanted)), 1e-12)
    similarity = stored @ wanted / numpy.maximum(norms, 1e-12)
    best: dict[int, float] = {}
    for index in numpy.argsort(-similarity):
        best.setdefault(rows[index]["seq"], float(similarity[index]))
    return [(seq, 1.0 - value) for seq, value in best.items()]
