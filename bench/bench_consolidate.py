"""A simulated year, with and without consolidation, in one run: size, search p50 and the pass's time.

Run: python bench/bench_consolidate.py [--year-sessions 400 --year-calls 20000] [--ccmemory CMD] [--keep DIR]
     [--json OUT] [--write]

``bench/year_of_use.py`` generates about ten projects and ``--year-sessions`` sessions with about
``--year-calls`` tool calls spread over the twelve months before 2026-11-01, written as the transcripts
Claude Code keeps (``bench/transcripts.py``); one ``ccmemory backfill --json`` brings them into a store.
That store is copied (``VACUUM INTO``): one copy stays as it is, the other gets ``ccmemory consolidate
--all-projects --json`` (timed as a whole process), then both are compacted the same way (keyword
index merged, ``VACUUM``) and measured: database bytes (without vectors: embedding a year takes an hour
here, so vectors are counted apart, per live memory that search would embed), search p50 (keyword, 50
queries from the generated prompts' words, in-process), and the memories each holds. Goal: ≤ 0.6 MB
per 1,000 tool calls with vectors.
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import coderecall  # noqa: E402
import report  # noqa: E402
import transcripts  # noqa: E402
import year_of_use  # noqa: E402

#: Bytes one vector costs: 384 int8 values, its 48 sign bits in the vector index, row overhead.
VECTOR_BYTES = 384 + 48 + 24


def compact(path: Path) -> int:
    """Merge the keyword index and VACUUM, as a pass does; the file's bytes after."""
    connection = sqlite3.connect(path)
    connection.execute("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")
    connection.commit()
    connection.execute("VACUUM")
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if not p.name.endswith(".bak"))


def live_memories(path: Path) -> dict[str, int]:
    connection = sqlite3.connect(path)
    found = dict(connection.execute(
        "SELECT source || CASE WHEN valid_until IS NULL THEN '' ELSE ' (superseded stub)' END, COUNT(*) "
        "FROM memories WHERE is_deleted = 0 GROUP BY 1").fetchall())
    found["undo log bytes"] = connection.execute(
        "SELECT COALESCE(SUM(length(data)), 0) FROM consolidation_undo").fetchone()[0]
    connection.close()
    return found


def search_p50(home: Path, queries: list[str]) -> float:
    """Keyword search p50 in ms over every project's store (in a child process with that home)."""
    code = (
        "import json, statistics, sys, time\n"
        "from ccmemory import db as database, search\n"
        "d = database.connect()\n"
        "projects = [r['id'] for r in d.rows('SELECT id FROM projects')]\n"
        "times = []\n"
        "for i, q in enumerate(json.loads(sys.argv[1])):\n"
        "    t = time.perf_counter()\n"
        "    search.search_with_info(d, q, project_id=projects[i % len(projects)], mode='keyword', limit=10)\n"
        "    times.append((time.perf_counter() - t) * 1000)\n"
        "print(statistics.median(times))\n")
    env = coderecall.clean_env(CCMEMORY_HOME=str(home))
    done = subprocess.run([sys.executable, "-c", code, json.dumps(queries)], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    return float(done.stdout.strip())


def run(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    plan = year_of_use.generate(folder / "projects", sessions=args.year_sessions, calls=args.year_calls)
    config = folder / "claude"
    for session in plan.sessions:
        transcripts.write_session(session, config, extra=True)
    calls = len(list(year_of_use.all_calls(plan)))
    plain, consolidated = folder / "plain", folder / "consolidated"
    backfill_seconds, _report = coderecall.run_backfill(args.ccmemory, config, plain)
    consolidated.mkdir()
    source = sqlite3.connect(plain / "ccmemory.db")
    source.execute("VACUUM INTO ?", (str(consolidated / "ccmemory.db"),))
    source.close()
    env = coderecall.clean_env(CCMEMORY_HOME=str(consolidated))
    started = time.perf_counter()
    done = subprocess.run([*shlex.split(args.ccmemory), "consolidate", "--all-projects", "--json"], env=env,
                          capture_output=True, text=True, cwd=str(folder))
    pass_seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    report = json.loads(done.stdout)
    rng = random.Random(7)
    queries = [" ".join(rng.sample(year_of_use.WORDS, 2)) for _ in range(50)]
    result: dict[str, Any] = {"sessions": len(plan.sessions), "tool calls": calls,
                              "backfill seconds": round(backfill_seconds, 1), "pass seconds": round(pass_seconds, 1),
                              "pass": {k: report[k] for k in ("merged_groups", "merged_rows", "folded_rows",
                                                              "folded_sessions", "decayed")}}
    for name, home in (("without", plain), ("with", consolidated)):
        size = compact(home / "ccmemory.db")
        memories = live_memories(home / "ccmemory.db")
        embedded = sum(n for kind, n in memories.items() if kind in ("capture", "summary", "manual"))
        result[name] = {"database bytes": size, "memories": memories, "vectors bytes": embedded * VECTOR_BYTES,
                        "MB per 1,000 calls with vectors": round((size + embedded * VECTOR_BYTES) / 1e6 / calls * 1000,
                                                                 3),
                        "search p50 ms": round(search_p50(home, queries), 1)}
    return result


def report_text(result: dict[str, Any], args: argparse.Namespace) -> str:
    without, with_ = result["without"], result["with"]
    rows = [("database, without vectors (MB)", f"{without['database bytes'] / 1e6:.1f}",
             f"{with_['database bytes'] / 1e6:.1f}", f"{with_['database bytes'] / without['database bytes']:.2f}"),
            ("vectors, counted apart (MB)", f"{without['vectors bytes'] / 1e6:.1f}", f"{with_['vectors bytes'] / 1e6:.1f}",
             f"{with_['vectors bytes'] / max(without['vectors bytes'], 1):.2f}"),
            ("MB per 1,000 tool calls with vectors (goal ≤ 0.6)", str(without["MB per 1,000 calls with vectors"]),
             str(with_["MB per 1,000 calls with vectors"]), ""),
            ("keyword search p50 (ms)", str(without["search p50 ms"]), str(with_["search p50 ms"]),
             f"{with_['search p50 ms'] / without['search p50 ms']:.2f}")]
    table = ["| | without | with consolidation | ratio |", "|---|---|---|---|"]
    table += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    return "\n".join([
        f"{report.shared_machine()}. Command: `python bench/bench_consolidate.py --year-sessions {args.year_sessions} "
        f"--year-calls {args.year_calls} --write`",
        "",
        f"{result['sessions']} generated sessions ({result['tool calls']} tool calls over twelve months, "
        f"`bench/year_of_use.py`) backfilled in {result['backfill seconds']} s, then copied; one copy consolidated "
        f"by `ccmemory consolidate --all-projects` in **{result['pass seconds']} s** (whole process): "
        f"{json.dumps(result['pass'])}. Both compacted the same way before measuring. Vectors are not embedded "
        f"(an hour for a year here): {VECTOR_BYTES} bytes per live memory, counted apart.",
        "",
        *table,
        "",
        f"Memories without: {json.dumps(without['memories'])}; with: {json.dumps(with_['memories'])}.",
        "",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--year-sessions", type=int, default=400)
    parser.add_argument("--year-calls", type=int, default=20_000)
    parser.add_argument("--ccmemory", default=f"{shlex.quote(sys.executable)} -m ccmemory")
    parser.add_argument("--keep", type=Path)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        result = run(args, folder)
    text = report_text(result, args)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    if args.write:
        report.write_section("consolidate", "Consolidation over a simulated year", text)


if __name__ == "__main__":
    main()
