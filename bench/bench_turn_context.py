"""What reading a conversation turn in context costs to embed, against the turn alone, side by side.

Run: python bench/bench_turn_context.py [--data ../shared/bench-data/locomo10-dev.json] [--turns 600] [--rounds 3]

The first ``--turns`` turns of the LoCoMo dev conversations, each with as much of the turn before it in its
session as the product reads (:func:`ccmemory.embedding_text.context_before`), are embedded by the built-in
model five ways, no vector cache, alternating ``--rounds`` times (the best round of each counts;
the cores are shared):

- **alone** (this build): each turn by itself (what a memory outside a session gets);
- **in context, one pass** (this build): the context and the turn read once, the turn's vector pooled from
  that pass (:meth:`ccmemory.embeddings.Embedder.embed` with ``contexts``);
- **in context, with a vector per sentence** (this build, what a turn gets): the same pass, pooled once more
  for each sentence of the turn (:func:`ccmemory.embedding_text.sentence_spans`);
- **in context, abdf8dd's cut**: the same pass after the last 400 characters of the turn before, whatever
  the turn's length (the rule until abdf8dd);
- **e121600**: what issue 25's "today's model" did with a turn: the shipped float graph, the turn alone,
  batches of up to 16 by length, one call at a time. The last column is its time over each way's, the
  issue's "faster per memory on the same texts".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))

from ccmemory import embeddings  # noqa: E402
from ccmemory.embedding_text import context_before, sentence_spans  # noqa: E402
from locomo import session_numbers, turn_content  # noqa: E402
from report import shared_machine, write_section  # noqa: E402

DATA = REPO.parent / "shared" / "bench-data" / "locomo10-dev.json"


def last_400(previous: str) -> str:
    """The context abdf8dd read a turn after: the last 400 characters of the turn before, from a word's start."""
    previous = " ".join(previous.split())
    if len(previous) > 400:
        cut = previous[-400:]
        previous = cut.split(" ", 1)[1] if " " in cut else cut
    return previous


def turns(path: Path, count: int) -> list[tuple[str | None, str, str | None]]:
    """(context, turn, abdf8dd's context) of the first ``count`` turns; the first turn of a session has no context."""
    found: list[tuple[str | None, str, str | None]] = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conversation = sample["conversation"]
        for number in session_numbers(conversation):
            before = None
            for turn in conversation[f"session_{number}"]:
                text = turn_content(turn)
                found.append(((context_before(before, text) or None) if before else None, text,
                              last_400(before) if before else None))
                before = text
    return found[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--turns", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="write the BENCHMARKS.md section")
    args = parser.parse_args()
    rows = turns(args.data, args.turns)
    texts = [text for _, text, _ in rows]
    contexts = [context for context, _, _ in rows]
    before = [context for _, _, context in rows]
    requests = [(text, context, span) for context, text, _ in rows for span in [None, *sentence_spans(text)]]
    folder = embeddings.builtin_model_dir()
    compact = embeddings._OnnxEncoder(folder, None)
    issue_main = embeddings._OnnxEncoder(folder, None, graph=b"", parallel_calls=False)
    for warm in (compact, issue_main):
        warm.encode(["warm up the model"])
    ways: dict[str, Callable[[], object]] = {
        "alone": lambda: compact.encode(texts),
        "in context, one pass (this build)": lambda: compact.encode(texts, contexts),
        "in context, with a vector per sentence (this build)": lambda: compact.encode(
            [text for text, _, _ in requests], [context for _, context, _ in requests], [span for _, _, span in requests]),
        "in context, abdf8dd's cut (the last 400 characters of the turn before)": lambda: compact.encode(texts, before),
        "e121600: float graph, turn alone, calls in sequence": lambda: issue_main.encode(texts),
    }
    best = {name: float("inf") for name in ways}
    for _ in range(args.rounds):
        for name, way in ways.items():
            started = time.perf_counter()
            way()
            best[name] = min(best[name], time.perf_counter() - started)
    alone = best["alone"]
    reference = best["e121600: float graph, turn alone, calls in sequence"]
    lines = [f"| turns embedded | seconds (best of {args.rounds}) | ms per turn | × alone | faster than e121600 |",
             "|---|---:|---:|---:|---:|"]
    lines += [f"| {name} | {seconds:.2f} | {1000 * seconds / len(rows):.1f} | {seconds / alone:.2f} | "
              f"{reference / seconds:.2f}× |" for name, seconds in best.items()]
    with_context = sum(context is not None for context in contexts)
    one, previous = best["in context, one pass (this build)"], best[
        "in context, abdf8dd's cut (the last 400 characters of the turn before)"]
    sentences = best["in context, with a vector per sentence (this build)"]
    pieces = {name: _pieces(compact, texts, read)
              for name, read in (("alone", [None] * len(texts)), ("this build", contexts), ("abdf8dd", before))}
    body = (f"{shared_machine()}\n\n{len(rows)} LoCoMo dev turns ({sum(c is not None for c in before)} with a turn before them, "
            f"{with_context} read after it by this build), built-in model, the {len(ways)} ways "
            f"alternating in one process. Word pieces read per turn: alone {pieces['alone']:.1f}, in context "
            f"{pieces['this build']:.1f} (abdf8dd's cut {pieces['abdf8dd']:.1f}).\n\n" + "\n".join(lines)
            + f"\n\nReading a turn in context costs {one / alone:.2f}× the turn alone. Per turn this build embeds "
            f"{reference / one:.2f}× as fast as e121600 did (the turn alone, float graph), and {previous / one:.2f}× "
            f"as fast as with abdf8dd's cut; reading the turns alone it would be {reference / alone:.2f}× "
            f"e121600. The {len(requests) - len(rows)} sentence vectors ({(len(requests) - len(rows)) / len(rows):.1f} per "
            f"turn) come from the same pass: {sentences / one:.2f}× the time of the turns' vectors alone, "
            f"{reference / sentences:.2f}× e121600 per turn. Captured tool calls, summaries, knowledge and document "
            "chunks are not read in context and get no sentence vectors.\n\n"
            f"Command: `python bench/bench_turn_context.py --turns {args.turns} --rounds {args.rounds} --write`.\n")
    print(body)
    if args.write:
        write_section("turn-context", "Reading a conversation turn in context: embedding cost (issue 25)", body)


def _pieces(encoder: embeddings._OnnxEncoder, texts: list[str], contexts: list[str | None]) -> float:
    """Word pieces the model reads per text, each after its context (as :meth:`_OnnxEncoder._reads` joins them)."""
    reads = encoder._reads(texts, contexts)
    return sum(len(encoding.ids) for encoding, _, _ in reads) / max(len(reads), 1)


if __name__ == "__main__":
    main()
