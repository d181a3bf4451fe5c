"""The document tools: ingest reference text and search it, apart from memories."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import documents
from . import arguments, background, format
from .registry import Annotations, Tool, ToolContext, reads

DEFAULT_LIMIT = 5
MAX_LIMIT = 20


def docs_search(ctx: ToolContext, args: dict[str, Any]) -> str:
    query: Any = args.get("query")  # documents.search_with_info checks it, with the message Claude sees
    worker = background.of(ctx)
    embedder, problem = worker.wait_for_model()
    worker.wake()
    result = documents.search_with_info(
        ctx.db, query, project_id=ctx.project_id,
        limit=arguments.integer(args, "limit", DEFAULT_LIMIT, low=1, high=MAX_LIMIT),
        mode="keyword" if embedder is None else "hybrid", embedder=embedder,
    )
    return format.document_hits(str(query), result.hits, ([problem] if problem else []) + result.warnings)


def docs_ingest(ctx: ToolContext, args: dict[str, Any]) -> str:
    path = arguments.text(args, "path")
    if path:
        path = str(Path(ctx.project_dir, path))
    with ctx.unlocked():  # the fetch (up to its deadline) and the cutting need no database: other tools go on
        prepared = documents.prepare(path=path, url=arguments.text(args, "url"),
                                     content=arguments.text(args, "content"), title=arguments.text(args, "title"),
                                     root=ctx.project_dir)
    document = documents.store(ctx.db, prepared, project_id=ctx.project_id)
    if document.unchanged:
        return f"Document already ingested and unchanged: {document.title} ({document.chunk_count} chunks)"
    background.of(ctx).wake()
    return (f"Document ingested: {document.title} ({document.chunk_count} chunks, id {document.id}). "
            "Search it with docs_search.")


TOOLS = [
    Tool(
        "docs_search",
        "Search ingested reference documents (notes, specs, READMEs) of this project, kept apart from "
        "memories. Returns the best-matching sections.",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer", "description": "Max sections (default 5)"},
            },
            "required": ["query"],
        },
        docs_search,
        reads("Search documents"),
    ),
    Tool(
        "docs_ingest",
        "Add a text or markdown document for docs_search: give exactly one of path (relative to the project), "
        "url or content. It is split at headings; re-ingesting an unchanged file does nothing.",
        {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "url": {"type": "string"},
                "content": {"type": "string"},
                "title": {"type": "string"},
            },
        },
        docs_ingest,
        Annotations("Ingest a document", read_only=False, destructive=True, idempotent=True, open_world=True),
    ),
]
