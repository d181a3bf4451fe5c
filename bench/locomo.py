"""LoCoMo as a turn-level retrieval benchmark, through the product's own store and search.

Run: python bench/locomo.py --data ../shared/bench-data/locomo10-dev.json [--mode hybrid] [--limit 50]
     [--json OUT] [--check-limit 5] [--lower-case]

Protocol (``../shared/specs/locomo.md``): one fresh store per conversation;
sessions in numeric order, one memory per turn (``{speaker}: {text}``, plus the
image caption when there is one) added with ``memories.add`` in a store
session per conversation session, carrying the session's real time as ``created_at`` and the turn's ``dia_id`` in metadata;
embedded with ``embed_pending``; every question, verbatim, through
``search.search_with_info`` (the function the MCP tool and CLI call). Scores
per category number, over 1–5 and over 1–4: Recall@1/5/10/25/50 (fractional),
Hit@k, All@k, MRR, NDCG@10, and the search latency. ``--check-limit 5`` also
searches at that limit and reports how often its results differ from the top
of the main run (they must not: a ranking independent of the limit). ``--lower-case`` asks every question
as a user may type it, in lower case ("what did caroline research?").
Deterministic: no sampling, ties broken by the store's order.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ccmemory import db as database  # noqa: E402
from ccmemory import embeddings, memories, projects, search  # noqa: E402
import retrieval_cli  # noqa: E402
from metrics import latency_summary, mean_scores, question_scores, table  # noqa: E402

KS = (1, 5, 10, 25, 50)
CATEGORIES = (1, 2, 3, 4, 5)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_DIA_ID = re.compile(r"^D(\d+):(\d+)$")


def session_numbers(conversation: dict[str, Any]) -> list[int]:
    """Numbers of the sessions that have turns, ascending (date keys alone do not make a session)."""
    found = []
    for key, value in conversation.items():
        match = re.fullmatch(r"session_(\d+)", key)
        if match and isinstance(value, list):
            found.append(int(match.group(1)))
    return sorted(found)


def session_time(text: str) -> str:
    """``1:56 pm on 8 May, 2023`` as ISO 8601."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").isoformat()


def turn_content(turn: dict[str, Any]) -> str:
    content = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        content += f" [shares an image: {turn['blip_caption']}]"
    return content


def normalize_evidence(evidence: Any, known: set[str]) -> tuple[list[str], int]:
    """Gold dia_ids, cleaned as the spec says; also how many pieces were dropped (unparsable or unknown)."""
    pieces: list[str] = []
    for item in evidence if isinstance(evidence, list) else [evidence]:
        pieces += [p for p in re.split(r"[;,\s]+", str(item or "")) if p]
    gold, dropped = [], 0
    for piece in pieces:
        match = _DIA_ID.match(piece)
        dia_id = f"D{int(match.group(1))}:{int(match.group(2))}" if match else None
        if dia_id is None or dia_id not in known:
            dropped += 1
        elif dia_id not in gold:
            gold.append(dia_id)
    return gold, dropped


def ingest(db: database.Database, project: int, conversation: dict[str, Any]) -> set[str]:
    """One memory per turn, sessions in order; returns the dia_ids stored."""
    known = set()
    for number in session_numbers(conversation):
        when = session_time(conversation[f"session_{number}_date_time"])
        session = f"{conversation['speaker_a']}-{conversation['speaker_b']}-session-{number}"
        for turn in conversation[f"session_{number}"]:
            memories.add(db, project_id=project, content=turn_content(turn), created_at=when,
                         metadata={"dia_id": turn["dia_id"]}, source="locomo", session_id=session)
            known.add(turn["dia_id"])
    return known


