"""Coding-history recall: replay real sessions through the hooks, then ask later tasks' titles.

Run: python bench/coderecall.py --data ../shared/bench-data/coderecall-dev.json.gz [--mode keyword,semantic,hybrid]
     [--json OUT] [--replay-dir DIR [--reuse]] [--backfill [--ccmemory CMD]]

Follows ``../shared/README.md``: an empty git project P and a transcripts
directory T; placeholders replaced; each session's transcript written, then
every event run once, in order, through the real hook entry point
(``python3 -S hooks/run.py <event>`` as a subprocess, cwd P, the payload on
stdin, ``CLAUDE_PROJECT_DIR``/``CLAUDE_CODE_SESSION_ID``/``CLAUDECODE`` set, a
fresh data directory). Then the store is embedded as the MCP server would
(``embed_pending``) and every question's ``query`` is searched verbatim with
``search.search_with_info`` at limit 10. A memory is relevant when it was
captured from a gold ``tool_use_id``, or is the summary of a gold session.
Scores: Hit@1/5/10, MRR@10, session Hit@5, at function level (``gold``) and
file level (``file_gold``), beside plain FTS5 BM25 over the same memories in
the same run. ``--replay-dir`` keeps the replayed store; ``--reuse`` searches
an earlier replay there again (for search-only changes; hooks are not re-run).

``--backfill`` builds the store the other way, as a user installing ccmemory after these sessions
would: every session is written as the transcript Claude Code keeps
(``<config>/projects/<encoded P>/<session>.jsonl``, by :mod:`transcripts`, from the same
payloads), then ``ccmemory backfill`` (``--ccmemory`` names the command) runs once over them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ccmemory import db as database  # noqa: E402
from ccmemory import embeddings, memories, projects, search  # noqa: E402
import retrieval_cli  # noqa: E402
import transcripts  # noqa: E402
from metrics import first_rank, latency_summary, mean_scores, table  # noqa: E402

LIMIT = 10
HOOK_NAMES = {"SessionStart": "session_start", "PostToolUse": "post_tool_use", "PostToolUseFailure": "post_tool_use",
              "Stop": "stop", "SessionEnd": "session_end"}
COLUMNS = ["Hit@1", "Hit@5", "Hit@10", "session Hit@5", "MRR@10"]


def substitute(value: Any, project: str, transcripts: str) -> Any:
    """Replace a leading ``{PROJECT}`` / ``{TRANSCRIPTS}`` in every string of a JSON value."""
    if isinstance(value, str):
        if value.startswith("{PROJECT}"):
            return project + value[len("{PROJECT}"):]
        if value.startswith("{TRANSCRIPTS}"):
            return transcripts + value[len("{TRANSCRIPTS}"):]
        return value
    if isinstance(value, list):
        return [substitute(item, project, transcripts) for item in value]
    if isinstance(value, dict):
        return {key: substitute(item, project, transcripts) for key, item in value.items()}
    return value


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without what would point ccmemory elsewhere or switch it off, plus ``extra``."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("CLAUDE_PLUGIN_DATA", "CLAUDE_PLUGIN_ROOT", "CCMEMORY_DISABLE", "CCMEMORY_DEBUG", "PYTHONPATH",
                        "CLAUDE_CONFIG_DIR", "CLAUDE_PROJECT_DIR", "CLAUDECODE", "CLAUDE_CODE_SESSION_ID")}
    env.update(extra)
    return env


def git_project(path: Path) -> Path:
    """An empty git project at ``path`` (made when missing); returns it."""
    if not (path / ".git").exists():
        path.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def replay(data: dict[str, Any], folder: Path, python: str, hooks: Path = REPO / "hooks" / "run.py",
           project: Path | None = None) -> tuple[Path, Path]:
    """Run every session's events through hooks/run.py, in ``project`` (default: a new ``folder/project``), into
    the data dir ``folder/home``; returns (project dir, data dir)."""
    project, transcripts_dir, home = git_project(project or folder / "project"), folder / "transcripts", folder / "home"
    transcripts_dir.mkdir(parents=True)
    base_env = clean_env(CCMEMORY_HOME=str(home), CLAUDE_PROJECT_DIR=str(project), CLAUDECODE="1")
    started = time.perf_counter()
    for number, raw in enumerate(data["sessions"], 1):
        session = substitute(raw, str(project), str(transcripts_dir))
        with open(session["transcript_path"], "w", encoding="utf-8") as handle:
            for line in session["transcript"]:
                handle.write(json.dumps(line) + "\n")
        env = dict(base_env, CLAUDE_CODE_SESSION_ID=session["session_id"])
        for event in session["events"]:
            subprocess.run([python, "-S", str(hooks), HOOK_NAMES[event["hook"]]],
                           input=json.dumps(event["payload"]).encode(), cwd=project, env=env, check=True,
                           capture_output=True, timeout=60)
        if number % 25 == 0:
            print(f"replayed {number}/{len(data['sessions'])} sessions "
                  f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    log = home / "logs" / "hooks.log"
    if log.exists() and log.read_text().strip():
        print(f"note: the hooks logged problems, see {log}", file=sys.stderr)
    return project, home


def write_transcripts(data: dict[str, Any], folder: Path, start: datetime | None = None,
                      project: Path | None = None) -> tuple[Path, Path]:
    """Write every session as the transcript Claude Code would have kept for it, under ``folder/claude``
    (a ``CLAUDE_CONFIG_DIR``), with ``project`` (default: a new empty git project ``folder/project``) as its cwd;
    returns both.

    The sessions keep the dataset's times, or with ``start`` follow each other from then on, a second per line
    (as a replay stamps them)."""
    project, config = git_project(project or folder / "project"), folder / "claude"
    for raw in data["sessions"]:
        session = substitute(raw, str(project), str(folder / "transcripts"))
        written = transcripts.coderecall_session(session, str(project), start)
        transcripts.write_session(written, config)
        if start is not None:
            start += timedelta(seconds=2 * len(session["events"]) + 2)
    return project, config


def run_backfill(ccmemory: str, config: Path, home: Path, *options: str) -> tuple[float, Any]:
    """Run ``<ccmemory> backfill --json <options>`` once over the transcripts in ``config`` into the store ``home``;
    returns its wall time (the whole process) and its JSON report (its raw output when that is not JSON)."""
    command = [*shlex.split(ccmemory), "backfill", "--json", *options]
    env = clean_env(CCMEMORY_HOME=str(home), CLAUDE_CONFIG_DIR=str(config))
    started = time.perf_counter()
    result = subprocess.run(command, env=env, cwd=str(config.parent), capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed (exit {result.returncode}):\n{result.stderr[-3000:]}")
    try:
        return seconds, json.loads(result.stdout)
    except ValueError:
        return seconds, result.stdout[-3000:]


def backfill(data: dict[str, Any], folder: Path, ccmemory: str) -> tuple[Path, Path]:
    """Build the store as a backfill would: transcripts written, then ``ccmemory backfill``; returns
    (project dir, data dir)."""
    project, config = write_transcripts(data, folder)
    home = folder / "home"
    seconds, found = run_backfill(ccmemory, config, home)
    print(f"backfilled {len(data['sessions'])} sessions in {seconds:.1f} s: {json.dumps(found)[:300]}",
          file=sys.stderr)
    return project, home


def relevant_to(gold: dict[str, list[str]]) -> tuple[set[str], set[str]]:
    return set(gold.get("tool_use_ids") or []), set(gold.get("sessions") or [])


def is_relevant(memory: Any, tool_use_ids: set[str], sessions: set[str]) -> bool:
    """Captured from a gold tool call, or a whole-session memory (summary) of a gold session."""
    if memory.metadata.get("tool_use_id") in tool_use_ids:
        return True
    return memory.source == "summary" and memory.session_id in sessions


def score(ranked: list[Any], gold: dict[str, list[str]]) -> dict[str, float]:
    tool_use_ids, sessions = relevant_to(gold)
    flags = [is_relevant(memory, tool_use_ids, sessions) for memory in ranked[:LIMIT]]
    rank = first_rank(flags, {True})
    return {
        "Hit@1": float(rank is not None and rank <= 1),
        "Hit@5": float(rank is not None and rank <= 5),
        "Hit@10": float(rank is not None and rank <= 10),
        "session Hit@5": float(any(memory.session_id in sessions for memory in ranked[:5])),
        "MRR@10": 1.0 / rank if rank else 0.0,
    }


class PlainBM25:
    """The reference: every memory's content in an FTS5 table with default settings, OR of quoted words."""

    def __init__(self, rows: list[Any]) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE t USING fts5(content, tokenize='unicode61 remove_diacritics 2')")
        self.db.executemany("INSERT INTO t(rowid, content) VALUES (?, ?)", [(m.seq, m.content) for m in rows])
        self.by_seq = {m.seq: m for m in rows}

    def search(self, query: str) -> list[Any]:
        words = list(dict.fromkeys(re.findall(r"\w+", query.lower())))
        if not words:
            return []
        expression = " OR ".join(f'"{word}"' for word in words)
        found = self.db.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (expression, LIMIT))
        return [self.by_seq[rowid] for (rowid,) in found]


