"""Storage per 1,000 realistic tool calls, vectors included: this build, its rows with float32 vectors, the last build.

Run: python bench/bench_storage.py [--store DIR] [--data FILE] [--embedded DB]

The store is ``coderecall-dev.json.gz`` replayed through the hooks
(``bench/coderecall.py``'s replay, kept in ``--store`` outside the repository), migrated and
fully embedded by this build (or ``--embedded``: a copy already embedded by
``bench/bench_embed.py``). A replay made by other capture code (hooks, store,
redaction or schema) is made again, since what is stored changes with it. Side by side in the same run,
a copy of it gets the float32 vector layout of the builds before int8 (four bytes
per dimension); both are checkpointed and vacuumed, then measured per table with
``dbstat``. The build before this one's storage changes is shown as measured by
this script on the same data and machine (:data:`LAST_BUILD`).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import numpy

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ccmemory import db as database  # noqa: E402
from ccmemory import embeddings  # noqa: E402
from bench_embed import DATASET, DEFAULT_STORE, fresh_copy, replayed_store  # noqa: E402
from report import write_section  # noqa: E402

# A table or index counts in the first group one of whose prefixes it starts with.
GROUPS = (("keyword index (FTS5)", ("memories_fts", "chunks_fts")),
          ("memory rows and their indexes", ("memories", "sqlite_autoindex_memories")),
          ("usage links", ("session_memories", "sqlite_autoindex_session_memories")),
          ("sessions", ("session", "sqlite_autoindex_session")),
          ("stored vectors", ("memory_embeddings", "chunk_embeddings", "embedding_models",
                              "sqlite_autoindex_embedding_models")),
          ("vector index (sqlite-vec)", ("memory_vec", "chunk_vec")))


#: The build before 50bd6ca (a 'created' usage row per memory, two more memory indexes, a ~60-character
#: model id and a time on every vector row, the hook event and duration in captured metadata), as this
#: script measured it here on 2026-11-25: MB per 1,000 calls in all and per group.
LAST_BUILD = ("build 0df3f6d (measured 2026-11-25)", 2.54,
              {"keyword index (FTS5)": 0.21, "memory rows and their indexes": 1.21, "usage links": 0.23,
               "sessions": 0.08, "stored vectors": 0.57, "vector index (sqlite-vec)": 0.12, "other": 0.12})




def compacted_size(path: Path) -> int:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    conn.close()
    return path.stat().st_size


def by_group(path: Path) -> dict[str, int]:
    """Bytes per group of tables and indexes (dbstat, through apsw: its SQLite has the dbstat table)."""
    import apsw

    conn = apsw.Connection(str(path))
    sizes = {name: size for name, size in conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name")}
    conn.close()
    result: dict[str, int] = {}
    for name, size in sizes.items():
        label = next((group for group, prefixes in GROUPS if name.startswith(prefixes)), "other")
        result[label] = result.get(label, 0) + size
    return result


def as_float32(path: Path) -> None:
    """The previous layout: every stored vector as float32 (dequantized; the same bytes a float model writes)."""
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT item_seq, vector FROM memory_embeddings").fetchall()
    for seq, vector in rows:
        values = numpy.frombuffer(vector, dtype=numpy.int8).astype(numpy.float32)
        values /= max(float(numpy.linalg.norm(values)), 1e-12)
        conn.execute("UPDATE memory_embeddings SET vector = ? WHERE item_seq = ?", (values.tobytes(), seq))
    conn.commit()
    conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=DEFAULT_STORE)
    parser.add_argument("--data", type=Path, default=DATASET, help="coderecall-dev.json.gz (default: ../shared/bench-data)")
    parser.add_argument("--embedded", type=Path, default=None, help="a replayed store already embedded")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="ccmemory-bench-storage-"))
    os.environ["CCMEMORY_HOME"] = str(folder)
    source = replayed_store(args.store, args.data)
    calls = sqlite3.connect(source).execute("SELECT COUNT(*) FROM memories WHERE source = 'capture'").fetchone()[0]
    before_embedding = compacted_size(fresh_copy(source, folder, "unembedded"))
    current = folder / "current" / "ccmemory.db"
    if args.embedded:
        current.parent.mkdir()
        shutil.copyfile(args.embedded, current)
    else:
        current = fresh_copy(source, folder, "current")
        db = database.connect(current, vectors=True)
        embeddings.embed_pending(db, embeddings.Embedder(embeddings.ModelSpec()))
        db.close()
    float32 = folder / "float32" / "ccmemory.db"
    float32.parent.mkdir()
    compacted_size(current)
    shutil.copyfile(current, float32)
    as_float32(float32)
    empty = folder / "empty" / "ccmemory.db"
    empty.parent.mkdir()
    database.connect(empty).close()
    paths = {"this build": current, "this build, float32 vectors": float32}
    sizes = {name: compacted_size(path) for name, path in paths.items()}
    per_thousand = {name: size / calls * 1000 / 1e6 for name, size in sizes.items()}
    groups = {name: {label: size / calls * 1000 / 1e6 for label, size in by_group(path).items()}
              for name, path in paths.items()}
    last_name, last_total, last_groups = LAST_BUILD
    per_thousand[last_name], groups[last_name] = last_total, last_groups
    print(sizes, per_thousand, flush=True)
    labels = [group for group, _ in GROUPS] + ["other"]
    lines = [
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}; "
        f"{time.strftime('%Y-%m-%d %H:%M')}",
        "Command: `python bench/bench_storage.py`",
        "",
        f"`coderecall-dev.json.gz` replayed through the hooks: {calls:,} captured tool calls plus session summaries; "
        f"every memory embedded; database checkpointed and vacuumed. Before embedding: "
        f"{before_embedding / calls * 1000 / 1e6:.2f} MB per 1,000 calls. An empty store takes "
        f"{compacted_size(empty) / 1e6:.2f} MB (counted in the figures: a store's size over its calls).",
        "",
        "| layout | MB per 1,000 tool calls | " + " | ".join(labels) + " |",
        "|---|---:|" + "---:|" * len(labels),
    ]
    for name in per_thousand:
        lines.append(f"| {name} | **{per_thousand[name]:.2f}** | "
                     + " | ".join(f"{groups[name].get(label, 0):.2f}" for label in labels) + " |")
    lines += ["", f"Ratio this build / {last_name.split(' (')[0]}: **{per_thousand['this build'] / last_total:.2f}**; "
                  f"this build / its float32 layout: "
                  f"**{sizes['this build'] / sizes['this build, float32 vectors']:.2f}**. Group columns are MB per "
                  "1,000 calls too. The keyword index is external-content FTS5 (inverted index and per-row sizes "
                  "only, the text is read from the rows). Since the last build: no usage row repeats the session a "
                  "memory was created in (its `session_id`), one index serves session lookups and retried-capture "
                  "detection, the category index leaves out 'general', vectors name their model by a small number, "
                  "captured metadata keeps the tool, its call id and the function an edit changed, JSON is "
                  "stored without spaces, an edit stores the context lines it repeats once. "
                  "`ccmemory stats` shows the size, the bytes per memory and last week's growth of a real store."]
    write_section("storage", "Storage per 1,000 tool calls", "\n".join(lines))


if __name__ == "__main__":
    main()
