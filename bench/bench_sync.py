"""Team sync throughput and search with a large team store, local replica vs the server, in one run.

Run: python bench/bench_sync.py [--push 10000] [--team 100000] [--queries 40] [--write]

Starts a throwaway PostgreSQL 16 + pgvector (``testing.postgres``, the pgserver wheel) with the
schema of ``ccmemory server init`` and one member. Machine A (a data dir with a clone of a git
repository) holds ``--push`` memories, each with a 384-dimension vector; one ``ccmemory sync``
process pushes them (timed as a whole process); machine B, the same member in another clone,
pulls them with one ``ccmemory sync``. Then the team store is filled up to ``--team`` rows on
the server (``COPY`` as the member: the triggers, row-level security and the HNSW index do their
work as for any insert), B pulls them all, and the same queries are searched on B's local
replica (``search.search_with_info``, warm, in process) and through the server's
``ccmemory.search_text`` / ``ccmemory.search_vector`` (HNSW) as the member, side by side.

Vectors are **random** (the latency of a search does not depend on what the vectors mean;
embedding 100k texts takes hours here); queries are embedded with the configured model in both
columns, as a client asking the server would.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import report  # noqa: E402
import year_of_use  # noqa: E402

DIMS = 384


def sentence(rng: random.Random, number: int) -> str:
    words = rng.choices(year_of_use.WORDS, k=rng.randint(12, 40))
    return f"Memory {number}: " + " ".join(words) + f" ({uuid.UUID(int=rng.getrandbits(128)).hex[:12]})."


def random_int8(rng: random.Random) -> bytes:
    return rng.randbytes(DIMS)


def as_pgvector(vector: bytes) -> str:
    """pgvector text of an int8 vector (a stored one) or of a float32 one (a query's)."""
    if len(vector) == DIMS * 4:
        from array import array

        return "[" + ",".join(f"{v:.6f}" for v in array("f", vector)) + "]"
    return "[" + ",".join(str((b - 256 if b > 127 else b) / 127) for b in vector) + "]"


def add_vectors(home: Path, rng: random.Random) -> None:
    """A random int8 vector of the configured model for every memory of a store."""
    from ccmemory import db as database, embeddings, paths

    store = database.connect(home / paths.DB_FILENAME)
    try:
        model = embeddings.model_number(store, embeddings.configured_spec().model_id)
        with store.transaction():
            for (seq,) in [(row["seq"],) for row in store.rows("SELECT seq FROM memories")]:
                store.execute("INSERT OR REPLACE INTO memory_embeddings(item_seq, model, vector, indexed) "
                              "VALUES (?, ?, ?, 0)", (seq, model, random_int8(rng)))
                store.execute("UPDATE memories SET needs_embedding = 0 WHERE seq = ?", (seq,))
    finally:
        store.close()


def timed_sync(machine: Any) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    done = machine.spawn("sync", "--json", timeout=3600)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return seconds, json.loads(done.stdout)


def fill_server(admin_url: str, owner: str, project: str, team_id: int, count: int, rng: random.Random,
                model: str) -> dict[str, float]:
    """``count`` more team rows of ``owner`` on the server, loaded as a restore would: the HNSW index dropped,
    ``COPY`` as the admin (the triggers give each row its change number), the index built again. Seconds of each.

    Inserting them one by one keeps the HNSW index up to date row by row: ~100 rows/s on this machine
    (random vectors), 15 minutes for 90k; the push figure above includes that cost.
    """
    import psycopg

    timings: dict[str, float] = {}
    with psycopg.connect(admin_url, autocommit=True) as conn:
        name, definition = conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'ccmemory' "
                                        "AND indexdef LIKE '%%hnsw%%'").fetchone()
        conn.execute(f"DROP INDEX ccmemory.{name}")
        started = time.perf_counter()
        with conn.cursor().copy("COPY ccmemory.memories (id, team_id, project, scope, owner, created_at, updated_at, "
                                "source, sector, content, embedding, embedding_model) FROM STDIN") as copy:
            for number in range(count):
                copy.write_row((uuid.uuid4().hex, team_id, project, "team", owner, "2026-11-01T00:00:00Z",
                                "2026-11-01T00:00:00Z", "manual", "semantic", sentence(rng, number),
                                as_pgvector(random_int8(rng)), model))
        timings["copy"] = time.perf_counter() - started
        started = time.perf_counter()
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute(definition)
        timings["index"] = time.perf_counter() - started
        conn.execute("ANALYZE ccmemory.memories")
    return timings