def run(args: argparse.Namespace) -> dict[str, Any]:
    samples = json.loads(Path(args.data).read_text(encoding="utf-8"))
    modes = args.mode.split(",")
    folder = Path(tempfile.mkdtemp(prefix="ccmemory-locomo-"))
    os.environ["CCMEMORY_HOME"] = str(folder / "home")
    embedder = retrieval_cli.embedder(args.no_cache)
    per_mode: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
    latencies: dict[str, list[float]] = {mode: [] for mode in modes}
    limit_changes: dict[str, int] = {mode: 0 for mode in modes}
    skipped = dropped_ids = 0
    for sample in samples:
        workdir = folder / sample["sample_id"]
        (workdir / "project").mkdir(parents=True)
        db = database.connect(workdir / "memory.db", vectors=True)
        project = projects.project_id(db, workdir / "project")
        known = ingest(db, project, sample["conversation"])
        embeddings.embed_pending(db, embedder)
        for number, qa in enumerate(sample["qa"]):
            gold, dropped = normalize_evidence(qa.get("evidence"), known)
            dropped_ids += dropped
            if not gold:
                skipped += 1
                continue
            for mode in modes:
                started = time.perf_counter()
                question = qa["question"].lower() if args.lower_case else qa["question"]
                result = search.search_with_info(db, question, project_id=project, mode=mode, limit=args.limit,
                                                 embedder=embedder, track=False)
                latencies[mode].append((time.perf_counter() - started) * 1000)
                ranking = [hit.memory.metadata.get("dia_id") for hit in result.hits]
                if args.check_limit:
                    small = search.search_with_info(db, question, project_id=project, mode=mode,
                                                    limit=args.check_limit, embedder=embedder, track=False)
                    if [hit.memory.id for hit in small.hits] != [hit.memory.id for hit in result.hits][
                            :args.check_limit]:
                        limit_changes[mode] += 1
                per_mode[mode].append({
                    "sample": sample["sample_id"], "question": number, "category": int(qa["category"]),
                    "gold": gold, "ranking": ranking, "mode_used": result.mode_used,
                    "scores": question_scores(ranking, gold, ks=[k for k in KS if k <= args.limit]),
                })
        db.close()
    summary: dict[str, Any] = {
        "data": str(args.data), "limit": args.limit, "lower_case": args.lower_case, "overrides": args.set,
        "skipped_questions": skipped, "dropped_evidence_ids": dropped_ids, "modes": {},
    }
    for mode in modes:
        rows = per_mode[mode]
        groups = {str(c): [r["scores"] for r in rows if r["category"] == c] for c in CATEGORIES}
        groups["1-5"] = [r["scores"] for r in rows]
        groups["1-4"] = [r["scores"] for r in rows if r["category"] != 5]
        summary["modes"][mode] = {
            "by_category": {name: {"n": len(group), **mean_scores(group)} for name, group in groups.items()},
            "latency": latency_summary(latencies[mode]),
            "modes_used": sorted({r["mode_used"] for r in rows}),
        }
        if args.check_limit:
            summary["modes"][mode]["limit_check"] = {"limit": args.check_limit, "questions": len(rows),
                                                     "top_differs": limit_changes[mode]}
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "questions": per_mode}, indent=1))
    return summary


def report(summary: dict[str, Any]) -> str:
    columns = [f"R@{k}" for k in KS if k <= summary["limit"]] + ["Hit@5", "MRR", "NDCG@10"]
    parts = []
    for mode, result in summary["modes"].items():
        rows = [(f"{name} {CATEGORY_NAMES.get(int(name), '')}".strip() if name.isdigit() else name,
                 {k: v for k, v in means.items() if k != "n"}, means["n"])
                for name, means in result["by_category"].items()]
        latency = result["latency"]
        note = f"search p50 {latency['p50_ms']} ms, p95 {latency['p95_ms']} ms"
        if "limit_check" in result:
            check = result["limit_check"]
            note += (f"; top {check['limit']} of limit {check['limit']} differs from the top {check['limit']} "
                     f"of limit {summary['limit']} for {check['top_differs']} of {check['questions']} questions")
        parts.append(f"mode {mode} ({note})\n" + table(rows, columns, percent=True, label="category"))
    parts.append(f"skipped questions (no usable evidence): {summary['skipped_questions']}; "
                 f"evidence ids dropped: {summary['dropped_evidence_ids']}")
    return "\n\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="locomo10.json or a subset (e.g. ../shared/bench-data/locomo10-dev.json)")
    parser.add_argument("--limit", type=int, default=50, help="search limit (metrics go up to it)")
    parser.add_argument("--check-limit", type=int, default=0, metavar="N",
                        help="also search at limit N and count questions whose top N differs")
    parser.add_argument("--lower-case", action="store_true", help="ask every question in lower case, as typed")
    retrieval_cli.add_shared_options(parser, default_modes="hybrid")
    args = retrieval_cli.parse(parser)
    print(report(run(args)))


if __name__ == "__main__":
    main()
