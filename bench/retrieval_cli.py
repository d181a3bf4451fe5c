"""Command-line options the retrieval benchmarks share: modes, ablation overrides, the vector cache."""

from __future__ import annotations

import argparse
from typing import Any, Sequence

#: The model the benchmark runs (``--model``; None: the built-in one), set by :func:`parse`.
_model: dict[str, str] | None = None


def add_shared_options(parser: argparse.ArgumentParser, *, default_modes: str) -> None:
    parser.add_argument("--mode", default=default_modes,
                        help="keyword, semantic, hybrid, or several separated by commas")
    parser.add_argument("--json", help="write the summary and every question's ranking here")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override a ranking constant of ccmemory.search for an ablation, e.g. NEIGHBOUR_WEIGHT=0, "
                             "or of another module named before it, e.g. embedding_text.MAX_READ_CHARS=260")
    parser.add_argument("--no-cache", action="store_true",
                        help="embed everything again instead of reading vectors cached under ~/.cache/ccmemory-bench")
    parser.add_argument("--model", metavar="DIR",
                        help="run another model instead of the built-in one: a folder with model.onnx and "
                             "tokenizer.json, as embedding.path runs it")
    parser.add_argument("--query-prefix", default="", help="with --model: text put before every query")
    parser.add_argument("--document-prefix", default="", help="with --model: text put before every memory")


def parse(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """Parse, check the modes and apply the ``--set`` overrides."""
    from ccmemory import search

    args = parser.parse_args()
    for mode in args.mode.split(","):
        if mode not in search.MODES:
            parser.error(f"unknown mode {mode!r}; use {', '.join(search.MODES)}")
    apply_overrides(args.set)
    global _model
    if args.model:
        _model = {"path": args.model, "query_prefix": args.query_prefix, "document_prefix": args.document_prefix}
    return args


def apply_overrides(assignments: Sequence[str]) -> None:
    """Set ``NAME=VALUE`` constants (numbers, or None) for ablations; unknown names are errors.

    ``NAME`` is a constant of :mod:`ccmemory.search`, or ``module.NAME`` one of another ccmemory module.
    """
    import importlib

    for assignment in assignments:
        target, _, value = assignment.partition("=")
        where, _, name = target.rpartition(".")
        module = importlib.import_module(f"ccmemory.{where or 'search'}")
        if not name.isupper() or not hasattr(module, name):
            raise SystemExit(f"--set {assignment}: {module.__name__} has no constant {name!r}")
        current = getattr(module, name)
        number = None if value == "None" else float(value)
        if number is not None:
            number = type(current)(number) if current is not None else int(number) if number.is_integer() else number
        setattr(module, name, number)


def embedder(no_cache: bool) -> Any:
    """The built-in model (or the ``--model`` folder), behind the vector cache unless ``no_cache``."""
    from ccmemory import embeddings
    from embed_cache import CachedEmbedder

    model = embeddings.Embedder(embeddings.ModelSpec()) if _model is None else folder_embedder(**_model)
    return model if no_cache else CachedEmbedder(model)


def folder_embedder(path: str, query_prefix: str = "", document_prefix: str = "") -> Any:
    """The embedder of a local model folder, as a user gets it with ``embedding.path`` and the prefixes set."""
    from ccmemory import embeddings

    return embeddings.Embedder(embeddings.ModelSpec(path=path, query_prefix=query_prefix,
                                                    document_prefix=document_prefix))
