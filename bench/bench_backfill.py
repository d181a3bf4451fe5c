"""Backfill of past Claude Code sessions: throughput against hook replay, a year of heavy use, and retrieval.

Run: python bench/bench_backfill.py --data ../shared/bench-data/coderecall-dev.json.gz
     [--part throughput,year,retrieval] [--sessions 200] [--year-sessions 2000 --year-calls 100000]
     [--no-year-embed] [--ccmemory CMD] [--hooks PATH] [--keep DIR] [--json OUT] [--write]

``throughput``: the sessions of ``coderecall-dev.json.gz`` (the first ``--sessions``) go into two
fresh stores in one run: once replayed event by event through hook processes, as
``bench/coderecall.py`` does (``python3 -S hooks/run.py <event>``, payload on stdin, each finished
before the next), and once written as the transcripts Claude Code keeps (``bench/transcripts.py``,
from the same payloads) and brought in by one ``ccmemory backfill --json`` process. Both are whole
wall times (writing the transcripts is timed apart: Claude Code wrote them). The two stores are then
compared memory by memory (keyed by session and tool-use id): content, files, tier, salience,
category, metadata. Goal: backfill ≥ 20× faster.

``year``: ``bench/year_of_use.py`` generates about ten projects and ``--year-sessions`` sessions with
about ``--year-calls`` tool calls over a year, written as transcripts (with the bookkeeping lines
Claude Code adds and subagents' own files); one ``ccmemory backfill --json`` brings them into a fresh
store (goal ≤ 5 minutes), then ``ccmemory embed`` embeds the backlog, timed apart.

``retrieval``: coderecall's figures (``bench/coderecall.py``'s scoring, all modes) on the backfilled
store against the hook-replayed one (the stores of ``throughput`` when it ran in the same call);
goal: every figure within 0.01.

``--ccmemory`` names the command to run (default: this interpreter's ``-m ccmemory``); ``--hooks`` the
``hooks/run.py`` to replay through (default: this repository's), so both sides can come from another
checkout. ``--write`` writes BENCHMARKS.md's section with the machine and the command.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import coderecall  # noqa: E402
import transcripts  # noqa: E402
import year_of_use  # noqa: E402
from report import shared_machine, write_section  # noqa: E402

PARTS = ("throughput", "year", "retrieval")
COMPARED = ("content", "files", "tier", "salience", "category", "sector", "importance", "tags")
FIGURES = ("Hit@1", "Hit@5", "Hit@10", "session Hit@5", "MRR@10")
GOAL_RATIO = 20.0
GOAL_YEAR_SECONDS = 300.0


def store_rows(home: Path) -> list[dict[str, Any]]:
    """Every live memory of the store in ``home``, with its metadata parsed."""
    db = sqlite3.connect(f"file:{home / 'ccmemory.db'}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    try:
        rows = [dict(row) for row in db.execute("SELECT * FROM memories WHERE is_deleted = 0")]
    finally:
        db.close()
    for row in rows:
        row["metadata"] = json.loads(row["metadata"] or "{}")
    return rows


def counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    found: dict[str, int] = {}
    for row in rows:
        found[row["source"]] = found.get(row["source"], 0) + 1
    return dict(sorted(found.items()))


def memory_key(row: dict[str, Any]) -> tuple[str, str, str]:
    """A memory's identity across two stores: its session, its source, and the tool call it came from (or, for
    a memory that stands for no one call, its category and tier)."""
    call = row["metadata"].get("tool_use_id") or row.get("dedupe_key")
    return (row["session_id"] or "", row["source"], call or f"{row['category']}/{row['tier']}")


def compare(replayed: list[dict[str, Any]], backfilled: list[dict[str, Any]]) -> dict[str, Any]:
    """Memory by memory: how many are in both, only in one, and which fields differ (with one example each)."""
    left = {memory_key(row): row for row in replayed}
    right = {memory_key(row): row for row in backfilled}
    both = left.keys() & right.keys()
    differing: dict[str, dict[str, Any]] = {}
    identical = 0

    def value(row: dict[str, Any], name: str) -> Any:
        field = row.get(name)
        return field if isinstance(field, str) else json.dumps(field, sort_keys=True)

    for key in sorted(both):
        fields = [name for name in (*COMPARED, "metadata") if value(left[key], name) != value(right[key], name)]
        identical += not fields
        for name in fields:
            entry = differing.setdefault(name, {"memories": 0, "example": None})
            entry["memories"] += 1
            if entry["example"] is None:
                entry["example"] = {"key": list(key), "hook replay": _short(value(left[key], name)),
                                    "backfill": _short(value(right[key], name))}
    return {"in both": len(both), "identical": identical,
            "only hook replay": sorted(":".join(key) for key in left.keys() - right.keys())[:20],
            "only hook replay count": len(left.keys() - right.keys()),
            "only backfill": sorted(":".join(key) for key in right.keys() - left.keys())[:20],
            "only backfill count": len(right.keys() - left.keys()),
            "differing fields": differing}


def _short(text: str) -> str:
    return text if len(text) <= 300 else text[:300] + "…"


def times(replayed: list[dict[str, Any]], backfilled: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The span of ``created_at`` in each store: hook replay stamps the moment of the replay, backfill the
    transcript's own times."""
    def span(rows: list[dict[str, Any]]) -> list[str]:
        stamps = sorted(row["created_at"] for row in rows)
        return [stamps[0], stamps[-1]] if stamps else []
    return {"hook replay": span(replayed), "backfill": span(backfilled)}


