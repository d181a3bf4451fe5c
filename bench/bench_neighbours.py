"""Finding a memory's neighbours in its session where many sessions share one time; writes BENCHMARKS.md.

Run: python bench/bench_neighbours.py [--memories 100000] [--rounds 5] [--no-write]

Two throwaway stores of ``--memories`` memories in sessions of 50 (no vectors): in one every memory has the
same time (a chat imported with one date for many sessions), in the other they are 7 seconds apart and a third
of them belong to another session than their neighbours' (sessions interleaving, as two terminals in one
project do). Timed side by side in one process, alternating: the lookup before 2026-11-28
(:func:`old_neighbour_sql`, copied here on purpose to time it beside the new one), and
:func:`ccmemory.sessions.neighbour_sql`, for the memories before and after turns in the middle and at both
ends of sessions; then keyword search, whose neighbour lending makes these lookups, with either.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "src"))

from report import shared_machine, write_section  # noqa: E402

from ccmemory import db as database, search, sessions  # noqa: E402

SESSION_SIZE = 50
QUERIES = ["turn about topic 5", "what did speaker0 say about topic 42", "topic 17 turn", "speaker1 topic 88"]


def old_neighbour_sql(column: str, *, before: bool, filters: str = "",
                      params: tuple[object, ...] = ()) -> tuple[str, tuple[object, ...]]:
    """The lookup as it was before 2026-11-28: one seek in time order, every tie of other sessions read."""
    order, bound, shift, desc = ("<", ">=", "-", " DESC") if before else (">", "<=", "+", "")
    return (f"(SELECT n.{column} FROM memories n WHERE n.project_id = m.project_id AND n.session_id = m.session_id "
            f"AND n.is_deleted = 0{filters} AND (n.created_at, n.seq) {order} (m.created_at, m.seq) "
            f"AND n.created_at {bound} strftime('%Y-%m-%dT%H:%M:%fZ', julianday(m.created_at) {shift} "
            f"{sessions.NEIGHBOUR_WINDOW_DAYS!r}) ORDER BY n.created_at{desc}, n.seq{desc} LIMIT 1)", tuple(params))


def build(path: Path, size: int, *, tied: bool) -> database.Database:
    db = database.connect(path)
    start = datetime.datetime(2025, 1, 1)
    with db.transaction():
        db.execute("INSERT INTO projects(path, name, created_at) VALUES ('/bench', 'bench', '2025-01-01')")
        sessions_count = size // SESSION_SIZE + 8
        for number in range(sessions_count):
            db.execute("INSERT INTO sessions(id, project_id, started_at) VALUES (?, 1, '2025-01-01')", (f"s{number}",))
        for seq in range(1, size + 1):
            session = seq // SESSION_SIZE if tied or seq % 3 else (seq // SESSION_SIZE + 7) % sessions_count
            when = start if tied else start + datetime.timedelta(seconds=7 * seq)
            db.execute("INSERT INTO memories(seq, id, project_id, session_id, content, sector, tier, created_at, "
                       "updated_at, source, needs_embedding) VALUES (?, ?, 1, ?, ?, 'episodic', 'project', ?, ?, "
                       "'manual', 0)", (seq, f"m-{seq:08d}", f"s{session}",
                                        f"Speaker{seq % 2}: turn {seq} about topic {seq % 97}",
                                        when.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "2025-01-01"))
    return db


def lookup_ms(db: database.Database, sql: str, params: tuple[object, ...], seqs: list[int], rounds: int) -> float:
    """Mean time of one lookup (both directions), best of ``rounds``."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        for seq in seqs:
            db.one(f"SELECT {sql} FROM memories m WHERE m.seq = ?", (*params, seq))
        best = min(best, (time.perf_counter() - started) / len(seqs))
    return best * 1000


def search_ms(db: database.Database, lookup: Callable[..., tuple[str, tuple[object, ...]]], rounds: int) -> float:
    """Median over :data:`QUERIES` of the best keyword search time, with ``lookup`` as the neighbour lookup."""
    product = sessions.neighbour_sql
    sessions.neighbour_sql = lookup  # type: ignore[assignment]
    try:
        times = []
        for query in QUERIES:
            best = float("inf")
            for _ in range(rounds):
                started = time.perf_counter()
                search.search(db, query, project_id=1, mode="keyword", limit=10, track=False)
                best = min(best, time.perf_counter() - started)
            times.append(best * 1000)
    finally:
        sessions.neighbour_sql = product
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    options = parser.parse_args()
    size = options.memories
    middle = [size // 2, size // 3 + 1, size - 10, 1234]
    ends = [SESSION_SIZE - 1, SESSION_SIZE, 2 * SESSION_SIZE - 1, 2 * SESSION_SIZE]
    rows = []
    with tempfile.TemporaryDirectory(prefix="ccmemory-bench-neighbours-") as folder:
        for tied, label in ((True, "every memory at one time"), (False, "7 s apart, a third in other sessions")):
            db = build(Path(folder) / f"{tied}.db", size, tied=tied)
            for where, seqs in (("middle of a session", middle), ("first and last of a session", ends)):
                old_times, new_times = [], []
                for before in (True, False):
                    for _ in range(2):  # alternate, so load hits both alike
                        old_times.append(lookup_ms(db, *old_neighbour_sql("seq", before=before), seqs,
                                                   options.rounds))
                        new_times.append(lookup_ms(db, *sessions.neighbour_sql("seq", before=before), seqs,
                                                   options.rounds))
                old, new = statistics.mean(old_times), statistics.mean(new_times)
                rows.append(f"| {label} | {where} | {old:.3f} ms | {new:.3f} ms | {old / new:.1f}× |")
            old, new = search_ms(db, old_neighbour_sql, options.rounds), search_ms(db, sessions.neighbour_sql,
                                                                                   options.rounds)
            rows.append(f"| {label} | keyword search (its neighbour lending), p50 of {len(QUERIES)} questions | "
                        f"{old:.1f} ms | {new:.1f} ms | {old / new:.1f}× |")
            db.close()
    body = "\n".join([
        f"{shared_machine()}. Command: `python bench/bench_neighbours.py --memories {size} --rounds {options.rounds}`.",
        "",
        f"{size:,} memories in sessions of {SESSION_SIZE}, no vectors. One lookup = the memory before or after "
        "one turn in its session (both directions averaged, the two ways alternated in one process).",
        "",
        "| store | turns | lookup before 2026-11-28 | `sessions.neighbour_sql` | faster |",
        "|---|---|---|---|---|",
        *rows,
    ])
    print(body)
    if not options.no_write:
        write_section("neighbours", "Neighbours in a session where many sessions share one time", body)


if __name__ == "__main__":
    main()
