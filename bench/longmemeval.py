"""LongMemEval_S as a retrieval benchmark at session and turn level, through the product's own store and search.

Run: python bench/longmemeval.py --data ../shared/bench-data/longmemeval-s-dev.json.gz
     [--mode keyword,semantic,hybrid] [--level session,turn] [--limit 10] [--json OUT]

Protocol (``../shared/README.md``, after LongMemEval's own code and MemPalace's widely quoted run): one
fresh store per question and level holding its haystack, carrying each session's date as ``created_at``
and its id as the memory's session; embedded with ``embed_pending``; the question, verbatim, through
``search.search_with_info`` (the function the MCP tool and CLI call), asked at its ``question_date``
(``clock.replaying``: "last Saturday" is counted from the day the user asked, as a live search counts it
from today). Abstention questions (ids ending in ``_abs``) have no evidence and are skipped.

- **Session level** (``--level session``): one memory per session made of the session's user turns joined
  by newlines (cut at the store's 10,000-character limit: 21 of the 4,830 dev sessions are longer); the
  gold is the question's ``answer_session_ids`` (MemPalace's rule). The same rankings are also scored
  with LongMemEval's own rule, whose gold is only the answer sessions with a ``has_answer`` user turn
  (questions without one are left out there): ``has_answer`` in the summary.
- **Turn level** (``--level turn``, LongMemEval's "one document per user turn"): one memory per user turn,
  in the session's order; the gold is the user turns marked ``has_answer`` (a question whose answer is
  only in an assistant turn has none there and is skipped at this level, as LongMemEval's code does).
  Turns are also mapped to their sessions, in rank order, for session recall from turn retrieval
  (``session@`` columns), searched to a depth of :data:`TURN_DEPTH` so ten sessions are reached.

Per mode and per question type: **any-gold** Hit@5/@10 (MemPalace's "R@5": a gold item in the top k),
**all-gold** All@5/@10 (every gold item in the top k; LongMemEval's recall_all@k) and NDCG@10, beside plain
FTS5 BM25 over the same texts in the same run (the question's distinct lowercase words, quoted, ORed; no
stemming, no stopwords).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sqlite3
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ccmemory import db as database  # noqa: E402
from ccmemory import clock, embeddings, memories, projects, search  # noqa: E402
import retrieval_cli  # noqa: E402
from metrics import latency_summary, mean_scores, question_scores, table  # noqa: E402

KS = (5, 10)
COLUMNS = ["Hit@5", "All@5", "Hit@10", "All@10", "NDCG@10"]
SESSION_COLUMNS = ["session Hit@5", "session All@5", "session Hit@10", "session All@10"]
BM25 = "FTS5 BM25"
LEVELS = ("session", "turn")
#: How deep a turn-level search goes, so its turns reach ten distinct sessions.
TURN_DEPTH = 50


def session_text(session: list[dict[str, Any]]) -> str:
    """The user turns of a session, joined by newlines, cut to what one memory holds."""
    text = "\n".join(turn["content"] for turn in session if turn.get("role") == "user" and turn.get("content"))
    return text[:memories.MAX_CONTENT_CHARS]


def session_time(text: str) -> str:
    """``2023/05/20 (Sat) 10:44`` as ISO 8601."""
    return datetime.strptime(re.sub(r"\s*\(\w+\)\s*", " ", text).strip(), "%Y/%m/%d %H:%M").isoformat()


def user_turns(sid: str, session: list[dict[str, Any]]) -> list[tuple[str, str, bool]]:
    """(turn id, text, has_answer) of a session's user turns; the id is ``<session>#<position in the session>``."""
    return [(f"{sid}#{position}", turn["content"][:memories.MAX_CONTENT_CHARS], bool(turn.get("has_answer")))
            for position, turn in enumerate(session)
            if turn.get("role") == "user" and turn.get("content") and turn["content"].strip()]


def answer_sessions(item: dict[str, Any]) -> list[str]:
    """LongMemEval's own gold: the answer sessions with a user turn marked ``has_answer``."""
    return [sid for sid, session in zip(item["haystack_session_ids"], item["haystack_sessions"])
            if sid in item["answer_session_ids"]
            and any(turn.get("role") == "user" and turn.get("has_answer") for turn in session)]


