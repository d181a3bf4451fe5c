"""Two builds side by side on the three retrieval benchmarks, from the JSON each benchmark wrote.

Every retrieval figure is deterministic for a given build and data set, so the two builds' runs need
not interleave (speed is measured elsewhere, interleaved). Each run directory holds the ``--json``
outputs of one build: ``locomo.json`` (``bench/locomo.py``), ``lme.json`` (``bench/longmemeval.py``) and
``coderecall.json`` (``bench/coderecall.py``, whose replayed store in ``replay/`` gives the index size);
a missing file leaves its table out.

    python bench/compare_runs.py --before DIR --after DIR [--label-before X --label-after Y] [--write]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from report import write_section

MODES = ("keyword", "semantic", "hybrid")


def _load(folder: Path, name: str) -> dict[str, Any] | None:
    path = folder / name
    return json.loads(path.read_text())["summary"] if path.exists() else None


def _pair(before: float | None, after: float | None, scale: float, digits: int) -> str:
    shown = [("–" if value is None else f"{value * scale:.{digits}f}") for value in (before, after)]
    return f"{shown[0]} → {shown[1]}"


def locomo_table(before: dict[str, Any], after: dict[str, Any]) -> str:
    """R@5 / R@10 / MRR over categories 1–5, and R@5 of the two hardest categories, per mode."""
    lines = ["| mode | R@5 (1–5) | R@10 (1–5) | R@5 (1–4) | MRR (1–5) | multi-hop R@5 | open-domain R@5 |",
             "|---|---|---|---|---|---|---|"]
    for mode in MODES:
        cells = []
        for category, metric in (("1-5", "R@5"), ("1-5", "R@10"), ("1-4", "R@5"), ("1-5", "MRR"),
                                 ("1", "R@5"), ("3", "R@5")):
            values = [run["modes"].get(mode, {}).get("by_category", {}).get(category, {}).get(metric)
                      for run in (before, after)]
            cells.append(_pair(values[0], values[1], 100, 1))
        lines.append(f"| {'**hybrid (default)**' if mode == 'hybrid' else mode} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


#: LongMemEval metrics and their column names.
_LME_COLUMNS = {"Hit@5": "any@5", "All@5": "all@5", "Hit@10": "any@10", "All@10": "all@10", "NDCG@10": "NDCG@10",
                "session Hit@5": "session any@5", "session All@5": "session all@5"}


def _lme_table(before: dict[str, Any], after: dict[str, Any], part: str | None, metrics: tuple[str, ...], *,
               count: bool = False) -> str:
    """One row per system, over all questions, of a part of the LongMemEval summary (None: the session level's
    ``systems``; ``has_answer``, ``turn``); a run without the part shows "–" (neither: no table)."""
    runs = [run if part is None else run.get(part, {}) for run in (before, after)]
    if not any(runs):
        return ""
    heads = ["n"] * count + [_LME_COLUMNS[metric] for metric in metrics]
    lines = ["| system | " + " | ".join(heads) + " |", "|---" * (len(heads) + 1) + "|"]
    for system in ("FTS5 BM25", *MODES):
        found = [run.get("systems", {}).get(system, {}).get("by_type", {}).get("all", {}) for run in runs]
        cells = [_pair(found[0].get("n"), found[1].get("n"), 1, 0)] * count
        cells += [_pair(found[0].get(metric), found[1].get(metric), 100, 1) for metric in metrics]
        name = "**hybrid (default)**" if system == "hybrid" else system
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def longmemeval_table(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Any-gold and all-gold recall at 5 and 10 and NDCG@10, per system, over all questions."""
    return _lme_table(before, after, None, ("Hit@5", "All@5", "Hit@10", "All@10", "NDCG@10"))