def p50(times: list[float]) -> float:
    return round(statistics.median(times) * 1000, 1)


def search_side_by_side(home: Path, project_dir: Path, url: str, queries: list[str]) -> dict[str, float]:
    """p50 (ms) of the same queries on B's local replica and through the server's search functions."""
    import os

    import psycopg

    from ccmemory import db as database, embeddings, paths, projects, search, vectors
    from ccmemory.team import server_search

    os.environ["CCMEMORY_HOME"] = str(home)
    vectors.keep_in_memory = True  # as the MCP server runs: the sign bits of the project held in memory
    store = database.connect(home / paths.DB_FILENAME, vectors=True)
    project_id = projects.project_id(store, project_dir, create=False)
    assert project_id is not None
    identity = store.scalar("SELECT identity FROM projects WHERE id = ?", (project_id,))
    embedder = embeddings.get_embedder()
    model = embeddings.configured_spec().model_id
    results: dict[str, list[float]] = {}

    def time_it(name: str, call: Any) -> None:
        for query in queries[:3]:
            call(query)  # warm: model loaded, vector index in memory, plans cached
        results[name] = []
        for query in queries:
            embedder._cache.clear()  # every query embedded, in both columns
            started = time.perf_counter()
            call(query)
            results[name].append(time.perf_counter() - started)

    for mode in ("keyword", "semantic", "hybrid"):
        time_it(f"local {mode}", lambda q, mode=mode: search.search_with_info(store, q, project_id=project_id,
                                                                               mode=mode, limit=10))
    with psycopg.connect(url, autocommit=True) as conn:
        team = conn.execute("SELECT name FROM ccmemory.teams").fetchone()[0]
        text_sql = "SELECT * FROM ccmemory.search_text(%s, %s, %s, 10)"
        vector_sql = "SELECT * FROM ccmemory.search_vector(%s, %s, %s::ccmemory.vector, %s, 10)"

        def server_text(q: str) -> Any:  # any of the query's words, as a search asks the server
            return conn.execute(text_sql, (team, identity, server_search.text_query(search.query_terms(q)))).fetchall()

        def server_text_every_word(q: str) -> Any:  # the query as typed: websearch_to_tsquery's AND (until 2026-11-28)
            return conn.execute(text_sql, (team, identity, q)).fetchall()

        def server_vector(q: str) -> Any:
            vector = as_pgvector(embedder.embed_query(q))
            return conn.execute(vector_sql, (team, identity, vector, model)).fetchall()

        fixed = {q: as_pgvector(embedder.embed_query(q)) for q in queries}
        time_it("server keyword (search_text)", server_text)
        time_it("server keyword, every word", server_text_every_word)
        time_it("server semantic (query embedded + search_vector)", server_vector)
        time_it("server search_vector alone (HNSW)", lambda q: conn.execute(vector_sql, (team, identity, fixed[q],
                                                                                       model)).fetchall())
        time_it("server hybrid (both functions)", lambda q: (server_text(q), server_vector(q)))
    store.close()
    return {name: p50(times) for name, times in results.items()}


