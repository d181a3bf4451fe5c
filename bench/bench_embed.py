"""Embedding throughput on real coding observations, this build vs the previous method, side by side.

Run: python bench/bench_embed.py [--store DIR] [--data FILE] [--sample 240]

The memories are those of ``coderecall-dev.json.gz`` replayed through the
hooks (``bench/coderecall.py``'s replay; the replayed data dir is kept in
``--store``, outside the repository, and reused). In one process, on the same machine state:

- previous method: fastembed over the raw stored content, 512-token truncation,
  batches of 64 in insertion order (what ``embed_pending`` did before);
- this build: ``embed_pending`` (condensed text with the session's request,
  256 tokens, length-bucketed batches under a token budget).

Both run on the same evenly spaced sample of memories (the previous method is
too slow on this machine to run on all of them within minutes); this build then
also embeds the whole store, which is the headline figure.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ccmemory import db as database  # noqa: E402
from ccmemory import embeddings  # noqa: E402
from coderecall import replay  # noqa: E402
from report import shared_machine, write_section  # noqa: E402

DEFAULT_STORE = Path.home() / ".cache" / "ccmemory-bench" / "coderecall-replay"


# The shared folder beside the repository (``../shared`` from its root).
DATASET = REPO.parent / "shared" / "bench-data" / "coderecall-dev.json.gz"


def capture_code_hash() -> str:
    """A hash of the code that decides what a replay stores (hooks, store, redaction, schema)."""
    source = REPO / "src" / "ccmemory"
    files = sorted([*(source / "hooks").glob("*.py"), *(source / name for name in (
        "memories.py", "sessions.py", "projects.py", "redaction.py", "db.py", "migrations.py", "rules/secrets.json"))])
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def replayed_store(store: Path, dataset: Path = DATASET) -> Path:
    """The database of a finished replay of the coding sessions, made again when the capture code changed."""
    done = store / "replayed"
    if not done.exists() or done.read_text() != capture_code_hash():
        shutil.rmtree(store, ignore_errors=True)
        store.mkdir(parents=True)
        with gzip.open(dataset, "rt", encoding="utf-8") as handle:
            replay(json.load(handle), store, "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable)
        done.write_text(capture_code_hash())
    return store / "home" / "ccmemory.db"


def fresh_copy(source: Path, folder: Path, name: str) -> Path:
    target = folder / name / "ccmemory.db"
    target.parent.mkdir(parents=True)
    src = sqlite3.connect(source)
    dst = sqlite3.connect(target)
    src.backup(dst)
    src.close()
    dst.close()
    return target


def keep_only(path: Path, seqs: list[int]) -> None:
    """Leave only ``seqs`` flagged for embedding (and claim the store for the model, which would flag all)."""
    conn = sqlite3.connect(path)
    conn.execute("UPDATE memories SET needs_embedding = 0")
    conn.execute("UPDATE chunks SET needs_embedding = 0")
    for kind in ("memory", "chunk"):
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                     (f"embeddings_model:{kind}", embeddings.BUILTIN_MODEL_ID))
    conn.executemany("UPDATE memories SET needs_embedding = 1 WHERE seq = ?", [(seq,) for seq in seqs])
    conn.commit()
    conn.close()


def previous_method(contents: list[str]) -> float:
    """Seconds fastembed took over raw contents, 512 tokens, batches of 64 in order."""
    from fastembed import TextEmbedding

    model = TextEmbedding(embeddings.DEFAULT_MODEL, specific_model_path=str(embeddings.builtin_model_dir()))
    list(model.embed(["warm-up"], batch_size=64))
    started = time.perf_counter()
    list(model.embed(contents, batch_size=64))
    return time.perf_counter() - started


def this_build(path: Path, embedder: embeddings.Embedder) -> tuple[int, float]:
    db = database.connect(path, vectors=True)
    started = time.perf_counter()
    done = embeddings.embed_pending(db, embedder)
    elapsed = time.perf_counter() - started
    db.close()
    return done, elapsed


def token_counts(texts: list[str], cap: int | None) -> list[int]:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(embeddings.__file__).parent / "model_files" / "tokenizer.json"))
    if cap:
        tokenizer.enable_truncation(cap)
    else:
        tokenizer.no_truncation()
    return [len(encoding.ids) for encoding in tokenizer.encode_batch(texts)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=DEFAULT_STORE)
    parser.add_argument("--data", type=Path, default=DATASET, help="coderecall-dev.json.gz (default: ../shared/bench-data)")
    parser.add_argument("--sample", type=int, default=240)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="ccmemory-bench-embed-"))
    os.environ["CCMEMORY_HOME"] = str(folder)
    source = replayed_store(args.store, args.data)
    conn = sqlite3.connect(source)
    rows = conn.execute("SELECT seq, content FROM memories WHERE is_deleted = 0 ORDER BY seq").fetchall()
    conn.close()
    step = max(1, len(rows) // args.sample)
    sample = rows[::step][:args.sample]
    embedder = embeddings.Embedder(embeddings.ModelSpec())

    before = previous_method([content for _, content in sample])
    print(f"previous method: {len(sample)} memories in {before:.1f} s", flush=True)
    sample_path = fresh_copy(source, folder, "sample")
    keep_only(sample_path, [seq for seq, _ in sample])
    done, after = this_build(sample_path, embedder)
    assert done == len(sample), (done, len(sample))
    whole, whole_seconds = this_build(fresh_copy(source, folder, "whole"), embedder)

    check = database.connect(folder / "sample" / "ccmemory.db")
    sample_rows = check.rows(
        "SELECT m.seq, m.content, m.content AS text, m.source, m.metadata, s.transcript_path FROM memories m "
        "LEFT JOIN sessions s ON s.id = m.session_id WHERE m.seq IN (%s) ORDER BY m.seq"
        % ",".join(str(seq) for seq, _ in sample))
    embedded_texts = embeddings.texts_to_embed(sample_rows, {})
    check.close()
    raw_tokens = token_counts([content for _, content in sample], 512)
    new_tokens = token_counts(embedded_texts, embeddings.MAX_TOKENS)
    load_average = os.getloadavg()[0]
    rate_before, rate_after, rate_whole = len(sample) / before, len(sample) / after, whole / whole_seconds
    print(f"previous {rate_before:.1f}/s, this build {rate_after:.1f}/s on {len(sample)}; whole store "
          f"{rate_whole:.1f}/s on {whole}; load {load_average:.1f}")
    lines = [
        shared_machine(),
        f"Command: `python bench/bench_embed.py --sample {args.sample}`",
        "",
        f"Memories of `coderecall-dev.json.gz` replayed through the hooks ({len(rows):,}: captured tool calls "
        "and session summaries). Same process, same evenly spaced sample for both methods:",
        "",
        "| method | memories | seconds | memories/s | tokens per text (mean / p95) |",
        "|---|---:|---:|---:|---:|",
        f"| previous: fastembed, raw content, 512 tokens, batches of 64 in order | {len(sample)} | {before:.1f} | "
        f"{rate_before:.1f} | {statistics.mean(raw_tokens):.0f} / {sorted(raw_tokens)[int(0.95 * len(raw_tokens))]} |",
        f"| this build: condensed text + request, 256 tokens, length-bucketed batches | {len(sample)} | "
        f"{after:.1f} | {rate_after:.1f} | {statistics.mean(new_tokens):.0f} / "
        f"{sorted(new_tokens)[int(0.95 * len(new_tokens))]} |",
        f"| this build, whole store (`embed_pending`) | {whole:,} | {whole_seconds:.1f} | **{rate_whole:.1f}** | |",
        "",
        f"Ratio this build / previous on the same sample: **{rate_after / rate_before:.1f}x**. "
        "Absolute rates depend on how busy the shared cores are; the ratio is the comparable figure.",
    ]
    write_section("embed", "Embedding throughput on coding observations", "\n".join(lines))


if __name__ == "__main__":
    main()