def documents(item: dict[str, Any], level: str) -> tuple[list[tuple[str, str, str, str]], list[str]]:
    """(id, session, date, text) of each memory of the question's haystack at ``level``, and the gold ids."""
    docs: list[tuple[str, str, str, str]] = []
    gold: list[str] = []
    for sid, date, session in zip(item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"]):
        if level == "session":
            text = session_text(session)
            if text.strip():
                docs.append((sid, sid, date, text))
                if sid in item["answer_session_ids"]:
                    gold.append(sid)
            continue
        for turn_id, text, has_answer in user_turns(sid, session):
            docs.append((turn_id, sid, date, text))
            if has_answer and sid in item["answer_session_ids"]:
                gold.append(turn_id)
    return docs, gold


def plain_bm25(texts: dict[str, str], question: str, limit: int) -> list[str]:
    """The reference ranking: default FTS5 over the texts, the question's words ORed."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(sid UNINDEXED, content, tokenize='unicode61 remove_diacritics 2')")
    conn.executemany("INSERT INTO t(sid, content) VALUES (?, ?)", list(texts.items()))
    words = list(dict.fromkeys(re.findall(r"\w+", question.lower())))
    if not words:
        return []
    expression = " OR ".join(f'"{word}"' for word in words)
    return [sid for (sid,) in conn.execute("SELECT sid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?",
                                           (expression, limit))]


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Both levels asked for; the session level's results stay where earlier runs kept them (``systems``)."""
    with gzip.open(args.data, "rt", encoding="utf-8") as handle:
        questions = json.load(handle)
    modes = args.mode.split(",")
    folder = Path(tempfile.mkdtemp(prefix="ccmemory-longmemeval-"))
    os.environ["CCMEMORY_HOME"] = str(folder / "home")
    embedder = retrieval_cli.embedder(args.no_cache) if modes != ["keyword"] else None
    summary: dict[str, Any] = {"data": str(args.data), "limit": args.limit, "overrides": args.set}
    rows: dict[str, Any] = {}
    for level in args.level.split(","):
        found, level_rows = run_level(questions, level, modes, embedder, folder / level, args)
        if level == "session":
            summary.update(found)
            rows.update(level_rows)
        else:
            summary[level] = found
            rows[level] = level_rows
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "questions": rows}, indent=1))
    return summary