def longmemeval_marked_table(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Session level scored with LongMemEval's own gold (answer sessions with a ``has_answer`` user turn)."""
    return _lme_table(before, after, "has_answer", ("Hit@5", "All@5", "Hit@10", "All@10", "NDCG@10"), count=True)


def longmemeval_turn_table(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Turn level (one memory per user turn): the turns' any/all-gold recall, NDCG@10 and their sessions' recall."""
    return _lme_table(before, after, "turn", ("Hit@5", "All@5", "Hit@10", "NDCG@10", "session Hit@5", "session All@5"))


def coderecall_table(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Hit@1/5, MRR@10 and session Hit@5 at function and file level, per system."""
    lines = ["| system | level | Hit@1 | Hit@5 | MRR@10 | session Hit@5 |", "|---|---|---|---|---|---|"]
    for system in ("FTS5 BM25", *MODES):
        for level in ("function", "file"):
            cells = []
            for metric in ("Hit@1", "Hit@5", "MRR@10", "session Hit@5"):
                values = [run["results"].get(system, {}).get(level, {}).get(metric) for run in (before, after)]
                cells.append(_pair(values[0], values[1], 1, 3))
            name = "**hybrid (default)**" if system == "hybrid" else system
            lines.append(f"| {name} | {level} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _store_size(folder: Path) -> dict[str, float] | None:
    """Bytes per memory of the coderecall replay's store (``dbstat``: pages in use), vectors and all."""
    path = folder / "replay" / "home" / "ccmemory.db"
    if not path.exists():
        return None
    import apsw

    connection = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        pages = dict(connection.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"))
        memories = connection.execute("SELECT COUNT(*) FROM memories WHERE is_deleted = 0").fetchone()[0]
        windows = connection.execute("SELECT COUNT(*) FROM memory_embeddings").fetchone()[0]
    finally:
        connection.close()
    vectors = sum(size for name, size in pages.items() if name.startswith(("memory_embeddings", "memory_vec")))
    return {"memories": memories, "windows per memory": windows / memories,
            "vector bytes per memory": vectors / memories, "database bytes per memory": sum(pages.values()) / memories}


def size_table(before: dict[str, float], after: dict[str, float]) -> str:
    lines = ["| measure | value |", "|---|---|"]
    for key in ("memories", "windows per memory", "vector bytes per memory", "database bytes per memory"):
        digits = 2 if key == "windows per memory" else 0
        lines.append(f"| {key} | {_pair(before[key], after[key], 1, digits)} |")
    return "\n".join(lines)


def render(before_dir: Path, after_dir: Path, labels: tuple[str, str]) -> str:
    """The tables of every benchmark both runs have, each cell ``before → after``."""
    parts = [f"Each cell is **{labels[0]} → {labels[1]}**."]
    for name, title, table in (
        ("locomo.json", "LoCoMo dev (`bench/locomo.py`), 997 questions, limit 50", locomo_table),
        ("lme.json", "LongMemEval_S dev (`bench/longmemeval.py`), 92 questions, session level", longmemeval_table),
        ("lme.json", "LongMemEval_S dev, session level scored with LongMemEval's own gold (the answer sessions "
         "with a `has_answer` user turn; questions without one left out)", longmemeval_marked_table),
        ("lme.json", "LongMemEval_S dev, turn level (one memory per user turn; the gold turns are those marked "
         "`has_answer`)", longmemeval_turn_table),
        ("coderecall.json", "Coding history dev (`bench/coderecall.py`), function level (64) and file level (98)",
         coderecall_table),
    ):
        before, after = _load(before_dir, name), _load(after_dir, name)
        body = table(before, after) if before and after else ""
        if body:
            parts.append(f"### {title}\n\n{body}")
    sizes = _store_size(before_dir), _store_size(after_dir)
    if sizes[0] and sizes[1]:
        parts.append("### Index size: the coderecall store (2,124 memories), pages in use (`dbstat`)\n\n"
                     + size_table(sizes[0], sizes[1]))
    return "\n\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True, help="folder of the first build's JSON outputs")
    parser.add_argument("--after", type=Path, required=True, help="folder of the second build's JSON outputs")
    parser.add_argument("--label-before", default="before")
    parser.add_argument("--label-after", default="after")
    parser.add_argument("--key", default="compare", help="the BENCHMARKS.md section key to write")
    parser.add_argument("--title", default="Two builds side by side")
    parser.add_argument("--preamble", default="", help="text (machine, commands) put before the tables")
    parser.add_argument("--write", action="store_true", help="write the section into BENCHMARKS.md")
    args = parser.parse_args()
    body = render(args.before, args.after, (args.label_before, args.label_after))
    if args.preamble:
        body = f"{args.preamble.strip()}\n\n{body}"
    print(body)
    if args.write:
        write_section(args.key, args.title, body)


if __name__ == "__main__":
    main()
