"""Captured memory seen as read-only docmem trees, built from the store's rows on every read.

Nothing is copied: each virtual node is one row of ``sessions``, ``memories``,
``documents`` or ``chunks`` mapped onto the docmem node columns by the SQL
below, which serves both the indexed look-ups of :mod:`.nodes` and the
``nodes`` view that ``docmem_query_nodes`` reads.

Ids and shapes (a virtual id always contains ``:``; docmem ids never do):

- ``session:<session id>`` a root: content = the session summary, context
  ``session:<start date>:open|ended``; children = its live memories in capture
  order.
- ``memory:<uuid>`` content = the memory, context ``memory:<category>:<sector>``;
  a root when it belongs to no session.
- ``doc:<document id>`` a root: content = the title, context
  ``document:file|url|text:``; children = its sections and heading-less chunks.
- ``section:<document id>:<ordinal>`` a run of consecutive chunks with the same
  heading, named by its first chunk; content = the heading.
- ``chunk:<document id>:<ordinal>`` content = the chunk, context ``chunk::<ordinal>``.

Orders are the memory's ``seq`` or the chunk's ordinal, so docmem nodes
inserted among virtual ones keep their place as more memory is captured.
"""

from __future__ import annotations

from typing import Any

from ..db import Database

KINDS = ("session", "memory", "doc", "section", "chunk")

COLUMNS = (
    "id", "parent_id", "content", "order_value", "token_count", "created_at", "updated_at",
    "context_type", "context_name", "context_value", "readonly", "hash", "kind",
)


def _tokens(expr: str) -> str:
    """The docmem token count (characters / 4, rounded up) in SQL."""
    return f"((length({expr}) + 3) / 4)"


def _session_sql(project: str) -> str:
    return f"""SELECT 'session:' || s.id AS id, NULL AS parent_id, COALESCE(s.summary, '') AS content,
        1.0 AS order_value, {_tokens("COALESCE(s.summary, '')")} AS token_count, s.started_at AS created_at,
        COALESCE(s.ended_at, s.started_at) AS updated_at, 'session' AS context_type,
        substr(s.started_at, 1, 10) AS context_name,
        CASE WHEN s.ended_at IS NULL THEN 'open' ELSE 'ended' END AS context_value,
        1 AS readonly, NULL AS hash, 'session' AS kind
    FROM sessions s WHERE s.project_id = {project}"""


def _memory_sql(project: str) -> str:
    return f"""SELECT 'memory:' || m.id AS id,
        CASE WHEN m.session_id IS NULL THEN NULL ELSE 'session:' || m.session_id END AS parent_id,
        m.content AS content, CAST(m.seq AS REAL) AS order_value, {_tokens("m.content")} AS token_count,
        m.created_at AS created_at, m.updated_at AS updated_at, 'memory' AS context_type,
        substr(m.category, 1, 24) AS context_name, substr(m.sector, 1, 24) AS context_value,
        1 AS readonly, NULL AS hash, 'memory' AS kind
    FROM memories m WHERE m.project_id = {project} AND m.is_deleted = 0"""


def _document_sql(project: str) -> str:
    return f"""SELECT 'doc:' || d.id AS id, NULL AS parent_id, d.title AS content, 1.0 AS order_value,
        {_tokens("d.title")} AS token_count, d.created_at AS created_at, d.updated_at AS updated_at,
        'document' AS context_type,
        CASE WHEN d.source_url IS NOT NULL THEN 'url' WHEN d.source_path IS NOT NULL THEN 'file' ELSE 'text' END
            AS context_name,
        '' AS context_value, 1 AS readonly, NULL AS hash, 'document' AS kind
    FROM documents d WHERE d.project_id = {project}"""


def _runs_sql(project: str, one_document: bool) -> str:
    """Chunks with ``starts`` (first of a heading run) and ``section_start`` (its run's first ordinal)."""
    document = "AND c.document_id = :document" if one_document else ""
    return f"""SELECT r.*, CASE WHEN r.heading = '' THEN NULL ELSE
            MAX(CASE WHEN r.starts THEN r.ordinal END) OVER (PARTITION BY r.document_id ORDER BY r.ordinal)
        END AS section_start
    FROM (SELECT c.document_id, c.ordinal, c.heading, c.content, d.created_at, d.updated_at,
              (c.heading <> '' AND c.heading IS NOT
               LAG(c.heading) OVER (PARTITION BY c.document_id ORDER BY c.ordinal)) AS starts
          FROM chunks c JOIN documents d ON d.id = c.document_id
          WHERE d.project_id = {project} {document}) r"""