def run_level(questions: list[dict[str, Any]], level: str, modes: list[str], embedder: Any, folder: Path,
              args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """Every question at one level: (summary, rows per system)."""
    systems = [BM25, *modes]
    rows: dict[str, list[dict[str, Any]]] = {system: [] for system in systems}
    latencies: dict[str, list[float]] = {system: [] for system in systems}
    skipped = 0
    embed_seconds = 0.0
    depth = TURN_DEPTH if level == "turn" else args.limit
    for number, item in enumerate(questions):
        docs, gold = documents(item, level)
        if item["question_id"].endswith("_abs") or not gold:
            skipped += 1
            continue
        texts = {doc_id: text for doc_id, _, _, text in docs}
        session_of = {doc_id: sid for doc_id, sid, _, _ in docs}
        workdir = folder / f"q{number:03d}"
        (workdir / "project").mkdir(parents=True)
        db = database.connect(workdir / "memory.db", vectors=True)
        project = projects.project_id(db, workdir / "project")
        for doc_id, sid, date, text in docs:
            memories.add(db, project_id=project, content=text, created_at=session_time(date),
                         source="longmemeval", session_id=sid, metadata={"doc": doc_id})
        if embedder is not None:
            started = time.perf_counter()
            embeddings.embed_pending(db, embedder)
            embed_seconds += time.perf_counter() - started
        gold_sessions = sorted({session_of[doc_id] for doc_id in gold})
        for system in systems:
            started = time.perf_counter()
            if system == BM25:
                ranking = plain_bm25(texts, item["question"], depth)
            else:
                with clock.replaying(clock.parse(session_time(item["question_date"]))):
                    result = search.search_with_info(db, item["question"], project_id=project, mode=system,
                                                     limit=depth, embedder=embedder, track=False)
                ranking = [hit.memory.metadata.get("doc") for hit in result.hits]
            latencies[system].append((time.perf_counter() - started) * 1000)
            scores = question_scores(ranking, gold, ks=KS, recall=True, ndcg_k=10)
            if level == "turn":
                sessions = question_scores([session_of[doc_id] for doc_id in ranking], gold_sessions, ks=KS,
                                           recall=True, ndcg_k=None)
                scores.update({f"session {name}": value for name, value in sessions.items()})
            row = {"question_id": item["question_id"], "type": item["question_type"], "gold": gold,
                   "ranking": ranking[:args.limit] if level == "session" else ranking, "scores": scores}
            if level == "session" and (marked := answer_sessions(item)):
                row["has_answer"] = question_scores(ranking, marked, ks=KS, recall=True, ndcg_k=10)
            rows[system].append(row)
        db.close()
        if (number + 1) % 20 == 0:
            print(f"{level} level: {number + 1}/{len(questions)} questions", file=sys.stderr)
    types = sorted({row["type"] for row in rows[systems[0]]})
    summary: dict[str, Any] = {"skipped_questions": skipped, "embed_seconds": round(embed_seconds, 1), "systems": {}}
    for system in systems:
        groups = {"all": [row["scores"] for row in rows[system]]}
        groups.update({kind: [row["scores"] for row in rows[system] if row["type"] == kind] for kind in types})
        summary["systems"][system] = {
            "by_type": {name: {"n": len(group), **mean_scores(group)} for name, group in groups.items()},
            "latency": latency_summary(latencies[system]),
        }
    if level == "session":
        summary["has_answer"] = {"systems": {}}
        for system in systems:
            marked = [row["has_answer"] for row in rows[system] if "has_answer" in row]
            summary["has_answer"]["systems"][system] = {"by_type": {"all": {"n": len(marked), **mean_scores(marked)}},
                                                        "latency": {}}
    return summary, rows


def report(summary: dict[str, Any]) -> str:
    parts = []
    for level in LEVELS:
        found = summary if level == "session" else summary.get(level)
        if not found or "systems" not in found:
            continue
        columns = COLUMNS + (SESSION_COLUMNS if level == "turn" else [])
        overall = [(f"{system} (p50 {result['latency'].get('p50_ms')} ms)",
                    {k: v for k, v in result["by_type"]["all"].items() if k != "n"}, result["by_type"]["all"]["n"])
                   for system, result in found["systems"].items()]
        what = ("one memory per session" if level == "session"
                else f"one memory per user turn, searched to {TURN_DEPTH}; session@ columns: its turns' sessions")
        parts.append(f"{level} level ({what}), limit {summary['limit']}; {found['skipped_questions']} questions "
                     f"skipped (abstention or no gold); embedding {found['embed_seconds']} s\n"
                     + table(overall, columns, percent=True, label="system"))
        if level == "session" and "has_answer" in found:
            marked = [(system, {k: v for k, v in result["by_type"]["all"].items() if k != "n"},
                       result["by_type"]["all"]["n"]) for system, result in found["has_answer"]["systems"].items()]
            parts.append("session level, LongMemEval's gold (the answer sessions with a has_answer user turn; "
                         "questions without one left out)\n" + table(marked, COLUMNS, percent=True, label="system"))
        for system, result in found["systems"].items():
            by_type = [(name, {k: v for k, v in means.items() if k != "n"}, means["n"])
                       for name, means in result["by_type"].items() if name != "all"]
            parts.append(f"{level} level, {system} by question type\n"
                         + table(by_type, columns, percent=True, label="type"))
    return "\n\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="longmemeval-s-dev.json.gz (or the official longmemeval_s.json)")
    parser.add_argument("--limit", type=int, default=10, help="search limit (metrics go up to 10)")
    parser.add_argument("--level", default="session,turn",
                        help="session, turn, or both separated by commas (default both)")
    retrieval_cli.add_shared_options(parser, default_modes="keyword,semantic,hybrid")
    args = retrieval_cli.parse(parser)
    if args.limit < max(KS):
        parser.error(f"--limit must be at least {max(KS)}")
    unknown = [level for level in args.level.split(",") if level not in LEVELS]
    if unknown:
        parser.error(f"unknown level {unknown[0]!r}; use {', '.join(LEVELS)}")
    print(report(run(args)))


if __name__ == "__main__":
    main()