def throughput(data: dict[str, Any], folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Hook replay and backfill of the same sessions into two fresh stores; their times, counts and differences.

    Both stores (and the third of :func:`retrieval`) hold the sessions of one project folder, as the same
    sessions would be: a memory's ``files`` are absolute paths, searched as words, so a project folder named
    otherwise in one store would change that store's keyword scores (BM25 weighs a text by its length).
    """
    hooks_folder, backfill_folder, project = folder / "hooks", folder / "backfill", folder / "project"
    print(f"hook replay of {len(data['sessions'])} sessions…", file=sys.stderr)
    started = time.perf_counter()
    _, hook_home = coderecall.replay(data, hooks_folder, args.hook_python, Path(args.hooks), project)
    replay_seconds = time.perf_counter() - started
    started = time.perf_counter()
    _, config = coderecall.write_transcripts(data, backfill_folder, project=project)
    write_seconds = time.perf_counter() - started
    home = backfill_folder / "home"
    print("backfill…", file=sys.stderr)
    backfill_seconds, report = coderecall.run_backfill(args.ccmemory, config, home)
    events = sum(len(session["events"]) for session in data["sessions"])
    replayed, backfilled = store_rows(hook_home), store_rows(home)
    again_seconds, again = coderecall.run_backfill(args.ccmemory, config, home)
    return {
        "sessions": len(data["sessions"]), "hook events": events,
        "transcript bytes": sum(path.stat().st_size for path in config.rglob("*.jsonl")),
        "hook replay seconds": round(replay_seconds, 2), "backfill seconds": round(backfill_seconds, 2),
        "transcripts written seconds": round(write_seconds, 2),
        "ratio": round(replay_seconds / backfill_seconds, 1),
        "hook replay memories": counts(replayed), "backfill memories": counts(backfilled),
        "backfill report": report, "second backfill seconds": round(again_seconds, 2),
        "second backfill added": len(store_rows(home)) - len(backfilled), "second backfill report": again,
        "comparison": compare(replayed, backfilled),
        "times": times(replayed, backfilled),
        "stores": {"hook replay": [str(project), str(hook_home)], "backfill": [str(project), str(home)]},
    }


def year(folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Generate a year of use, write it as transcripts, backfill it, then embed the backlog."""
    started = time.perf_counter()
    plan = year_of_use.generate(folder / "projects", sessions=args.year_sessions, calls=args.year_calls)
    config = folder / "claude"
    files = 0
    for session in plan.sessions:
        files += len(transcripts.write_session(session, config, extra=True))
    write_seconds = time.perf_counter() - started
    calls = list(year_of_use.all_calls(plan))
    home = folder / "home"
    print(f"year: {len(plan.sessions)} sessions, {len(calls)} calls written in {write_seconds:.0f} s; backfill…",
          file=sys.stderr)
    backfill_seconds, report = coderecall.run_backfill(args.ccmemory, config, home)
    rows = store_rows(home)
    result: dict[str, Any] = {
        "projects": len({session.cwd for session in plan.sessions}), "sessions": len(plan.sessions),
        "transcript files": files, "tool calls": len(calls),
        "failed calls": sum(call.error is not None for call in calls),
        "subagent calls": len(calls) - sum(len(turn.calls) for session in plan.sessions for turn in session.turns),
        "first session": transcripts.iso(plan.sessions[0].start), "last session": transcripts.iso(plan.sessions[-1].start),
        "transcript bytes": sum(path.stat().st_size for path in config.rglob("*.jsonl")),
        "transcripts written seconds": round(write_seconds, 1), "backfill seconds": round(backfill_seconds, 1),
        "memories": counts(rows), "backfill report": report,
        "database bytes": sum(path.stat().st_size for path in home.glob("ccmemory.db*")),
    }
    if not args.no_year_embed:
        print(f"year: backfilled in {backfill_seconds:.0f} s; embedding {len(rows)} memories…", file=sys.stderr)
        env = coderecall.clean_env(CCMEMORY_HOME=str(home))
        started = time.perf_counter()
        embedded = subprocess.run([*shlex.split(args.ccmemory), "embed"], env=env, capture_output=True, text=True)
        result["embed seconds"] = round(time.perf_counter() - started, 1)
        result["embed output"] = (embedded.stdout.strip() or embedded.stderr.strip())[-500:]
        if embedded.returncode != 0:
            result["embed exit"] = embedded.returncode
    return result


def retrieval(data: dict[str, Any], stores: dict[str, list[str]], folder: Path, args: argparse.Namespace
              ) -> dict[str, Any]:
    """coderecall's figures on each store, and the largest difference between each backfilled store and the
    hook-replayed one.

    Besides the store backfilled with the transcripts' own times, a third store is backfilled from the same
    transcripts dated from now on, a second per line, as a replay stamps them: what remains between it and the
    hook-replayed store is the backfill's, not the dates'.
    """
    dated = folder / "backfill-dated-now"
    project = Path(stores["hook replay"][0])
    _, config = coderecall.write_transcripts(data, dated, datetime.now(timezone.utc), project)
    coderecall.run_backfill(args.ccmemory, config, dated / "home")
    stores = dict(stores, **{"backfill dated now": [str(project), str(dated / "home")]})
    figures, rankings, rows = {}, {}, {}
    for name, (project_dir, home) in stores.items():
        print(f"retrieval on the {name} store…", file=sys.stderr)
        ranked_to = folder / f"rankings-{name.replace(' ', '-')}.json"
        figures[name] = coderecall.evaluate(data, Path(project_dir), Path(home), args.mode.split(","),
                                            no_cache=args.no_cache, rankings_to=str(ranked_to))
        rows[name] = store_rows(Path(home))
        rankings[name] = json.loads(ranked_to.read_text())["rankings"]
    base = figures["hook replay"]["results"]
    differences, largest = {}, {}
    for name in ("backfill", "backfill dated now"):
        other = figures[name]["results"]
        differences[name] = {f"{system} {level} {figure}": round(other[system][level][figure] -
                                                                 base[system][level][figure], 4)
                             for system in base for level in base[system] for figure in FIGURES}
        largest[name] = max(abs(value) for value in differences[name].values())
    return {"figures": figures, "differences": differences, "largest difference": largest,
            "dated now comparison": compare(rows["hook replay"], rows["backfill dated now"]),
            "questions ranked otherwise": {name: ranked_otherwise(rankings["hook replay"], rows["hook replay"],
                                                                  rankings[name], rows[name])
                                           for name in ("backfill", "backfill dated now")},
            "questions": len(data["questions"]),
            "oldest first": {name: oldest_first(found) for name, found in rows.items()},
            "out of call order": {name: out_of_call_order(found) for name, found in rows.items()}}


def ranked_otherwise(base: dict[str, dict[str, list[str]]], base_rows: list[dict[str, Any]],
                     other: dict[str, dict[str, list[str]]], other_rows: list[dict[str, Any]]) -> dict[str, int]:
    """Per system, how many questions' top 10 differ between two stores (memories matched by :func:`memory_key`)."""
    def keys(found: list[dict[str, Any]]) -> dict[str, tuple[str, str, str]]:
        return {row["id"]: memory_key(row) for row in found}

    left, right = keys(base_rows), keys(other_rows)
    return {system: sum([left[i] for i in base[system][qid]] != [right[i] for i in other[system][qid]]
                        for qid in base[system]) for system in base}


def out_of_call_order(rows: list[dict[str, Any]]) -> int:
    """How many memories were stored after a later one of their session (``seq`` against ``created_at``).

    Live capture stores each call in a child process of its hook, off Claude Code's path, so two quick calls'
    children may write in the other order; ``created_at`` (when the payload arrived) keeps the call order.
    """
    last: dict[str, str] = {}
    count = 0
    for row in sorted(rows, key=lambda found: found["seq"]):
        session = row["session_id"] or ""
        count += row["created_at"] < last.get(session, "")
        last[session] = max(last.get(session, ""), row["created_at"])
    return count


def oldest_first(rows: list[dict[str, Any]]) -> bool:
    """Whether the store holds its sessions in the order they happened (as live capture stores them): search
    breaks ties between equal scores by storing order."""
    first_seq: dict[str, int] = {}
    first_time: dict[str, str] = {}
    for row in rows:
        if row["session_id"]:
            first_seq[row["session_id"]] = min(first_seq.get(row["session_id"], row["seq"]), row["seq"])
            first_time[row["session_id"]] = min(first_time.get(row["session_id"], row["created_at"]),
                                                row["created_at"])
    return sorted(first_seq, key=first_seq.__getitem__) == sorted(first_time, key=first_time.__getitem__)


def build_stores(data: dict[str, Any], folder: Path, args: argparse.Namespace) -> dict[str, list[str]]:
    """The two stores ``retrieval`` compares, when ``throughput`` did not build them in this run (one project
    folder for both, as there)."""
    project, home = coderecall.replay(data, folder / "hooks", args.hook_python, Path(args.hooks), folder / "project")
    _, config = coderecall.write_transcripts(data, folder / "backfill", project=project)
    coderecall.run_backfill(args.ccmemory, config, folder / "backfill" / "home")
    return {"hook replay": [str(project), str(home)], "backfill": [str(project), str(folder / "backfill" / "home")]}


def command_line(args: argparse.Namespace) -> str:
    words = ["python bench/bench_backfill.py", "--data", args.data, "--part", args.part]
    if args.sessions is not None:
        words += ["--sessions", str(args.sessions)]
    if "year" in args.part:
        words += ["--year-sessions", str(args.year_sessions), "--year-calls", str(args.year_calls)]
    if args.no_year_embed:
        words.append("--no-year-embed")
    return " ".join(words)


def report(results: dict[str, Any], args: argparse.Namespace) -> str:
    lines = [shared_machine(), f"Command: `{command_line(args)}`", ""]
    if "throughput" in results:
        t = results["throughput"]
        comparison = t["comparison"]
        lines += [
            f"**Throughput.** {t['sessions']} sessions of coderecall-dev ({t['hook events']} hook events; "
            f"{t['transcript bytes'] / 1e6:.1f} MB of transcripts) into two fresh stores in one run:",
            "",
            "| how | wall time (s) | memories |",
            "|---|---:|---|",
            f"| hook replay: a `python3 -S hooks/run.py` process per event | {t['hook replay seconds']:.1f} | "
            f"{_counts(t['hook replay memories'])} |",
            f"| `ccmemory backfill --json`, one process | {t['backfill seconds']:.2f} | "
            f"{_counts(t['backfill memories'])} |",
            "",
            f"Backfill is **{t['ratio']:.1f}×** faster than hook replay (goal ≥ {GOAL_RATIO:.0f}×). A second backfill "
            f"took {t['second backfill seconds']:.2f} s and added {t['second backfill added']} memories. Memory by "
            f"memory: {comparison['in both']} in both stores, {comparison['identical']} identical in "
            f"{', '.join(COMPARED)} and metadata; {comparison['only hook replay count']} only in the hook-replayed "
            f"store, {comparison['only backfill count']} only in the backfilled one.",
        ]
        for name, entry in comparison["differing fields"].items():
            lines.append(f"- `{name}` differs in {entry['memories']} memories, e.g. {json.dumps(entry['example'])}")
        spans = t["times"]
        lines += [f"- times: the hook-replayed memories are stamped when the replay ran ({' to '.join(spans['hook replay'])}"
                  f"), the backfilled ones with their transcript's times ({' to '.join(spans['backfill'])})", "",
                  "What a transcript carries less than the hook payloads: each call's `duration_ms`, `effort`, its own "
                  "`permission_mode` (the transcript has it on the prompt's line) and `hook_event_name` (a failure is "
                  "the `tool_result`'s `is_error` and text instead of PostToolUseFailure's `error`), and the moment "
                  "the hook ran: they describe the hook's call, and a transcript records the conversation (what "
                  "was asked, called and answered, when each line was written). Capture stores none of the first "
                  "four; in place of the moment, a backfilled memory has the time its transcript line was written, "
                  "so a session summary's first line names the session's own day.", ""]
    if "year" in results:
        y = results["year"]
        embed = (f"; `ccmemory embed` then took **{y['embed seconds']:.0f} s** for the backlog"
                 if "embed seconds" in y else "; embedding not run (`--no-year-embed`)")
        lines += [
            f"**A year of heavy use.** {y['sessions']} generated sessions in {y['projects']} projects "
            f"({y['first session'][:10]} to {y['last session'][:10]}), {y['tool calls']} tool calls "
            f"({y['failed calls']} failed, {y['subagent calls']} in subagents), {y['transcript files']} transcript "
            f"files, {y['transcript bytes'] / 1e6:.0f} MB. `ccmemory backfill --json` brought them in in "
            f"**{y['backfill seconds']:.0f} s** (goal ≤ {GOAL_YEAR_SECONDS:.0f} s) before embedding{embed}. "
            f"Memories: {_counts(y['memories'])}; database {y['database bytes'] / 1e6:.0f} MB.",
            "",
        ]
    if "retrieval" in results:
        r = results["retrieval"]
        lines += ["**Retrieval.** coderecall's function-level figures (file-level in the JSON) on each store:", "",
                  "| store | system | " + " | ".join(FIGURES) + " |", "|---|---|" + "---:|" * len(FIGURES)]
        for store, summary in r["figures"].items():
            for system, result in summary["results"].items():
                lines.append(f"| {store} | {system} | " +
                             " | ".join(f"{result['function'][figure]:.3f}" for figure in FIGURES) + " |")
        dated, otherwise, asked = r["dated now comparison"], r["questions ranked otherwise"], r["questions"]
        out_of_order = r["out of call order"]

        def ranked(name: str) -> str:
            return ", ".join(f"{system} {count}" for system, count in otherwise[name].items())

        worst = sorted(r["differences"]["backfill"].items(), key=lambda item: -abs(item[1]))[:3]
        lines += [
            "", "All three stores hold the sessions of one project folder: a memory's `files` are absolute paths "
            "and are searched as words, so a folder named otherwise in one store changes its keyword scores (BM25 "
            "weighs a text by its length).", "",
            "Largest difference from the hook-replayed store over every figure, system and gold level (goal "
            f"≤ 0.01): **{r['largest difference']['backfill dated now']:.3f}** backfilled from the transcripts "
            "dated from now on, a second per line, as the replay stamps its memories (there "
            f"{dated['identical']} of {dated['in both']} memories are identical to the replayed ones, "
            f"{dated['only hook replay count'] + dated['only backfill count']} are in one store only; questions "
            f"of {asked} whose top 10 differ: {ranked('backfill dated now')}); "
            f"**{r['largest difference']['backfill']:.3f}** backfilled with the transcripts' own times "
            f"({', '.join(f'{name} {value:+.3f}' for name, value in worst)}; questions whose top 10 differ: "
            f"{ranked('backfill')}).", "",
            "What the own times change: a session summary's first line names the session's day (`Session summary "
            "(2018-08-27; …`) where the replay's names the day it ran. Rightly so: live capture "
            "in those days would have written their dates too. Those summaries' texts and vectors differ, so "
            "semantic and hybrid rankings move where a summary is near the top; keyword and BM25 do not.", "",
            "Storing order: memories stored after a later call of their session: hook replay "
            f"{out_of_order['hook replay']}, backfills {out_of_order['backfill']} and "
            f"{out_of_order['backfill dated now']}. Live capture stores each call in "
            "a child of its hook process, off Claude Code's path, so two quick calls' children can write in the "
            "other order (their `created_at`, when the payload arrived, keeps the call order); a backfill stores "
            "in call order. Search breaks equal scores by storing order, so such a pair could swap places between "
            "the stores if they scored the same" + (
                "; here no ranking moved for it." if not any(otherwise["backfill dated now"].values()) else "."),
        ]
        if not r["oldest first"]["backfill"]:
            lines.append("The backfill stored the sessions in another order than they happened (the replay, like "
                         "live capture, stores them oldest first).")
    return "\n".join(lines)


def _counts(found: dict[str, int]) -> str:
    return ", ".join(f"{count} {source}" for source, count in found.items()) or "none"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="coderecall-dev.json.gz")
    parser.add_argument("--part", default=",".join(PARTS), help="throughput, year, retrieval (comma-separated)")
    parser.add_argument("--sessions", type=int, help="only the first N coderecall sessions (default: all 200)")
    parser.add_argument("--year-sessions", type=int, default=2000)
    parser.add_argument("--year-calls", type=int, default=100_000)
    parser.add_argument("--no-year-embed", action="store_true", help="skip embedding the year's backlog")
    parser.add_argument("--mode", default="keyword,semantic,hybrid", help="search modes scored in retrieval")
    parser.add_argument("--no-cache", action="store_true", help="embed without the benchmark's vector cache")
    parser.add_argument("--ccmemory", default=f"{sys.executable} -m ccmemory",
                        help="the ccmemory command to run (default: this interpreter's)")
    parser.add_argument("--hooks", default=str(REPO / "hooks" / "run.py"), help="the hooks/run.py to replay through")
    parser.add_argument("--hook-python", default="/usr/bin/python3" if Path("/usr/bin/python3").exists()
                        else sys.executable, help="the python3 that runs the hooks (as Claude Code would)")
    parser.add_argument("--keep", help="build everything in this directory and keep it (default: a temporary one)")
    parser.add_argument("--json", help="write every result here")
    parser.add_argument("--write", action="store_true", help="write BENCHMARKS.md's backfill section")
    args = parser.parse_args()
    parts = args.part.split(",")
    unknown = [part for part in parts if part not in PARTS]
    if unknown:
        parser.error(f"unknown part {', '.join(unknown)}; use {', '.join(PARTS)}")
    with gzip.open(args.data, "rt", encoding="utf-8") as handle:
        data = json.load(handle)
    if args.sessions is not None:
        data["sessions"] = data["sessions"][:args.sessions]
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ccmemory-bench-backfill-"))
    if folder.exists() and any(folder.iterdir()):
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"load average at start": os.getloadavg()[0]}
    try:
        if "throughput" in parts:
            results["throughput"] = throughput(data, folder / "coderecall", args)
        if "retrieval" in parts:
            stores = results["throughput"]["stores"] if "throughput" in results else \
                build_stores(data, folder / "coderecall", args)
            results["retrieval"] = retrieval(data, stores, folder / "coderecall", args)
        if "year" in parts:
            results["year"] = year(folder / "year", args)
    finally:
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1, default=str))
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    body = report(results, args)
    print(body)
    if args.write:
        write_section("backfill", "Backfill of past sessions", body)


if __name__ == "__main__":
    main()