def run(args: argparse.Namespace) -> dict[str, Any]:
    with gzip.open(args.data, "rt", encoding="utf-8") as handle:
        data = json.load(handle)
    folder = Path(args.replay_dir) if args.replay_dir else Path(tempfile.mkdtemp(prefix="ccmemory-coderecall-"))
    replay_seconds = None
    if args.reuse and (folder / "home" / "ccmemory.db").exists():
        project_dir, home = folder / "project", folder / "home"
    else:
        if folder.exists() and any(folder.iterdir()):
            shutil.rmtree(folder)
        folder.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        if args.backfill:
            project_dir, home = backfill(data, folder, args.ccmemory)
        else:
            project_dir, home = replay(data, folder, args.hook_python)
        replay_seconds = round(time.perf_counter() - started, 1)
    summary = evaluate(data, project_dir, home, args.mode.split(","), no_cache=args.no_cache,
                       rankings_to=args.json)
    summary.update({"data": str(args.data), "overrides": args.set, "replay_seconds": replay_seconds,
                    "store": "backfill" if args.backfill else "hook replay"})
    return summary


def evaluate(data: dict[str, Any], project_dir: Path, home: Path, modes: list[str], *, no_cache: bool = False,
             rankings_to: str | None = None) -> dict[str, Any]:
    """Embed the store in ``home`` and score every question on it (see the module's docstring)."""
    os.environ["CCMEMORY_HOME"] = str(home)
    db = database.connect(vectors=True)
    embedder, embed_seconds = None, None
    if modes != ["keyword"]:  # keyword search needs no vectors: skip the slow part
        embedder = retrieval_cli.embedder(no_cache)
        started = time.perf_counter()
        embeddings.embed_pending(db, embedder)
        embed_seconds = round(time.perf_counter() - started, 1)
    project = projects.project_id(db, project_dir, create=False)
    stored = memories.list_memories(db, project_id=project, limit=10**7)
    bm25 = PlainBM25(stored)
    systems = ["FTS5 BM25", *modes]
    scored: dict[str, dict[str, list[dict[str, float]]]] = {s: {"function": [], "file": []} for s in systems}
    latencies: dict[str, list[float]] = {s: [] for s in systems}
    rankings: dict[str, dict[str, list[str]]] = {s: {} for s in systems}
    for question in data["questions"]:
        for system in systems:
            started = time.perf_counter()
            if system == "FTS5 BM25":
                ranked = bm25.search(question["query"])
            else:
                ranked = [hit.memory for hit in search.search_with_info(
                    db, question["query"], project_id=project, mode=system, limit=LIMIT, embedder=embedder,
                    track=False).hits]
            latencies[system].append((time.perf_counter() - started) * 1000)
            rankings[system][question["qid"]] = [m.id for m in ranked]
            for level, key in (("function", "gold"), ("file", "file_gold")):
                if question[key]["tool_use_ids"] or question[key]["sessions"]:
                    scored[system][level].append(score(ranked, question[key]))
    db.close()
    summary = {
        "memories": len(stored), "summaries": sum(1 for m in stored if m.source == "summary"),
        "embed_seconds": embed_seconds,
        "results": {system: {level: {"n": len(rows), **mean_scores(rows)} for level, rows in scored[system].items()}
                    for system in systems},
        "latency": {system: latency_summary(latencies[system]) for system in systems},
    }
    if rankings_to:
        Path(rankings_to).write_text(json.dumps({"summary": summary, "rankings": rankings}, indent=1))
    return summary


