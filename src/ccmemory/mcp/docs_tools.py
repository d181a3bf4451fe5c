"""The document tools: ingest reference text and search it, apart from memories."""

from pathlib import Path
from typing import Annotated

from .. import background, documents, quoting, search
from ..excerpts import one_line
from ..parameters import Param
from . import format
from .registry import Annotations, ToolContext, reads, tool

#: The most sections one docs_search answers with (the CLI's --limit goes to search.MAX_LIMIT).
MAX_LIMIT = 20
#: The most characters of a document's title docs_ingest echoes (on one line, escaped: the page or file chose it).
TITLE_CHARS = 120


@tool(reads("Search documents"),
      "Search ingested reference documents (notes, specs, READMEs) of this project, kept apart from "
      "memories. Returns the best-matching sections.")
def docs_search(ctx: ToolContext, query: Annotated[str, Param(as_sent=True)],
                limit: Annotated[int, Param("Max sections", low=1, high=MAX_LIMIT)] = search.DEFAULT_LIMIT) -> str:
    worker = background.of(ctx)
    embedder, problem = worker.wait_for_model()
    worker.wake()
    result = documents.search_with_info(ctx.db, query, project_id=ctx.project_id, limit=limit,
                                        mode="keyword" if embedder is None else "hybrid", embedder=embedder)
    return format.document_hits(str(query), result.hits, ([problem] if problem else []) + result.warnings)


@tool(Annotations("Ingest a document", read_only=False, destructive=True, idempotent=True, open_world=True),
      "Add a text or markdown document for docs_search: give exactly one of path (relative to the project), "
      "url or content. It is split at headings; re-ingesting an unchanged file does nothing.")
def docs_ingest(ctx: ToolContext, path: str | None = None, url: str | None = None, content: str | None = None,
                title: str | None = None) -> str:
    if path:
        path = str(Path(ctx.project_dir, path))
    with ctx.unlocked():  # the fetch (up to its deadline) and the cutting need no database: other tools go on
        prepared = documents.prepare(path=path, url=url, content=content, title=title, root=ctx.project_dir)
    document = documents.store(ctx.db, prepared, project_id=ctx.project_id)
    shown = quoting.escape(one_line(document.title, TITLE_CHARS))
    if document.unchanged:
        return f"Document already ingested and unchanged: {shown} ({document.chunk_count} chunks)"
    background.of(ctx).wake()
    return f"Document ingested: {shown} ({document.chunk_count} chunks, id {document.id}). Search it with docs_search."


TOOLS = [docs_search, docs_ingest]
