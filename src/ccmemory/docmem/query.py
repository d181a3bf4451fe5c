"""Read-only SQL over a project's docmem nodes (``docmem_query_nodes``).

The query runs on its own connection opened read-only, against a temporary
``nodes`` view holding the project's docmem nodes and its virtual ones (with
their summary placements). An authorizer admits only reading statements, and a
deadline stops runaway queries, so a query can neither write nor hang the server.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

from ..errors import ValidationError
from . import virtual

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
DEADLINE_SECONDS = 5.0
COLUMNS_HELP = ("id, parent_id, content, order_value, token_count, created_at, updated_at, context_type, "
                "context_name, context_value, readonly, hash, kind (docmem|session|memory|document|section|chunk)")

_ALLOWED = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}


def _view_sql(project_id: int) -> str:
    project = int(project_id)
    return f"""CREATE TEMP VIEW nodes AS
SELECT id, parent_id, content, order_value, token_count, created_at, updated_at, context_type, context_name,
       context_value, readonly, hash, 'docmem' AS kind
FROM main.docmem_nodes WHERE project_id = {project}
UNION ALL
SELECT v.id, COALESCE(p.parent_id, v.parent_id), v.content, COALESCE(p.order_value, v.order_value),
       v.token_count, v.created_at, v.updated_at, v.context_type, v.context_name, v.context_value,
       v.readonly, v.hash, v.kind
FROM ({virtual.union_sql(project)}) v LEFT JOIN main.docmem_placements p ON p.node_id = v.id"""


class _Authorizer:
    """Admits reading through the ``nodes`` view only, and remembers why it refused."""

    def __init__(self) -> None:
        self.refusal: str | None = None

    def __call__(self, action: int, table: str | None, _column: str | None, database: str | None,
                 view: str | None) -> int:
        # A READ names its database for tables ("main", or "temp" for the view itself) and
        # none for a CTE; reads done by the view's own definition carry view="nodes".
        through_view = view == "nodes" or database is None or (database == "temp" and table == "nodes")
        if action not in _ALLOWED:
            self.refusal = "only reading statements are allowed (SELECT or WITH ... SELECT); nothing is ever written"
        elif action == sqlite3.SQLITE_READ and not through_view:
            self.refusal = f"only the \"nodes\" view can be read, not {table!r}"
        else:
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY


def run(db_path: Path, project_id: int, sql: str, limit: int = DEFAULT_LIMIT, *,
        deadline_seconds: float = DEADLINE_SECONDS) -> tuple[list[dict[str, Any]], bool]:
    """The first ``limit`` rows of a SELECT over ``nodes``, and whether more rows were left out."""
    if not isinstance(sql, str) or not sql.strip():
        raise ValidationError(f"Write a SELECT statement against the \"nodes\" table. Columns: {COLUMNS_HELP}")
    conn = sqlite3.connect(Path(db_path).resolve().as_uri() + "?mode=ro", uri=True, isolation_level=None)
    try:
        conn.execute(_view_sql(project_id))
        authorizer = _Authorizer()
        conn.set_authorizer(authorizer)
        deadline = time.monotonic() + deadline_seconds
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        try:
            cursor = conn.execute(sql)
            if cursor.description is None:
                raise sqlite3.DatabaseError("the statement returns no rows")
            names = [d[0] for d in cursor.description]
            fetched = cursor.fetchmany(limit + 1)
        except (sqlite3.Error, sqlite3.Warning) as exc:
            reason = str(exc).rstrip(".")
            if "interrupt" in reason.lower():
                reason = f"it ran longer than {deadline_seconds:g} seconds"
            elif authorizer.refusal:
                reason = authorizer.refusal
            raise ValidationError(
                f"Query failed: {reason}. Write one SELECT statement against the \"nodes\" table. "
                f"Columns: {COLUMNS_HELP}"
            ) from None
    finally:
        conn.close()
    return [dict(zip(names, row)) for row in fetched[:limit]], len(fetched) > limit
