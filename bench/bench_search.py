"""Search latency at 1k / 10k / 100k memories and embedding throughput; writes BENCHMARKS.md.

Run: python bench/bench_search.py [--sizes 1000,10000,100000] [--queries 60]

Memories are synthetic coding-session observations and facts built from
templates. Embedding throughput is measured with the real model through
``embed_pending``. For the latency runs, the first 4,000 distinct texts are
embedded with the real model; larger stores reuse those vectors with a little
Gaussian noise (re-normalized) so that building a 100k store takes seconds,
not the ~30 minutes that embedding 100k texts on 2 cores would. Every query
is embedded for real (the query cache is cleared), in one warm process, as the
MCP server runs it. Recall@10 compares the bit-quantized index + float
rescoring against exact float brute force over the same vectors.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from ccmemory import clock, embeddings, search, vectors  # noqa: E402
from ccmemory import db as database  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import write_section  # noqa: E402

SUBJECTS = ["the auth middleware", "the billing service", "the CI pipeline", "the cache layer", "the search index",
            "the user profile page", "the payment webhook", "the migration script", "the rate limiter",
            "the feature flag client", "the export job", "the email templates", "the GraphQL resolver",
            "the docker image", "the logging setup", "the session store", "the API gateway", "the test fixtures"]
ACTIONS = ["Fixed a race in", "Refactored", "Added retries to", "Documented", "Found a memory leak in",
           "Wrote tests for", "Profiled", "Renamed config keys of", "Removed dead code from", "Upgraded dependencies of",
           "Debugged a timeout in", "Split the module of", "Cached responses of", "Added metrics to"]
DETAILS = ["after the deploy failed", "because users saw 500 errors", "to cut p95 latency", "as the reviewer asked",
           "before the release", "since the nightly build broke", "while chasing flaky tests", "for the audit",
           "when Redis was down", "after the schema change"]
QUERIES = ["why did the deploy fail", "retry logic for flaky network calls", "how is authentication handled",
           "memory leak in the export job", "rate limiter configuration", "what changed in the CI pipeline",
           "cache invalidation for user profiles", "payment webhook errors", "slow GraphQL queries",
           "where are feature flags evaluated", "docker image size", "test fixtures for the session store",
           "ERR_TIMEOUT in the api gateway", "logging setup for production", "email template rendering bug"]


def synthetic_texts(count: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for number in range(count):
        text = f"{rng.choice(ACTIONS)} {rng.choice(SUBJECTS)} {rng.choice(DETAILS)}"
        if number % 3 == 0:
            text += f"; touched src/{rng.choice(['api', 'core', 'jobs', 'web'])}/module_{number % 97}.py"
        if number % 11 == 0:
            text += f" (error code E{number % 1000:04d})"
        texts.append(text)
    return texts


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def build_store(path: Path, texts: list[str], vectors_f32: numpy.ndarray, model_id: str) -> database.Database:
    db = database.connect(path, vectors=True)
    now = clock.now()
    model = embeddings.model_number(db, model_id)
    with db.transaction():
        db.execute("INSERT INTO projects(path, name, created_at) VALUES ('/bench', 'bench', ?)", (now,))
        for seq, text in enumerate(texts, 1):
            db.execute(
                "INSERT INTO memories(seq, id, project_id, content, sector, tier, created_at, updated_at, source, "
                "needs_embedding) VALUES (?, ?, 1, ?, 'episodic', 'project', ?, ?, 'bench', 0)",
                (seq, f"bench-{seq:08d}", text, now, now),
            )
            db.execute("INSERT INTO memory_embeddings(item_seq, model, vector) VALUES (?, ?, ?)",
                       (seq, model, vectors.quantize(vectors_f32[seq - 1].tobytes())))
        db.execute("INSERT INTO meta(key, value) VALUES ('embeddings_model:memory', ?)", (model_id,))
    vectors.ensure_index(db, "memory", model_id, vectors_f32.shape[1])
    return db


def corpus_vectors(embedder: embeddings.Embedder, texts: list[str], real: int, seed: int = 2) -> numpy.ndarray:
    base = numpy.array([numpy.frombuffer(v, dtype=numpy.float32) for v in embedder.embed(texts[:real])])
    if len(texts) <= real:
        return base
    rng = numpy.random.default_rng(seed)
    picks = base[rng.integers(0, real, len(texts) - real)]
    noisy = picks + rng.normal(0, 0.04, picks.shape).astype(numpy.float32)
    noisy /= numpy.linalg.norm(noisy, axis=1, keepdims=True)
    return numpy.vstack([base, noisy]).astype(numpy.float32)


def measure(db: database.Database, embedder: embeddings.Embedder, mode: str, rounds: int) -> list[float]:
    timings = []
    for number in range(rounds):
        query = f"{QUERIES[number % len(QUERIES)]} {number}"
        embedder._cache.clear()
        started = time.perf_counter()
        search.search(db, query, project_id=1, mode=mode, embedder=embedder, limit=5, track=False)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def recall_at_10(db: database.Database, embedder: embeddings.Embedder, matrix: numpy.ndarray) -> float:
    found = total = 0
    for query in QUERIES:
        q = numpy.frombuffer(embedder.embed_query(query), dtype=numpy.float32)
        exact = set((numpy.argsort(-(matrix @ q))[:10] + 1).tolist())
        approx = {seq for seq, _ in vectors.nearest(db, "memory", q.tobytes(), project_id=1,
                                                    model_id=embedder.model_id, limit=search.CANDIDATES)[:10]}
        found += len(exact & approx)
        total += 10
    return found / total


def throughput(embedder: embeddings.Embedder, folder: Path, count: int) -> float:
    db = database.connect(folder / "throughput.db", vectors=True)
    with db.transaction():
        db.execute("INSERT INTO projects(path, name, created_at) VALUES ('/t', 't', ?)", (clock.now(),))
        for number, text in enumerate(synthetic_texts(count, seed=9)):
            db.execute("INSERT INTO memories(id, project_id, content, sector, tier, created_at, updated_at) "
                       "VALUES (?, 1, ?, 'episodic', 'project', ?, ?)", (f"t{number}", text, clock.now(), clock.now()))
    started = time.perf_counter()
    done = embeddings.embed_pending(db, embedder)
    elapsed = time.perf_counter() - started
    db.close()
    return done / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--throughput-items", type=int, default=1000)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    folder = Path(tempfile.mkdtemp(prefix="ccmemory-bench-"))
    os.environ["CCMEMORY_HOME"] = str(folder)
    embedder = embeddings.Embedder(embeddings.ModelSpec())
    rate = throughput(embedder, folder, args.throughput_items)
    print(f"embedding throughput: {rate:.0f} memories/s")
    texts_all = synthetic_texts(max(sizes))
    matrix_all = corpus_vectors(embedder, texts_all, real=min(4000, max(sizes)))
    rows = []
    for size in sizes:
        db = build_store(folder / f"bench-{size}.db", texts_all[:size], matrix_all[:size], embedder.model_id)
        vectors.keep_in_memory = False  # a one-shot process (the CLI) asks sqlite-vec's KNN
        measure(db, embedder, "hybrid", 5)
        result = {"vec0 hybrid": measure(db, embedder, "hybrid", args.queries)}
        vectors.keep_in_memory = True  # the MCP server and the viewer scan sign bits held in memory
        measure(db, embedder, "hybrid", 5)
        result.update({mode: measure(db, embedder, mode, args.queries) for mode in ("hybrid", "semantic", "keyword")})
        recall = recall_at_10(db, embedder, matrix_all[:size])
        rows.append((size, result, recall))
        print(size, {mode: (round(statistics.median(t), 1), round(percentile(t, 0.95), 1))
                     for mode, t in result.items()}, f"recall@10 {recall:.2f}")
        db.close()
    lines = [
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}; {time.strftime('%Y-%m-%d')}",
        f"Command: `python bench/bench_search.py --sizes {args.sizes} --queries {args.queries}`",
        "",
        "Warm process as the MCP server runs it (sign bits held in memory, `vectors.keep_in_memory`), limit 5, "
        "every query embedded (cache cleared); milliseconds. The last latency column is the same hybrid search "
        f"through sqlite-vec's KNN for its {search.CANDIDATES * 4} candidates, as a one-shot process (the CLI) "
        "runs it, in the same run. Recall@10 vs exact float search of the candidates a search rescores. "
        "Stores above 4,000 memories reuse 4,000 really embedded vectors with a little Gaussian noise; "
        "`bench/bench_vectors.py` measures recall on distinct real texts.",
        "",
        "| memories | hybrid p50 | hybrid p95 | semantic p50 | semantic p95 | keyword p50 | keyword p95 "
        "| hybrid p50 via vec0 KNN | recall@10 vs exact |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size, result, recall in rows:
        cells = []
        for mode in ("hybrid", "semantic", "keyword"):
            cells += [f"{statistics.median(result[mode]):.1f}", f"{percentile(result[mode], 0.95):.1f}"]
        cells.append(f"{statistics.median(result['vec0 hybrid']):.1f}")
        lines.append(f"| {size:,} | " + " | ".join(cells) + f" | {recall:.2f} |")
    lines += ["", f"Embedding throughput (`embed_pending`, {args.throughput_items} synthetic memories, "
                  f"built-in int8 MiniLM, batch {embeddings.BATCH_SIZE}): **{rate:.0f} memories/s**."]
    write_section("search", "Search latency and embedding throughput", "\n".join(lines))


if __name__ == "__main__":
    main()
