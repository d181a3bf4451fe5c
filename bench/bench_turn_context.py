"""What reading a conversation turn in context costs to embed, against the turn alone, side by side.

Run: python bench/bench_turn_context.py [--data ../shared/bench-data/locomo10-dev.json] [--turns 600] [--rounds 2]

The first ``--turns`` turns of the LoCoMo dev conversations are stored twice, in two fresh stores: once as
turns of their sessions (each embedded with the turn before it, :func:`ccmemory.embeddings.previous_turns`)
and once without sessions (each turn alone, as before). ``embed_pending`` embeds each store with the
built-in model, no vector cache; the two alternate ``--rounds`` times and the best round of each counts
(the cores are shared). The ratio is the cost per turn of the context.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))

from ccmemory import db as database  # noqa: E402
from ccmemory import embeddings, memories, projects  # noqa: E402
from locomo import session_numbers, session_time, turn_content  # noqa: E402
from report import shared_machine, write_section  # noqa: E402

DATA = REPO.parent / "shared" / "bench-data" / "locomo10-dev.json"


def turns(path: Path, count: int) -> list[tuple[str, str, str]]:
    """(session, time, content) of the first ``count`` turns, conversation by conversation."""
    found = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conversation = sample["conversation"]
        for number in session_numbers(conversation):
            when = session_time(conversation[f"session_{number}_date_time"])
            found += [(f"{sample['sample_id']}-{number}", when, turn_content(turn))
                      for turn in conversation[f"session_{number}"]]
    return found[:count]


def embed_once(folder: Path, rows: list[tuple[str, str, str]], *, in_sessions: bool,
               embedder: embeddings.Embedder) -> float:
    """Seconds ``embed_pending`` takes over a fresh store of ``rows``."""
    folder.mkdir(parents=True)
    (folder / "project").mkdir()
    db = database.connect(folder / "memory.db", vectors=True)
    project = projects.project_id(db, folder / "project")
    for session, when, content in rows:
        memories.add(db, project_id=project, content=content, created_at=when, source="import",
                     session_id=session if in_sessions else None)
    started = time.perf_counter()
    embeddings.embed_pending(db, embedder)
    seconds = time.perf_counter() - started
    db.close()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--turns", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--write", action="store_true", help="write the BENCHMARKS.md section")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ccmemory-turn-context-"))
    os.environ["CCMEMORY_HOME"] = str(root / "home")
    rows = turns(args.data, args.turns)
    embedder = embeddings.Embedder(embeddings.ModelSpec())
    embedder.embed(["warm up the model"])
    best = {"alone": float("inf"), "in context": float("inf")}
    for round_number in range(args.rounds):
        for name in best:
            seconds = embed_once(root / f"{name.replace(' ', '-')}-{round_number}", rows,
                                 in_sessions=name == "in context", embedder=embedder)
            best[name] = min(best[name], seconds)
    lines = ["| turns embedded | seconds (best of {}) | ms per turn |".format(args.rounds), "|---|---:|---:|"]
    lines += [f"| {name} | {seconds:.2f} | {1000 * seconds / len(rows):.1f} |" for name, seconds in best.items()]
    body = (f"{shared_machine()}\n\n{len(rows)} LoCoMo dev turns, built-in model, `embed_pending` on a fresh store "
            f"each time, the two alternating.\n\n" + "\n".join(lines)
            + f"\n\nIn context costs {best['in context'] / best['alone']:.2f}× the turn alone per turn (two texts "
            "embedded, the second holding up to 400 characters of the turn before as well). Captured tool calls "
            "and summaries are not read in context, so coding history embeds as before.\n\n"
            f"Command: `python bench/bench_turn_context.py --turns {args.turns} --rounds {args.rounds} --write`.\n")
    print(body)
    if args.write:
        write_section("turn-context", "Reading a conversation turn in context: embedding cost (issue 25)", body)


if __name__ == "__main__":
    main()