def _section_sql(project: str, one_document: bool) -> str:
    return f"""SELECT 'section:' || r.document_id || ':' || r.ordinal AS id, 'doc:' || r.document_id AS parent_id,
        r.heading AS content, CAST(r.ordinal AS REAL) AS order_value, {_tokens("r.heading")} AS token_count,
        r.created_at AS created_at, r.updated_at AS updated_at, 'section' AS context_type, '' AS context_name,
        '' AS context_value, 1 AS readonly, NULL AS hash, 'section' AS kind
    FROM ({_runs_sql(project, one_document)}) r WHERE r.starts"""


def _chunk_sql(project: str, one_document: bool) -> str:
    return f"""SELECT 'chunk:' || r.document_id || ':' || r.ordinal AS id,
        CASE WHEN r.section_start IS NULL THEN 'doc:' || r.document_id
             ELSE 'section:' || r.document_id || ':' || r.section_start END AS parent_id,
        r.content AS content, CAST(r.ordinal AS REAL) AS order_value, {_tokens("r.content")} AS token_count,
        r.created_at AS created_at, r.updated_at AS updated_at, 'chunk' AS context_type, '' AS context_name,
        CAST(r.ordinal AS TEXT) AS context_value, 1 AS readonly, NULL AS hash, 'chunk' AS kind
    FROM ({_runs_sql(project, one_document)}) r WHERE 1"""


def union_sql(project_id: int) -> str:
    """Every virtual node of a project, for the read-only ``nodes`` view."""
    project = str(int(project_id))
    return "\nUNION ALL\n".join((
        _session_sql(project), _memory_sql(project), _document_sql(project),
        _section_sql(project, False), _chunk_sql(project, False),
    ))


def is_virtual(node_id: str) -> bool:
    """True for ids of the ``<kind>:<key>`` form."""
    kind, sep, key = node_id.partition(":")
    return bool(sep) and kind in KINDS and bool(key)


def has_children(node_id: str) -> bool:
    """True for the virtual kinds that have virtual children (sessions, documents, sections)."""
    return node_id.partition(":")[0] in ("session", "doc", "section") and is_virtual(node_id)


def _parse(node_id: str) -> tuple[str, str, int | None] | None:
    """(kind, key, ordinal) of a virtual id; None when it is not one."""
    if not is_virtual(node_id):
        return None
    kind, _, key = node_id.partition(":")
    if kind not in ("section", "chunk"):
        return kind, key, None
    document, sep, ordinal = key.rpartition(":")
    if not sep or not document or not ordinal.isdigit() or str(int(ordinal)) != ordinal:
        return None  # only the canonical spelling names a node
    return kind, document, int(ordinal)


def get(db: Database, project_id: int, node_id: str) -> dict[str, Any] | None:
    """One virtual node of the project, or None."""
    parsed = _parse(node_id)
    if parsed is None:
        return None
    kind, key, ordinal = parsed
    params: dict[str, Any] = {"project": project_id, "key": key, "document": key, "ordinal": ordinal}
    project = ":project"
    if kind == "session":
        sql = _session_sql(project) + " AND s.id = :key"
    elif kind == "memory":
        sql = _memory_sql(project) + " AND m.id = :key"
    elif kind == "doc":
        sql = _document_sql(project) + " AND d.id = :key"
    elif kind == "section":
        sql = _section_sql(project, True) + " AND r.ordinal = :ordinal"
    else:
        sql = _chunk_sql(project, True) + " AND r.ordinal = :ordinal"
    return db.one(sql, params)


def children(db: Database, project_id: int, node_id: str) -> list[dict[str, Any]]:
    """The virtual children of a virtual node, in order (placements are applied by the caller)."""
    parsed = _parse(node_id)
    if parsed is None:
        return []
    kind, key, ordinal = parsed
    params: dict[str, Any] = {"project": project_id, "key": key, "document": key, "ordinal": ordinal}
    project = ":project"
    if kind == "session":
        sql = _memory_sql(project) + " AND m.session_id = :key ORDER BY m.seq"
    elif kind == "doc":
        sql = (f"SELECT * FROM ({_section_sql(project, True)} UNION ALL "
               f"{_chunk_sql(project, True)} AND r.section_start IS NULL) ORDER BY order_value")
    elif kind == "section":
        sql = _chunk_sql(project, True) + " AND r.section_start = :ordinal ORDER BY r.ordinal"
    else:
        return []
    return db.rows(sql, params)
