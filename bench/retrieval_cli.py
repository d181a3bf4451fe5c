"""Command-line options the retrieval benchmarks share: modes, ablation overrides, the vector cache."""

from __future__ import annotations

import argparse
from typing import Any, Sequence


def add_shared_options(parser: argparse.ArgumentParser, *, default_modes: str) -> None:
    parser.add_argument("--mode", default=default_modes,
                        help="keyword, semantic, hybrid, or several separated by commas")
    parser.add_argument("--json", help="write the summary and every question's ranking here")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override a ranking constant of ccmemory.search for an ablation, e.g. NEIGHBOUR_WEIGHT=0")
    parser.add_argument("--no-cache", action="store_true",
                        help="embed everything again instead of reading vectors cached under ~/.cache/ccmemory-bench")


def parse(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """Parse, check the modes and apply the ``--set`` overrides."""
    from ccmemory import search

    args = parser.parse_args()
    for mode in args.mode.split(","):
        if mode not in search.MODES:
            parser.error(f"unknown mode {mode!r}; use {', '.join(search.MODES)}")
    apply_overrides(args.set)
    return args


def apply_overrides(assignments: Sequence[str]) -> None:
    """Set ``NAME=VALUE`` constants of :mod:`ccmemory.search` (numbers), for ablations; unknown names are errors."""
    from ccmemory import search

    for assignment in assignments:
        name, _, value = assignment.partition("=")
        if not name.isupper() or not hasattr(search, name):
            raise SystemExit(f"--set {assignment}: ccmemory.search has no constant {name!r}")
        setattr(search, name, type(getattr(search, name))(float(value)))


def embedder(no_cache: bool) -> Any:
    """The built-in model, behind the vector cache unless ``no_cache``."""
    from ccmemory import embeddings
    from embed_cache import CachedEmbedder

    model = embeddings.Embedder(embeddings.ModelSpec())
    return model if no_cache else CachedEmbedder(model)