def report(summary: dict[str, Any]) -> str:
    parts = [f"{summary['memories']} memories ({summary['summaries']} session summaries); "
             f"{summary.get('store', 'hook replay')} {summary.get('replay_seconds')} s, "
             f"embedding {summary['embed_seconds']} s"]
    for level in ("function", "file"):
        rows = [(f"{system} (p50 {summary['latency'][system].get('p50_ms')} ms)",
                 {k: v for k, v in result[level].items() if k != "n"}, result[level]["n"])
                for system, result in summary["results"].items()]
        parts.append(f"{level}-level gold\n" + table(rows, COLUMNS, percent=False, label="system"))
    return "\n\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="coderecall-dev.json.gz")
    parser.add_argument("--replay-dir", help="replay into this directory and keep it (default: a temporary one)")
    parser.add_argument("--reuse", action="store_true", help="search the replay already in --replay-dir")
    parser.add_argument("--hook-python", default="/usr/bin/python3" if Path("/usr/bin/python3").exists()
                        else sys.executable, help="the python3 that runs the hooks (as Claude Code would)")
    parser.add_argument("--backfill", action="store_true",
                        help="build the store by writing the sessions as transcripts and running ccmemory backfill")
    parser.add_argument("--ccmemory", default=f"{sys.executable} -m ccmemory",
                        help="the ccmemory command --backfill runs (default: this interpreter's)")
    retrieval_cli.add_shared_options(parser, default_modes="keyword,semantic,hybrid")
    args = retrieval_cli.parse(parser)
    print(report(run(args)))


if __name__ == "__main__":
    main()