def run(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    from ccmemory import embeddings

    from testing import postgres
    from testing.team import Machine, Server, make_origin

    rng = random.Random(11)
    cluster = postgres.start()
    try:
        server = Server(cluster)
        url = server.member("alice")
        origin = make_origin(folder / "origin")
        a, b = Machine(folder, "a", origin, url), Machine(folder, "b", origin, url)
        a.fill([sentence(rng, number) for number in range(args.push)])
        add_vectors(a.home, rng)
        b.fill(["warm-up"])
        push_seconds, pushed = timed_sync(a)
        pull_seconds, pulled = timed_sync(b)
        identity, team_id = server.rows("SELECT project, team_id FROM ccmemory.projects")[0]
        extra = max(0, args.team - args.push - 1)
        loaded = fill_server(server.admin.conninfo, server.roles["alice"], identity, team_id, extra, rng,
                             embeddings.configured_spec().model_id)
        big_pull_seconds, big_pulled = timed_sync(b)
        total = server.count()
        queries = [" ".join(rng.sample(year_of_use.WORDS, 2)) for _ in range(args.queries)]
        latencies = search_side_by_side(b.home, b.project, url, queries)
    finally:
        cluster.stop()
    return {"push": args.push, "pushed": pushed["pushed"], "push seconds": round(push_seconds, 1),
            "pulled": pulled["pulled"], "pull seconds": round(pull_seconds, 1),
            "copied to the server": extra, "copy seconds": round(loaded["copy"], 1),
            "index seconds": round(loaded["index"], 1),
            "big pull": big_pulled["pulled"], "big pull seconds": round(big_pull_seconds, 1),
            "server rows": total, "queries": len(queries), "p50 ms": latencies}


def report_text(result: dict[str, Any], args: argparse.Namespace) -> str:
    lat = result["p50 ms"]
    rows = [("keyword", lat["local keyword"], lat["server keyword (search_text)"]),
            ("semantic (query embedding included)", lat["local semantic"],
             lat["server semantic (query embedded + search_vector)"]),
            ("hybrid", lat["local hybrid"], lat["server hybrid (both functions)"])]
    table = ["| search p50 (ms) | local replica | through the server | server / local |", "|---|---:|---:|---:|"]
    table += [f"| {name} | {local} | {remote} | {remote / local:.2f} |" for name, local, remote in rows]
    return "\n".join([
        f"{report.shared_machine()}. Command: `python bench/bench_sync.py --push {args.push} --team {args.team} "
        f"--queries {args.queries} --write`",
        "",
        "A throwaway PostgreSQL 16.2 + pgvector 0.6 (pgserver wheel, `fsync=off`) on the same machine, reached over "
        "TCP on 127.0.0.1; each sync is a whole `ccmemory sync` process. Vectors are random 384-dimension int8 "
        "(search latency does not depend on what they mean; embedding 100k texts takes hours here); queries are "
        "embedded with the configured model in both columns (its query cache cleared before each).",
        "",
        f"- **push**: {result['pushed']:,} memories with vectors in {result['push seconds']} s "
        f"(**{result['pushed'] / result['push seconds']:,.0f} memories/s**)",
        f"- **pull** on a second machine: {result['pulled']:,} in {result['pull seconds']} s "
        f"(**{result['pulled'] / result['pull seconds']:,.0f} memories/s**)",
        f"- then {result['copied to the server']:,} more team rows loaded on the server as a restore would "
        f"(`COPY` as the admin in {result['copy seconds']} s with the HNSW index dropped, then `CREATE INDEX` in "
        f"{result['index seconds']} s: inserted one by one, each keeps the HNSW index up to date at ~100 rows/s "
        "here, which the push figure includes), and pulled by the second machine: "
        f"{result['big pull']:,} in {result['big pull seconds']} s "
        f"({result['big pull'] / max(result['big pull seconds'], 0.001):,.0f} memories/s); "
        f"{result['server rows']:,} rows on the server",
        "",
        f"Search with {result['server rows']:,} team memories, {result['queries']} queries, limit 10, warm: the local "
        "replica in process (`search_with_info`, as the MCP server runs it) vs the server's "
        "`ccmemory.search_text` / `ccmemory.search_vector` (HNSW) as the member over one open connection. "
        f"`search_vector` alone, query vector given: {lat['server search_vector alone (HNSW)']} ms. The server's "
        "keyword side asks for any of the query's words, as the local keyword side ranks them; asked for every "
        f"word (the query as typed, until 2026-11-28) it took {lat['server keyword, every word']} ms.",
        "",
        *table,
        "",
        "Read: a push is bounded by pgvector keeping the HNSW index up to date row by row (random vectors are its "
        "hard case; a one-off measurement on this machine inserted 142 rows/s with a vector and 3,300 without). "
        "Pulls are local SQLite writes. The queries here are two words of a 70-word vocabulary, each matching "
        "about a third of the rows, far heavier than those of [Search latency]"
        "(#search-latency-and-embedding-throughput): compare the columns, not the sections. Every client searches "
        "its replica; the server is asked only for a project trimmed to `sync.replica_max`, within 1.5 s.",
        "",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--push", type=int, default=10_000)
    parser.add_argument("--team", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--write", action="store_true", help="write the BENCHMARKS.md section")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ccm-bench-sync-") as folder:
        result = run(args, Path(folder))
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    text = report_text(result, args)
    print(text)
    if args.write:
        report.write_section("sync", "Team sync: throughput and search through the server", text)


if __name__ == "__main__":
    main()
