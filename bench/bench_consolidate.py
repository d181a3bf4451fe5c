"""A simulated year, with and without consolidation, in one run: size, search p50, retrieval and the pass's time.

Run: python bench/bench_consolidate.py [--year-sessions 400 --year-calls 20000] [--data coderecall-dev.json.gz]
     [--ccmemory CMD] [--keep DIR] [--json OUT] [--write]

``bench/year_of_use.py`` generates about ten projects and ``--year-sessions`` sessions with about
``--year-calls`` tool calls spread over the twelve months before 2026-11-01, written as the transcripts
Claude Code keeps (``bench/transcripts.py``); one ``ccmemory backfill --json`` brings them into a store.
That store is copied (``VACUUM INTO``): one copy stays as it is, the other gets ``ccmemory consolidate
--all-projects --json`` (timed as a whole process), then both are compacted the same way (keyword
index merged, ``VACUUM``) and measured: database bytes (without vectors: embedding a year takes an hour
here, so vectors are counted apart, per live memory that search would embed), search p50 (keyword, 50
queries from the generated prompts' words, in-process), and the memories each holds. Goal: ≤ 0.6 MB
per 1,000 tool calls with vectors. The undo log of the pass is counted, and the size without it (what
the store comes to once the next pass, ``gc``, the budget or ``consolidation.undo_days`` drops it) shown
beside. The steady state of the daily background pass is measured too: a copy of the consolidated store
gets a second ``ccmemory consolidate`` right after the first, which drops the first pass's log and logs
only its own changes (a day later there would be a day's new calls to merge and the sessions turning
30 days old to fold: about 1/365 of the first pass's work). Its file is measured as the pass left it
(the dropped log's pages free inside it, not yet reused) and compacted like the others.

Retrieval: the ``coderecall-dev`` sessions, their times spread evenly over the same twelve months,
backfilled into a store of their own, copied, one copy consolidated the same way; then every question
is asked of both (``coderecall.evaluate``: keyword and hybrid, vectors by the built-in model behind the
bench cache). Hit@5 and MRR@10 (function level) are given twice for the consolidated store: strictly
(a hit is a memory captured from a gold tool call, or a gold session's summary: a merged-away or folded
gold call is a miss) and following the pass (a hit may also be the survivor a gold call was merged into,
or the summary of the session it was folded into: where the pass put what the gold call said). Goal:
within 0.02 of the unconsolidated store.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import os
import random
import shlex
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
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
#: The simulated year ends here (as ``year_of_use`` has it).
YEAR_END = datetime(2026, 11, 1, tzinfo=timezone.utc)
RETRIEVAL_MODES = ["keyword", "hybrid"]


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


def copy_store(source: Path, target: Path) -> None:
    """A copy of the store in ``source`` (a data dir) as ``target`` (a new data dir), rows and seqs kept."""
    target.mkdir()
    connection = sqlite3.connect(source / "ccmemory.db")
    connection.execute("VACUUM INTO ?", (str(target / "ccmemory.db"),))
    connection.close()


def consolidate(ccmemory: str, home: Path, cwd: Path) -> tuple[float, dict[str, Any]]:
    """``ccmemory consolidate --all-projects --json`` on the store in ``home``: its wall time and report."""
    env = coderecall.clean_env(CCMEMORY_HOME=str(home))
    started = time.perf_counter()
    done = subprocess.run([*shlex.split(ccmemory), "consolidate", "--all-projects", "--json"], env=env,
                          capture_output=True, text=True, cwd=str(cwd))
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return seconds, json.loads(done.stdout)


def where_it_went(home: Path) -> dict[str, Any]:
    """What a pass over the store in ``home`` will do to each memory (read only, the pass's own plan): the
    tool_use_id of the survivor each merged-away capture goes into, and the session whose summary each folded
    one goes into, by the capture's tool_use_id."""
    from ccmemory import consolidation, db as database

    os.environ["CCMEMORY_HOME"] = str(home)
    db = database.connect()
    by_seq = {row["seq"]: row for row in db.rows("SELECT seq, session_id, metadata FROM memories")}
    tool_use = {seq: json.loads(row["metadata"] or "{}").get("tool_use_id") for seq, row in by_seq.items()}
    found = consolidation.plan(db, project_id=None)
    merged = {tool_use[seq]: tool_use[merge.survivor] for merge in found.merges for seq in merge.replaced}
    folded = {tool_use[seq]: fold.session_id for fold in found.folds for seq in fold.folded}
    for survivor in {merge.survivor for merge in found.merges}:
        for fold in found.folds:
            if survivor in fold.folded:
                folded.update({gone: fold.session_id for gone, kept in merged.items() if kept == tool_use[survivor]})
    db.close()
    return {"merged": merged, "folded": folded}


def followed(data: dict[str, Any], moved: dict[str, Any]) -> dict[str, Any]:
    """The questions with each gold tool call also found where the pass put it (see the module docstring)."""
    data = copy.deepcopy(data)
    for question in data["questions"]:
        for key in ("gold", "file_gold"):
            gold = question[key]
            ids = list(gold["tool_use_ids"])
            gold["tool_use_ids"] = ids + [moved["merged"][i] for i in ids if i in moved["merged"]]
            gold["sessions"] = list(gold["sessions"]) + [moved["folded"][i] for i in ids if i in moved["folded"]]
    return data


def retrieval(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """Coderecall on its sessions spread over the year, without and with a pass (see the module docstring)."""
    with gzip.open(args.data, "rt", encoding="utf-8") as handle:
        data = json.load(handle)
    project = coderecall.git_project(folder / "project")
    config = folder / "claude"
    step = timedelta(days=365) / len(data["sessions"])
    for number, raw in enumerate(data["sessions"]):
        session = coderecall.substitute(raw, str(project), str(folder / "transcripts"))
        start = YEAR_END - timedelta(days=365) + number * step
        transcripts.write_session(transcripts.coderecall_session(session, str(project), start), config)
    plain, consolidated = folder / "plain", folder / "consolidated"
    coderecall.run_backfill(args.ccmemory, config, plain)
    copy_store(plain, consolidated)
    moved = where_it_went(consolidated)
    seconds, pass_report = consolidate(args.ccmemory, consolidated, folder)
    result: dict[str, Any] = {"pass seconds": round(seconds, 1), "pass": {k: pass_report[k] for k in (
        "merged_rows", "folded_rows", "thinned", "decayed")}, "moved": {k: len(v) for k, v in moved.items()}}
    for name, home, questions in (("without", plain, data), ("strict", consolidated, data),
                                  ("following the pass", consolidated, followed(data, moved))):
        summary = coderecall.evaluate(questions, project, home, RETRIEVAL_MODES)
        result[name] = {"memories": summary["memories"], **{
            mode: {"Hit@5": round(summary["results"][mode]["function"]["Hit@5"], 3),
                   "MRR@10": round(summary["results"][mode]["function"]["MRR@10"], 3),
                   "p50 ms": round(summary["latency"][mode]["p50_ms"], 1)} for mode in RETRIEVAL_MODES}}
    return result


def run(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    plan = year_of_use.generate(folder / "projects", sessions=args.year_sessions, calls=args.year_calls)
    config = folder / "claude"
    for session in plan.sessions:
        transcripts.write_session(session, config, extra=True)
    calls = len(list(year_of_use.all_calls(plan)))
    plain, consolidated = folder / "plain", folder / "consolidated"
    backfill_seconds, _report = coderecall.run_backfill(args.ccmemory, config, plain)
    copy_store(plain, consolidated)
    pass_seconds, report = consolidate(args.ccmemory, consolidated, folder)
    rng = random.Random(7)
    queries = [" ".join(rng.sample(year_of_use.WORDS, 2)) for _ in range(50)]
    result: dict[str, Any] = {"sessions": len(plan.sessions), "tool calls": calls,
                              "backfill seconds": round(backfill_seconds, 1), "pass seconds": round(pass_seconds, 1),
                              "pass": {k: report[k] for k in ("merged_groups", "merged_rows", "folded_rows",
                                                              "folded_sessions", "thinned", "decayed", "compacted")}}
    for name, home in (("without", plain), ("with", consolidated)):
        size = compact(home / "ccmemory.db")
        memories = live_memories(home / "ccmemory.db")
        embedded = sum(n for kind, n in memories.items() if kind in ("capture", "summary", "manual"))
        result[name] = {"database bytes": size, "memories": memories, "vectors bytes": embedded * VECTOR_BYTES,
                        "MB per 1,000 calls with vectors": round((size + embedded * VECTOR_BYTES) / 1e6 / calls * 1000,
                                                                 3),
                        "search p50 ms": round(search_p50(home, queries), 1)}
    without_log = folder / "consolidated-no-undo"
    copy_store(consolidated, without_log)
    connection = sqlite3.connect(without_log / "ccmemory.db")
    connection.execute("DELETE FROM consolidation_undo")
    connection.commit()
    connection.close()
    size = compact(without_log / "ccmemory.db")
    result["with, undo log dropped"] = {
        "database bytes": size, "MB per 1,000 calls with vectors": round(
            (size + result["with"]["vectors bytes"]) / 1e6 / calls * 1000, 3)}
    steady = folder / "consolidated-steady"
    copy_store(consolidated, steady)
    steady_seconds, steady_report = consolidate(args.ccmemory, steady, folder)
    on_disk = file_bytes(steady / "ccmemory.db")
    size = compact(steady / "ccmemory.db")
    steady_memories = live_memories(steady / "ccmemory.db")
    result["steady state, a second pass"] = {
        "pass seconds": round(steady_seconds, 1), "pass": {k: steady_report[k] for k in (
            "merged_rows", "folded_rows", "thinned", "decayed", "compacted")},
        "undo log bytes": steady_memories["undo log bytes"], "database bytes as left": on_disk,
        "database bytes": size, "MB per 1,000 calls with vectors": round(
            (size + result["with"]["vectors bytes"]) / 1e6 / calls * 1000, 3),
        "MB per 1,000 calls with vectors, as left": round(
            (on_disk + result["with"]["vectors bytes"]) / 1e6 / calls * 1000, 3)}
    if args.data:
        result["retrieval"] = retrieval(args, folder / "coderecall")
    return result


def file_bytes(path: Path) -> int:
    """The database's bytes on disk after a checkpoint, without compacting (free pages counted)."""
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if not p.name.endswith(".bak"))


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
    dropped = result["with, undo log dropped"]
    steady = result["steady state, a second pass"]
    rows[2] = ("MB per 1,000 tool calls with vectors (goal ≤ 0.6), after one pass over the year, its undo log kept",
               str(without["MB per 1,000 calls with vectors"]), str(with_["MB per 1,000 calls with vectors"]), "")
    rows[3:3] = [("… steady state: a second pass right after (the first's log dropped, its own kept), compacted", "",
                  str(steady["MB per 1,000 calls with vectors"]), ""),
                 ("… the same, as that pass left the file (dropped log's pages free, not yet reused)", "",
                  str(steady["MB per 1,000 calls with vectors, as left"]), ""),
                 ("… no undo log at all (next pass, gc, budget, undo_days)", "",
                  str(dropped["MB per 1,000 calls with vectors"]), "")]
    table = ["| | without | with consolidation | ratio |", "|---|---|---|---|"]
    table += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    return "\n".join([
        f"{report.shared_machine()}. Command: `python bench/bench_consolidate.py --year-sessions {args.year_sessions} "
        f"--year-calls {args.year_calls}{' --data ' + str(args.data) if args.data else ''} --write`",
        "",
        f"{result['sessions']} generated sessions ({result['tool calls']} tool calls over twelve months, "
        f"`bench/year_of_use.py`) backfilled in {result['backfill seconds']} s, then copied; one copy consolidated "
        f"by `ccmemory consolidate --all-projects` in **{result['pass seconds']} s** (whole process): "
        f"{json.dumps(result['pass'])}. Both compacted the same way before measuring. Vectors are not embedded "
        f"(an hour for a year here): {VECTOR_BYTES} bytes per live memory, counted apart.",
        "",
        *table,
        "",
        f"Steady state: the second pass took {steady['pass seconds']} s ({json.dumps(steady['pass'])}); its undo "
        f"log {steady['undo log bytes']} bytes (the first pass's: {with_['memories']['undo log bytes']}).",
        "",
        f"Memories without: {json.dumps(without['memories'])}; with: {json.dumps(with_['memories'])}.",
        "",
        *retrieval_text(result.get("retrieval")),
    ])


def retrieval_text(found: dict[str, Any] | None) -> list[str]:
    if not found:
        return []
    table = ["| coderecall, function level | without | with, strict | with, following the pass | largest drop |",
             "|---|---|---|---|---|"]
    for mode in RETRIEVAL_MODES:
        for metric in ("Hit@5", "MRR@10", "p50 ms"):
            values = [found[name][mode][metric] for name in ("without", "strict", "following the pass")]
            drop = f"{values[0] - min(values[1:]):.3f}" if metric != "p50 ms" else ""
            table.append(f"| {mode} {metric} | " + " | ".join(str(v) for v in values) + f" | {drop} |")
    return [f"Retrieval: the 200 coderecall-dev sessions spread over the same twelve months, backfilled, copied, "
            f"one copy consolidated in {found['pass seconds']} s ({json.dumps(found['pass'])}; calls merged into a "
            f"survivor or folded into a summary: {json.dumps(found['moved'])}); memories {found['without']['memories']} -> "
            f"{found['strict']['memories']}. Goal: within 0.02.", "", *table, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--year-sessions", type=int, default=400)
    parser.add_argument("--year-calls", type=int, default=20_000)
    parser.add_argument("--data", type=Path, help="coderecall-dev.json.gz: add the retrieval check")
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
