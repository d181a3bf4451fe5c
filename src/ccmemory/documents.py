"""Documents: reference text (files, pages, pasted notes) in chunks the embedding model reads whole.

Markdown is parsed (:mod:`ccmemory.markdown_blocks`) into sections under their
headings, and each section is cut into chunks that fit the model's token limit
(:mod:`ccmemory.chunking`); an HTML page becomes readable Markdown with its own
title first (:mod:`ccmemory.html_text`). Re-ingesting the same path or URL
replaces the document's chunks only when its content changed (sha256) or
the chunker now cuts it differently (for instance after the model's token limit
changed), so stored chunks always fit what the encoder reads.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from . import chunking, clock, fetch, html_text, markdown_blocks, paths, safe_files
from .db import Database
from .errors import NotFoundError, ValidationError
from .redaction import redact, redact_fields
from .search import (CANDIDATES, DEFAULT_LIMIT, DEFAULT_MODE, SearchResult, document_frequencies, fts_query,
                     keyword_ranking, keyword_reach, query_terms, rank, term_weights, validate_query,
                     vector_ranking)
from .secret_files import is_secret_file

MAX_DOCUMENT_BYTES = 5 * 1024 * 1024
TEXT_TYPES = ("application/json", "application/xml", "application/xhtml+xml")
HTML_SUFFIXES = (".html", ".htm", ".xhtml")


@dataclass
class Document:
    id: str
    project_id: int
    title: str
    source_path: str | None
    source_url: str | None
    content_hash: str
    created_at: str
    updated_at: str
    chunk_count: int
    unchanged: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Chunk:
    document_id: str
    ordinal: int
    heading: str
    content: str


@dataclass
class DocumentHit:
    document: Document
    chunk: Chunk
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"score": round(self.score, 4), "document": self.document.to_dict(), "chunk": dict(self.chunk.__dict__)}


def chunk_text(text: str) -> tuple[str | None, list[tuple[str, str]]]:
    """The title (front matter, else first H1) and the (heading path, chunk) pairs of a Markdown text."""
    parsed = markdown_blocks.parse(text)
    return parsed.title, chunking.chunk_sections(parsed.sections)


def _read_path(path: str, root: str) -> tuple[str, str]:
    """A text file's content and real path: a regular file of at most MAX_DOCUMENT_BYTES inside the project ``root``.

    The one rule for every door (``ccmemory docs ingest``, the MCP ``docs_ingest``). A repository may
    hold ``docs/setup.md -> ~/secrets.txt``, or a link to its own ``.vault-token``: the name given says
    nothing about the file read. So the file must resolve inside ``root`` (checked on the opened
    descriptor by :func:`ccmemory.safe_files.open_fd`), and the secret-file name check applies to the
    name given and to the real name of the very file opened, before any of it is read.
    """
    file = paths.expand_user(path)
    if os.path.isdir(file):
        raise ValidationError(f"{file} is a directory; ingest its files one at a time "
                              f"(`ccmemory docs ingest {file}/FILE.md`, or docs_ingest with path=FILE)")
    if is_secret_file(file):
        raise _secret_file(file)
    try:
        handle = safe_files.open_regular(file, root=root)
    except safe_files.UnsafeFileError as exc:
        if exc.reason != safe_files.OUTSIDE:
            raise
        raise ValidationError(f"{file} resolves to {os.path.realpath(file)}, outside the project ({root}), so it is "
                              "not ingested: documents are read only from inside the project, and a link out of it "
                              "is never followed. To ingest it, copy the file itself (not a link to it) into the "
                              "project and ingest the copy.") from None
    with handle:
        real = _opened_name(file, handle.fileno())
        data = handle.read(MAX_DOCUMENT_BYTES + 1)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise ValidationError(f"{file} is larger than {MAX_DOCUMENT_BYTES:,} bytes, the limit for a document; "
                              "split it and ingest the parts")
    if b"\0" in data[:8192]:
        raise ValidationError(f"{file} looks binary; only text documents (txt, md, ...) can be ingested")
    try:
        return data.decode("utf-8"), real
    except UnicodeDecodeError:
        return data.decode("latin-1"), real


def _opened_name(file: str, fd: int) -> str:
    """The real path of ``file``, which must be the file open on ``fd`` and not be named like a secret file.

    Comparing device and inode ties the name checked to the file read: a link swapped between the
    open and this check is refused, not read under a harmless name.
    """
    real = os.path.realpath(file)
    try:
        now = os.stat(real)
    except OSError:
        now = None
    opened = os.fstat(fd)
    if now is None or (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino):
        raise ValidationError(f"{file} changed while it was being opened (a link swapped in?), so it is not "
                              "ingested; ingest it again once nothing is changing it")
    if is_secret_file(real):
        raise _secret_file(f"{file} (a link to {real})")
    return real


def _secret_file(shown: str) -> ValidationError:
    return ValidationError(f"{shown} is named like a file whose whole content is a secret (a key or a token), "
                           "so it is not ingested; put what the documents should say in a text or Markdown file")


def _fetch_url(url: str) -> tuple[str, bool]:
    """The page's text and whether it is HTML (fetched by :mod:`ccmemory.fetch`: public hosts, one deadline)."""
    if not re.match(r"^https?://", url, re.IGNORECASE):
        raise ValidationError(f"Only http(s) URLs can be ingested, got {url!r}")
    page = fetch.get(url, MAX_DOCUMENT_BYTES, accept=lambda kind: kind.startswith("text/") or kind in TEXT_TYPES)
    if b"\0" in page.body[:8192]:
        raise ValidationError(f"{url} sent binary data, not text; save the page as text and ingest the file")
    try:
        text = page.body.decode(page.charset or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        text = page.body.decode("utf-8", errors="replace")
    return text, page.content_type in ("text/html", "application/xhtml+xml")


@dataclass
class Prepared:
    """A document read (or fetched), converted, redacted and cut into chunks, not stored yet."""

    title: str
    chunks: list[tuple[str, str]]
    digest: str
    source_path: str | None
    url: str | None


def prepare(
    *,
    path: str | None = None,
    content: str | None = None,
    title: str | None = None,
    url: str | None = None,
    root: str | None = None,
) -> Prepared:
    """Read exactly one of ``path``, ``url`` or ``content`` and cut it into chunks, without the database.

    This is the long part of an ingest (a fetch waits up to :data:`ccmemory.fetch.DEADLINE_SECONDS`;
    cutting 5 MB takes seconds), so the MCP server runs it without holding its connection. A ``path``
    needs ``root``, the project directory it must lie in (see :func:`_read_path`).
    """
    given = [name for name, value in (("path", path), ("url", url), ("content", content)) if value]
    if len(given) != 1:
        raise ValidationError("Give exactly one of path, url or content to ingest a document")
    source_path = None
    is_html = False
    if path:
        if root is None:
            raise TypeError("A document path is read only with root=, the project directory it must lie in")
        text, source_path = _read_path(path, root)
        fallback = Path(path).stem
        is_html = Path(path).suffix.lower() in HTML_SUFFIXES
    elif url:
        (text, is_html), fallback = _fetch_url(url), url
    else:
        text, fallback = str(content), "Untitled"
        if len(text) > MAX_DOCUMENT_BYTES:
            raise ValidationError(f"The text is {len(text):,} characters; documents are limited to "
                                  f"{MAX_DOCUMENT_BYTES:,}. Save it to a file in the project and ingest parts of it.")
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    page_title = None
    if is_html or html_text.looks_like_html(text):
        text, page_title = html_text.to_markdown(text)
    text = redact(text)
    if not text.strip():
        raise ValidationError("The document is empty (or an HTML page without readable text, or only private "
                              "spans); nothing to ingest")
    found_title, chunks = chunk_text(text)
    title = redact((title or page_title or found_title or fallback).strip())
    return Prepared(title, chunks, digest, source_path, url)


def ingest(
    db: Database,
    *,
    project_id: int,
    path: str | None = None,
    content: str | None = None,
    title: str | None = None,
    url: str | None = None,
    metadata: dict[str, Any] | None = None,
    root: str | None = None,
) -> Document:
    """Store a document from exactly one of ``path``, ``url`` or ``content``; returns it.

    A ``path`` must be a regular file (no FIFO, device or directory) of at most
    :data:`MAX_DOCUMENT_BYTES` inside ``root``, the project directory (both doors, the CLI and the MCP
    tool, pass it), once symlinks are resolved, and be named like no secret file, nor its target
    (:func:`_read_path`). Pasted ``content`` is limited to
    :data:`MAX_DOCUMENT_BYTES` too. A ``url`` is fetched by :mod:`ccmemory.fetch` (public hosts
    only, one deadline). Private spans and secrets are removed before anything is stored.

    Vectors for its chunks are made later by :func:`ccmemory.embeddings.embed_pending`.
    """
    prepared = prepare(path=path, content=content, title=title, url=url, root=root)
    return store(db, prepared, project_id=project_id, metadata=metadata)


def store(db: Database, prepared: Prepared, *, project_id: int, metadata: dict[str, Any] | None = None) -> Document:
    """Store a prepared document; an unchanged re-ingest of the same path or URL changes nothing."""
    title, chunks, digest = prepared.title, prepared.chunks, prepared.digest
    now = clock.now()
    source_path, url, stored_metadata = _stored_fields(prepared.source_path, prepared.url, metadata)
    with db.transaction():
        existing = None
        if source_path:
            existing = db.one("SELECT id, content_hash FROM documents WHERE project_id = ? AND source_path = ?",
                              (project_id, source_path))
        elif url:
            existing = db.one("SELECT id, content_hash FROM documents WHERE project_id = ? AND source_url = ?",
                              (project_id, url))
        if existing and existing["content_hash"] == digest and _stored_chunks(db, existing["id"]) == chunks:
            document = get(db, existing["id"], project_id=project_id)
            document.unchanged = True
            return document
        if existing:
            document_id = existing["id"]
            db.execute("DELETE FROM chunks WHERE document_id = ?", (document_id,))
            db.execute("UPDATE documents SET title = ?, content_hash = ?, updated_at = ? WHERE id = ?",
                       (title, digest, now, document_id))
        else:
            document_id = str(uuid.uuid4())
            db.execute(
                "INSERT INTO documents(id, project_id, title, source_path, source_url, content_hash, created_at, "
                "updated_at, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (document_id, project_id, title, source_path, url, digest, now, now, stored_metadata),
            )
        for ordinal, (heading, body) in enumerate(chunks):
            db.execute("INSERT INTO chunks(document_id, ordinal, heading, content) VALUES (?, ?, ?, ?)",
                       (document_id, ordinal, heading, body))
    return get(db, document_id, project_id=project_id)


def _stored_fields(source_path: str | None, url: str | None,
                   metadata: dict[str, Any] | None) -> tuple[str | None, str | None, str]:
    """A document's source path, URL and metadata (JSON) as stored: redacted like its text.

    A URL may carry a password (``https://user:pass@host/…``) or a token in its query; the
    redacted URL is also what a later ingest of the same URL is matched by.
    """
    if metadata is not None and not isinstance(metadata, dict):
        raise ValidationError(f"Metadata must be an object, got {type(metadata).__name__}")
    return (redact(source_path) if source_path else source_path, redact(url) if url else url,
            json.dumps(redact_fields(metadata or {})))


def _stored_chunks(db: Database, document_id: str) -> list[tuple[str, str]]:
    """A document's (heading, content) chunks as stored; they differ from a fresh cut once the chunker changed."""
    return [(row["heading"], row["content"]) for row in
            db.rows("SELECT heading, content FROM chunks WHERE document_id = ? ORDER BY ordinal", (document_id,))]


_DOCUMENT_COLUMNS = (
    "d.id, d.project_id, d.title, d.source_path, d.source_url, d.content_hash, d.created_at, d.updated_at, "
    "(SELECT COUNT(*) FROM chunks c WHERE c.document_id = d.id) AS chunk_count"
)


def get(db: Database, document_id: str, *, project_id: int | None) -> Document:
    """One document of ``project_id`` (None: any project); another project's is not found."""
    where, params = ("", ()) if project_id is None else (" AND d.project_id = ?", (project_id,))
    row = db.one(f"SELECT {_DOCUMENT_COLUMNS} FROM documents d WHERE d.id = ?{where}",
                 (str(document_id)[:64], *params))
    if row is None:
        raise NotFoundError(f"No document with id {str(document_id)[:64]!r} in this project; "
                            "list documents with `ccmemory docs list`")
    return Document(**row)


def list_documents(db: Database, project_id: int) -> list[Document]:
    rows = db.rows(f"SELECT {_DOCUMENT_COLUMNS} FROM documents d WHERE d.project_id = ? ORDER BY d.updated_at DESC",
                   (project_id,))
    return [Document(**row) for row in rows]


def delete(db: Database, document_id: str, *, project_id: int | None) -> None:
    """Delete a document of ``project_id`` and its chunks; NotFoundError (nothing changed) otherwise."""
    document = get(db, document_id, project_id=project_id)
    with db.transaction():
        db.execute("DELETE FROM documents WHERE id = ?", (document.id,))


def search_with_info(
    db: Database, query: str, *, project_id: int, limit: int = DEFAULT_LIMIT, mode: str = DEFAULT_MODE, embedder: Any = None
) -> SearchResult:
    """Search the project's document chunks (same modes and fallbacks as memory search)."""
    query = validate_query(query, limit, mode)
    warnings: list[str] = []

    def keyword() -> tuple[list[tuple[int, float]], float]:
        rows, terms = db.scalar("SELECT MAX(seq) FROM chunks") or 0, query_terms(query)
        frequency = document_frequencies(db, "chunks_vocab", terms)
        reach = keyword_reach(term_weights(frequency, rows), frequency)
        expression = fts_query(query, db, "chunks_vocab", rows, frequency)
        if expression is None:
            return [], reach
        return keyword_ranking(
            db,
            "SELECT c.seq, bm25(chunks_fts) AS rank, c.heading || ' ' || c.content AS text "
            "FROM chunks_fts JOIN chunks c ON c.seq = chunks_fts.rowid "
            "JOIN documents d ON d.id = c.document_id WHERE chunks_fts MATCH ? AND d.project_id = ? "
            f"ORDER BY rank LIMIT {CANDIDATES}",
            (expression, project_id),
            terms,
        ), reach

    def semantic() -> Callable[[Sequence[int]], list[tuple[int, float]] | None]:
        return vector_ranking(db, "chunk", query, project_id=project_id, embedder=embedder, warnings=warnings)

    ranked, mode_used, _ = rank(mode, keyword, semantic, warnings)
    ranked = ranked[:limit]
    hits: list[DocumentHit] = []
    documents: dict[str, Document] = {}
    for seq, score in ranked:
        row = db.one("SELECT document_id, ordinal, heading, content FROM chunks WHERE seq = ?", (seq,))
        if row is None:
            continue
        if row["document_id"] not in documents:
            documents[row["document_id"]] = get(db, row["document_id"], project_id=project_id)
        hits.append(DocumentHit(document=documents[row["document_id"]], chunk=Chunk(**row), score=score))
    return SearchResult(hits=hits, mode_used=mode_used, warnings=warnings)


def search(db: Database, query: str, **options: Any) -> list[DocumentHit]:
    """Like :func:`search_with_info`, returning only the hits."""
    return search_with_info(db, query, **options).hits
