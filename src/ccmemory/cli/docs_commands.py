"""Commands over documents: ``ccmemory docs ingest|search|list|delete``."""

from __future__ import annotations

import click

from .groups import WholeHelpGroup

from .. import documents, excerpts, projects
from ..search import DEFAULT_LIMIT, DEFAULT_MODE, MAX_LIMIT, MODES
from .common import (default_project_dir, search_embedder, echo, embed_in_background, emit_json, handles_errors,
                     json_option, open_store, project_option, report_search)


@click.group(cls=WholeHelpGroup)
def docs() -> None:
    """Reference documents (Markdown, HTML, text) in token-sized chunks, searchable apart from memories."""


@docs.command()
@click.argument("path", required=False, type=click.Path(dir_okay=False))
@click.option("--text", default=None, help="Ingest this text instead of a file.")
@click.option("--url", default=None, help="Fetch and ingest an http(s) page.")
@click.option("--title", default=None, help="Title (default: the first H1 or the file name).")
@project_option
@json_option
@handles_errors
def ingest(path: str | None, text: str | None, url: str | None, title: str | None, project_dir: str | None,
           as_json: bool) -> None:
    """Ingest a Markdown, HTML or text file of the project (or --text / --url)."""
    db, project = open_store(project_dir)
    root = projects.project_root(project_dir or default_project_dir())  # the file must resolve inside it
    document = documents.ingest(db, project_id=project, path=path, content=text, url=url, title=title, root=root)
    if not document.unchanged:
        embed_in_background(db)
    if as_json:
        emit_json(document.to_dict())
    elif document.unchanged:
        echo(f"Document unchanged: {document.title} ({document.id})")
    else:
        echo(f"Document ingested: {document.title} ({document.id}, {document.chunk_count} chunks)")


@docs.command(name="search")
@click.argument("query")
@click.option("--limit", type=click.IntRange(1, MAX_LIMIT), default=DEFAULT_LIMIT, show_default=True)
@click.option("--mode", type=click.Choice(MODES), default=DEFAULT_MODE, show_default=True)
@project_option
@json_option
@handles_errors
def search_docs(query: str, limit: int, mode: str, project_dir: str | None, as_json: bool) -> None:
    """Search ingested documents."""
    db, project = open_store(project_dir, vectors=mode != "keyword")
    embedder = search_embedder(db, mode)
    result = documents.search_with_info(db, query, project_id=project, limit=limit, mode=mode, embedder=embedder)
    if not report_search(result, query, as_json):
        return
    for number, hit in enumerate(result.hits, 1):
        source = hit.document.source_path or hit.document.source_url or "inline"
        echo(f"{number}. [{hit.score:.2f}] {hit.document.title}#{hit.chunk.heading or 'top'} ({source})")
        echo(f"   {excerpts.one_line(hit.chunk.content, 100)}")
        echo()


@docs.command(name="list")
@project_option
@json_option
@handles_errors
def list_docs(project_dir: str | None, as_json: bool) -> None:
    """List this project's documents."""
    db, project = open_store(project_dir)
    found = documents.list_documents(db, project)
    if as_json:
        emit_json([document.to_dict() for document in found])
        return
    if not found:
        echo("No documents.")
    for document in found:
        echo(f"{document.id[:8]} {document.title} ({document.chunk_count} chunks) "
                   f"{document.source_path or document.source_url or 'inline'}")


@docs.command(name="delete")
@click.argument("document_id")
@project_option
@handles_errors
def delete_doc(document_id: str, project_dir: str | None) -> None:
    """Delete one of this project's documents and its chunks."""
    db, project = open_store(project_dir)
    documents.delete(db, document_id, project_id=project)
    echo(f"Document deleted: {document_id}")


COMMANDS = [docs]
