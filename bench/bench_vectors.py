"""Vector recall@10 vs exact search and hybrid latency at 10k / 100k, on vectors of distinct real texts.

Run: python bench/bench_vectors.py [--sizes 10000,100000] [--queries 60] [--candidates 50,100,200,400]

The texts are docstrings and signatures of the Python sources on this machine
(``bench/realtext.py``): every one distinct, none a noisy copy of another.
Their vectors are made once with the built-in model and cached outside the
repository (``~/.cache/ccmemory-bench/realtext-chunks/``, resumable chunks of
2,000 named by their texts' hash); the queries are held-out texts of the same kind, never in the store.
Stores hold int8 vectors and the sqlite-vec bit index exactly as ccmemory
writes them. Recall@10 compares ``vectors.nearest`` (bit-index candidates
rescored on int8 vectors) with exact float32 brute force over the same texts,
for each number of candidates; 50 is what the previous build rescored.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ccmemory import embeddings, search, vectors  # noqa: E402
from bench_search import build_store, percentile  # noqa: E402
from realtext import distinct_texts  # noqa: E402
from report import shared_machine, write_section  # noqa: E402

CACHE = Path.home() / ".cache" / "ccmemory-bench"
CHUNK = 2000


def cached_vectors(embedder: embeddings.Embedder, texts: list[str]) -> numpy.ndarray:
    """Vectors of ``texts``, embedded in chunks cached by their texts' hash, so any prefix and any rerun reuse them."""
    folder = CACHE / "realtext-chunks"
    folder.mkdir(parents=True, exist_ok=True)
    parts = []
    for start in range(0, len(texts), CHUNK):
        chunk = texts[start:start + CHUNK]
        part = folder / f"{hashlib.sha256(chr(10).join(chunk).encode()).hexdigest()[:16]}-{len(chunk)}.npy"
        if not part.exists():
            vectors_ = embedder.embed(chunk)
            numpy.save(part.with_suffix(".tmp.npy"), numpy.array([numpy.frombuffer(v, numpy.float32) for v in vectors_]))
            part.with_suffix(".tmp.npy").rename(part)
            print(f"embedded {start + len(chunk):,}/{len(texts):,}", flush=True)
        parts.append(numpy.load(part))
    return numpy.vstack(parts).astype(numpy.float32)


def recall(db, matrix: numpy.ndarray, queries: numpy.ndarray, model_id: str) -> float:
    found = 0
    for query in queries:
        exact = set((numpy.argsort(-(matrix @ query))[:10] + 1).tolist())
        approx = [seq for seq, _ in vectors.nearest(db, "memory", query.tobytes(), project_id=1,
                                                    model_id=model_id, limit=10)[:10]]
        found += len(exact & set(approx))
    return found / (10 * len(queries))


def latencies(db, embedder: embeddings.Embedder, queries: list[str], mode: str) -> list[float]:
    timings = []
    for query in queries:
        embedder._cache.clear()
        started = time.perf_counter()
        search.search(db, query, project_id=1, mode=mode, embedder=embedder, limit=5, track=False)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--candidates", default="50,100,200,400")
    parser.add_argument("--embed-only", action="store_true", help="only build the vector cache")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    folder = Path(tempfile.mkdtemp(prefix="ccmemory-bench-vectors-"))
    os.environ["CCMEMORY_HOME"] = str(folder)
    texts = distinct_texts(max(sizes) + args.queries)
    if len(texts) < max(sizes) + args.queries:
        sys.exit(f"only {len(texts):,} distinct texts found on this machine; pass smaller --sizes")
    corpus, query_texts = texts[:max(sizes)], texts[max(sizes):]
    embedder = embeddings.Embedder(embeddings.ModelSpec())
    matrix = cached_vectors(embedder, corpus)
    if args.embed_only:
        return
    query_matrix = numpy.array([numpy.frombuffer(embedder.embed_query(q), numpy.float32) for q in query_texts])
    settings = [int(c) for c in args.candidates.split(",")]
    default = vectors.MIN_CANDIDATES
    used = max(default, search.CANDIDATES * 4)  # what a search rescores: 4 per entry of its list
    vectors.keep_in_memory = True  # latencies as the MCP server runs searches
    rows = []
    for size in sizes:
        db = build_store(folder / f"v-{size}.db", corpus[:size], matrix[:size], embedder.model_id)
        by_candidates = {}
        for candidates in settings:
            vectors.MIN_CANDIDATES = candidates
            by_candidates[candidates] = recall(db, matrix[:size], query_matrix, embedder.model_id)
        vectors.MIN_CANDIDATES = default
        latencies(db, embedder, query_texts[:5], "hybrid")
        timing = {mode: latencies(db, embedder, query_texts, mode) for mode in ("hybrid", "semantic")}
        rows.append((size, by_candidates, timing))
        print(size, by_candidates, {m: round(statistics.median(t), 1) for m, t in timing.items()}, flush=True)
        db.close()
    lines = [
        shared_machine(),
        f"Command: `python bench/bench_vectors.py --sizes {args.sizes} --queries {args.queries} "
        f"--candidates {args.candidates}`",
        "",
        f"{max(sizes):,} distinct real texts (docstrings and signatures of this machine's Python sources), "
        f"{len(query_texts)} held-out texts as queries; int8 stored vectors and the bit index as ccmemory "
        "writes them. Recall@10 of `vectors.nearest` vs exact float32 search, by bit-index candidates "
        f"rescored (the previous build used 50; a search of this build rescores {used}: 4 per entry of its "
        f"{search.CANDIDATES}-deep list):",
        "",
        "| vectors | " + " | ".join(f"{c} candidates" for c in settings) + " | hybrid p50 | hybrid p95 | "
        "semantic p50 |",
        "|---:|" + "---:|" * (len(settings) + 3),
    ]
    for size, by_candidates, timing in rows:
        lines.append(
            f"| {size:,} | " + " | ".join(f"{by_candidates[c]:.3f}" for c in settings)
            + f" | {statistics.median(timing['hybrid']):.1f} | {percentile(timing['hybrid'], 0.95):.1f} | "
            f"{statistics.median(timing['semantic']):.1f} |")
    lines += ["", f"Latencies in milliseconds, warm process as the MCP server runs it (sign bits in memory), limit 5, "
                  f"{used} candidates, every query embedded (cache cleared), so they include the model's time on "
                  "the query."]
    write_section("vectors", "Vector recall and latency on distinct real texts", "\n".join(lines))


if __name__ == "__main__":
    main()
