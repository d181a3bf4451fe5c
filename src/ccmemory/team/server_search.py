"""Asking the team server during a search, for a project whose team memories this machine keeps only in part.

A machine keeps every teammates' memory it may read (a full replica) up to ``sync.replica_max`` per
project; beyond that a sync round keeps the most salient and newest and leaves the rest on the
server (:func:`ccmemory.team.sync.trim`). Only then does a search that includes team memory ask
the server too: ``ccmemory.search_text`` for any of the query's words (:func:`text_query`) and, when
the server holds vectors of this machine's model, ``ccmemory.search_vector``. The rows found that are
not here are **stored as a cache**, exactly as a pull stores them (labelled with who shared them,
their vector kept when the model matches), and the search then ranks the local store as always: one
ranking for every hit, and the next search finds them offline. The next sync round trims the cache
back to the limit.

The server gets :data:`SECONDS` in all. The exchange runs on a thread of its own that never touches
the local store; when it is not done in time, fails, or the server is down, the search goes on with
the local results and a warning, never an exception. Hooks never search, and SessionStart's context
reads the local store alone: neither ever waits on the network.
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

from .. import config
from ..db import Database
from ..errors import CCMemoryError
from . import pulled, sharing, sync
from .connection import resolve, scrub, translated

#: How long a search waits for the server. BENCHMARKS.md: 19-96 ms p50 through the server at 100k
#: team memories; a managed server adds its round trips (connect, TLS, two index queries, one fetch),
#: so 1.5 s only cuts a server that is down, overloaded or far away,
#: while a tool call never stalls for long. libpq's own connect timeout cannot be under 2 s,
#: hence the thread.
SECONDS = 1.5
#: Server hits asked for per query (each function returns at most 200).
CANDIDATES = 50


def wanted(db: Database, project_id: int, settings: Any) -> bool:
    """Whether a search of ``project_id`` asks the server: a server is configured and the project was trimmed."""
    return sync.configured(settings) and project_id in sync.partial_projects(db)


def consult(db: Database, query: str, terms: Sequence[str], *, project_id: int, embedder: Any = None,
            seconds: float = SECONDS) -> list[str]:
    """Cache the server's best team memories for ``query`` here when the project asks the server; warnings.

    ``terms`` are the query's words as the local keyword side reads them (``search.query_terms``).
    Returns at once with no warning for a project whose team memories are all here.
    """
    settings = config.load()
    if not wanted(db, project_id, settings):
        return []
    identity, _why = sharing.project_sync_status(db, project_id)
    team = settings.get("sync", "team") or (sync.read_meta(db, sync.META_WHERE) or "").rpartition(" team ")[2]
    if identity is None or not team:
        return []
    try:
        target = resolve(settings=settings)
    except CCMemoryError as error:
        return [f"Team memory from the server left out ({error}); showing the memories kept on this machine."]
    vector, model = _query_vector(db, query, embedder)
    outcome: dict[str, Any] = {}

    def ask() -> None:
        try:
            outcome["rows"] = _ask(target, team, identity, text_query(terms), vector, model, seconds)
        except Exception as error:  # noqa: BLE001 - any failure means local results alone
            outcome["error"] = scrub(str(error), target.secrets)

    worker = threading.Thread(target=ask, name="ccmemory-server-search", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        return [f"The team server did not answer within {seconds:g} s; showing the memories kept on this "
                "machine (some team memories are only on the server: sync.replica_max)."]
    if "error" in outcome:
        return [f"The team server could not be asked ({outcome['error']}); showing the memories kept on this machine."]
    from ..embeddings import configured_spec

    _cache(db, outcome["rows"], project_id, configured_spec().model_id)
    return []


def text_query(terms: Sequence[str]) -> str:
    """The words for the server's ``websearch_to_tsquery``, joined by ``or``.

    The query as typed would match only memories holding every one of its words (websearch's default is
    AND), so a question with one word no memory holds found nothing there; the local keyword side ranks
    by any of them. ``or`` itself is left out: websearch reads it as the operator.
    """
    return " or ".join(term for term in terms if term != "or")


def _query_vector(db: Database, query: str, embedder: Any) -> tuple[str | None, str | None]:
    """The query's vector as pgvector text and its model id, or (None, None) without vectors here."""
    if not db.vectors_loaded:
        return None, None
    try:
        if embedder is None:
            from ..embeddings import get_embedder

            embedder = get_embedder()
        values = embedder.embed_query(query)
    except Exception:  # noqa: BLE001 - the keyword search on the server still runs
        return None, None
    return "[" + ",".join(str(float(v)) for v in values) + "]", str(embedder.model_id)


def _ask(target: Any, team: str, project: str, query: str, vector: str | None, model: str | None,
         seconds: float) -> list[dict[str, Any]]:
    """The server's best rows for the query (on the worker thread: the server only)."""
    conn = sync.open_server(target, timeout=seconds, connect_timeout=2)
    try:
        with translated(target, "searching the team server"):
            found = [row[0] for row in conn.execute("SELECT id FROM ccmemory.search_text(%s, %s, %s, %s)",
                                                    (team, project, query, CANDIDATES)).fetchall()]
            if vector is not None:
                found += [row[0] for row in conn.execute(
                    "SELECT id FROM ccmemory.search_vector(%s, %s, %s::vector, %s, %s)",
                    (team, project, vector, model, CANDIDATES)).fetchall()]
            if not found:
                return []
            records = conn.execute(f"SELECT {sync.SERVER_COLUMNS} FROM ccmemory.memories WHERE id = ANY(%s)",
                                   (list(dict.fromkeys(found)),)).fetchall()
            return sync.server_rows(records, sync.Report())  # a row this machine cannot store is logged, left out
    finally:
        conn.close()


def _cache(db: Database, rows: list[dict[str, Any]], project_id: int, model: str) -> None:
    """Store the server's rows that are not here, as a pull would (they stay until the next round trims them).

    A vector comes along when ``model`` (this machine's) made it; otherwise the background pass embeds the text.
    """
    role = sync.read_meta(db, sync.META_ROLE)
    with db.transaction():
        for row in rows:
            if row["deleted"] or db.scalar("SELECT 1 FROM memories WHERE id = ?", (row["id"],)):
                continue
            sync.store_row(db, row, project_id, exists=False, model=model)
            sync.record(db, row["id"], {"owner": row["owner"], "mine": int(row["owner"] == role),
                                        "scope": row["scope"], "updated_seq": row["updated_seq"],
                                        "shared_at": row["updated_at"], "superseded_by": row["superseded_by"],
                                        "synced_hash": pulled.hash_of(row)})
