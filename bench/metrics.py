"""Retrieval metrics shared by the benchmarks: per-question scores and their means.

A ranking is a list of item keys, best first (keys may repeat when several
retrieved memories stand for the same gold item: only the first counts); the
gold is a set of keys. Definitions:

- Recall@k: |gold ∩ top-k| / |gold| (fractional, as in the LoCoMo paper);
- Hit@k: 1 when any gold item is in the top k; All@k: 1 when every one is;
- MRR (reciprocal rank): 1 / rank of the first gold item, 0 when none is
  within ``cutoff`` (or the whole ranking without a cutoff);
- NDCG@k: binary relevance, DCG = Σ rel_i / log2(i + 1) over ranks i ≤ k,
  divided by the DCG of an oracle ranking (all gold first).
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Hashable, Iterable, Mapping, Sequence


def distinct(ranking: Iterable[Hashable]) -> list[Hashable]:
    """The ranking with repeated keys removed (first occurrence kept)."""
    return list(dict.fromkeys(ranking))


def first_rank(ranking: Sequence[Hashable], gold: set, cutoff: int | None = None) -> int | None:
    """1-based rank of the first gold item within ``cutoff``, or None."""
    for position, key in enumerate(ranking[:cutoff] if cutoff else ranking, 1):
        if key in gold:
            return position
    return None


def recall_at(ranking: Sequence[Hashable], gold: set, k: int) -> float:
    return len(gold & set(distinct(ranking)[:k])) / len(gold) if gold else 0.0


def hit_at(ranking: Sequence[Hashable], gold: set, k: int) -> float:
    return 1.0 if first_rank(ranking, gold, k) is not None else 0.0


def all_at(ranking: Sequence[Hashable], gold: set, k: int) -> float:
    return 1.0 if gold and gold <= set(distinct(ranking)[:k]) else 0.0


def reciprocal_rank(ranking: Sequence[Hashable], gold: set, cutoff: int | None = None) -> float:
    rank = first_rank(ranking, gold, cutoff)
    return 1.0 / rank if rank else 0.0


def ndcg_at(ranking: Sequence[Hashable], gold: set, k: int) -> float:
    if not gold:
        return 0.0
    gained = sum(1.0 / math.log2(i + 1) for i, key in enumerate(distinct(ranking)[:k], 1) if key in gold)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(gold), k) + 1))
    return gained / ideal


def question_scores(ranking: Sequence[Hashable], gold: Iterable[Hashable], *, ks: Sequence[int],
                    recall: bool = True, ndcg_k: int | None = 10, mrr_cutoff: int | None = None) -> dict[str, float]:
    """Every metric of one question: ``R@k``, ``Hit@k``, ``All@k`` (when ``recall``), ``MRR``, ``NDCG@k``."""
    gold = set(gold)
    ranking = distinct(ranking)
    scores: dict[str, float] = {}
    for k in ks:
        if recall:
            scores[f"R@{k}"] = recall_at(ranking, gold, k)
        scores[f"Hit@{k}"] = hit_at(ranking, gold, k)
        if recall:
            scores[f"All@{k}"] = all_at(ranking, gold, k)
    scores["MRR"] = reciprocal_rank(ranking, gold, mrr_cutoff)
    if ndcg_k:
        scores[f"NDCG@{ndcg_k}"] = ndcg_at(ranking, gold, ndcg_k)
    return scores


def mean_scores(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The mean of each metric over questions (empty when there are none)."""
    if not rows:
        return {}
    return {name: sum(row[name] for row in rows) / len(rows) for name in rows[0]}


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile (``share`` 0..1) of a non-empty sequence."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def latency_summary(milliseconds: Sequence[float]) -> dict[str, Any]:
    return {"p50_ms": round(statistics.median(milliseconds), 2), "p95_ms": round(percentile(milliseconds, 0.95), 2),
            "queries": len(milliseconds)} if milliseconds else {}


def table(rows: Sequence[tuple[str, Mapping[str, float], int]], columns: Sequence[str], *, percent: bool,
          label: str) -> str:
    """A markdown table: one row per (label, means, question count)."""
    head = f"| {label} | n | " + " | ".join(columns) + " |"
    rule = "|---|---:|" + "---:|" * len(columns)
    lines = [head, rule]
    for name, means, count in rows:
        cells = [(f"{100 * means[c]:.1f}" if percent else f"{means[c]:.3f}") if c in means else "" for c in columns]
        lines.append(f"| {name} | {count} | " + " | ".join(cells) + " |")
    return "\n".join(lines)

