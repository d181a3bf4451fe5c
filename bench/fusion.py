"""Hybrid fusion rules side by side on the three retrieval dev sets, in one run, on the same stores.

Run: python bench/fusion.py --locomo ../shared/bench-data/locomo10-dev.json
     --coderecall ../shared/bench-data/coderecall-dev.json.gz --replay-dir R
     --longmemeval ../shared/bench-data/longmemeval-s-dev.json.gz [--rules before,zscore,rrf] [--json OUT]

Each benchmark's own ``run``/``evaluate`` runs once with modes keyword, semantic and one hybrid per
rule: ``hybrid:<rule>`` searches in hybrid mode with :func:`ccmemory.search.fuse` swapped for that
rule for the one search (the other steps, neighbours, priors, summaries, are the product's).
``before`` is the fusion this comparison started from (0.6 x keyword + 0.4 x rescaled cosine),
``zscore`` and ``rrf`` the candidates (see their docstrings); ``product`` is whatever
``search.fuse`` is in this build. Vectors come from the embed cache (``bench/embed_cache.py``).
The coding history is replayed into ``--replay-dir`` once and reused after.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ccmemory import search  # noqa: E402
import coderecall  # noqa: E402
import locomo  # noqa: E402
import longmemeval  # noqa: E402

Ranking = list[tuple[int, float]]
#: Reciprocal-rank fusion's constant, as published (Cormack, Clarke and Buettcher, SIGIR 2009).
RRF_K = 60


def before(by_keyword: Ranking, by_vector: Ranking) -> Ranking:
    """The rule this comparison started from: 0.6 x keyword score + 0.4 x cosine rescaled min..max."""
    fused = {seq: 0.6 * score for seq, score in by_keyword}
    for seq, score in search.vector_scale(by_vector):
        fused[seq] = fused.get(seq, 0.0) + 0.4 * score
    return search.ordered(fused)


def zscore(by_keyword: Ranking, by_vector: Ranking) -> Ranking:
    """Each side standardised over the union of both candidate lists, mixed 0.6 / 0.4, rescaled to 0..1."""
    keyword, vector = dict(by_keyword), dict(search.vector_scale(by_vector))
    pool = sorted(keyword.keys() | vector.keys())
    fused = {seq: 0.0 for seq in pool}
    for side, weight in ((keyword, 0.6), (vector, 0.4)):
        values = [side.get(seq, 0.0) for seq in pool]
        mean, spread = statistics.fmean(values), statistics.pstdev(values)
        if spread > 0:
            for seq, value in zip(pool, values):
                fused[seq] += weight * (value - mean) / spread
    low, high = min(fused.values(), default=0.0), max(fused.values(), default=0.0)
    return search.ordered({seq: (value - low) / (high - low) if high > low else 1.0 for seq, value in fused.items()})


def rrf(by_keyword: Ranking, by_vector: Ranking) -> Ranking:
    """Reciprocal-rank fusion, equal weights, k = 60, divided by its maximum (first in both lists = 1)."""
    fused: dict[int, float] = {}
    for ranking in (by_keyword, sorted(by_vector, key=lambda item: (-item[1], item[0]))):
        for place, (seq, _) in enumerate(ranking, 1):
            fused[seq] = fused.get(seq, 0.0) + 1.0 / (RRF_K + place)
    return search.ordered({seq: value * (RRF_K + 1) / 2 for seq, value in fused.items()})


def peaked(by_keyword: Ranking, by_vector: Ranking) -> Ranking:
    """0.6 / 0.4 scaled per query by how far each side's best stands out from its own list's mean.

    Both lists are looked at to the same depth (the vector list's, at most ``search.CANDIDATES``; the keyword
    list padded with zeros, a memory it did not match scoring 0), on their 0..1 scales.
    """
    keyword, vector = [score for _, score in by_keyword], [score for _, score in search.vector_scale(by_vector)]
    depth = min(search.CANDIDATES, max(len(keyword), len(vector)))
    weights = []
    for scores, base in ((keyword, 0.6), (vector, 0.4)):
        top = sorted(scores, reverse=True)[:depth]
        weights.append(base * (top[0] - sum(top) / depth) if top else 0.0)
    total = sum(weights)
    w_keyword, w_vector = (weights[0] / total, weights[1] / total) if total > 0 else (0.6, 0.4)
    fused = {seq: w_keyword * score for seq, score in by_keyword}
    for seq, score in search.vector_scale(by_vector):
        fused[seq] = fused.get(seq, 0.0) + w_vector * score
    return search.ordered(fused)


RULES: dict[str, Callable[[Ranking, Ranking], Ranking]] = {
    "before": before, "zscore": zscore, "rrf": rrf, "peaked": peaked, "product": search.fuse}


def _without_reach(rule: Callable[[Ranking, Ranking], Ranking]) -> Callable[..., Ranking]:
    """``rule`` in the product's place, whose fuse also takes how much of the question keywords can match
    (``search.keyword_reach``): the rules compared here predate it and mix the two lists alone."""
    def fuse(by_keyword: Ranking, by_vector: Ranking, reach: float = 1.0) -> Ranking:
        return rule(by_keyword, by_vector)
    return fuse


def install() -> None:
    """Let ``search_with_info`` take ``hybrid:<rule>`` as a mode: hybrid with that fusion rule."""
    original = search.search_with_info
    product_fuse = search.fuse

    def patched(db: Any, query: str, **options: Any) -> Any:
        mode = options.get("mode", search.DEFAULT_MODE)
        if not mode.startswith("hybrid:"):
            return original(db, query, **options)
        rule = RULES[mode.split(":", 1)[1]]
        search.fuse = rule if rule is product_fuse else _without_reach(rule)  # type: ignore[assignment]
        try:
            result = original(db, query, **dict(options, mode="hybrid"))
        finally:
            search.fuse = product_fuse
        result.mode_used = mode
        return result

    search.search_with_info = patched  # type: ignore[assignment]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", required=True)
    parser.add_argument("--coderecall", required=True)
    parser.add_argument("--replay-dir", required=True)
    parser.add_argument("--longmemeval", required=True)
    parser.add_argument("--rules", default="before,zscore,rrf")
    parser.add_argument("--only", default="locomo,coderecall,longmemeval", help="which benchmarks to run")
    parser.add_argument("--json", help="write every summary here")
    parser.add_argument("--questions", help="write each question's rankings here (run one benchmark with --only)")
    args = parser.parse_args()
    rules = args.rules.split(",")
    install()
    modes = ["keyword", "semantic", *(f"hybrid:{rule}" for rule in rules)]
    shared = dict(mode=",".join(modes), no_cache=False, json=args.questions, set=[])
    out: dict[str, Any] = {}
    only = args.only.split(",")
    if "locomo" in only:
        out["locomo"] = locomo.run(argparse.Namespace(data=args.locomo, limit=50, check_limit=0, **shared))
        print(locomo.report(out["locomo"]), flush=True)
    if "coderecall" in only:
        replay = Path(args.replay_dir)
        if not (replay / "home" / "ccmemory.db").exists():
            coderecall.run(argparse.Namespace(data=args.coderecall, replay_dir=str(replay), reuse=False,
                                              backfill=False, hook_python="/usr/bin/python3", mode="keyword",
                                              **{k: v for k, v in shared.items() if k != "mode"}))
        with gzip.open(args.coderecall, "rt", encoding="utf-8") as handle:
            data = json.load(handle)
        out["coderecall"] = coderecall.evaluate(data, replay / "project", replay / "home", modes,
                                                rankings_to=args.questions)
        print(coderecall.report(out["coderecall"]), flush=True)
    if "longmemeval" in only:
        out["longmemeval"] = longmemeval.run(argparse.Namespace(data=args.longmemeval, limit=10, level="session",
                                                                **shared))
        print(longmemeval.report(out["longmemeval"]), flush=True)
    print("\nprimary figures (hybrid: LoCoMo R@5 1-5, coderecall function Hit@5, LongMemEval any Hit@5)")
    for mode in modes:
        figures = []
        if "locomo" in out:
            figures.append(100 * out["locomo"]["modes"][mode]["by_category"]["1-5"]["R@5"])
        if "coderecall" in out:
            figures.append(100 * out["coderecall"]["results"][mode]["function"]["Hit@5"])
        if "longmemeval" in out:
            figures.append(100 * out["longmemeval"]["systems"][mode]["by_type"]["all"]["Hit@5"])
        print(f"{mode:18} " + " ".join(f"{f:6.1f}" for f in figures) + f"   mean {statistics.fmean(figures):.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
