"""Read-only SQL over a project's docmem nodes (``docmem_query_nodes``).

The query runs on its own connection opened read-only (on the binding of the
caller's connection: one process never opens the file with two copies of SQLite,
see :mod:`ccmemory.db`), against a temporary ``nodes`` view holding the project's
docmem nodes and its virtual ones (with their summary placements). An authorizer admits only reading statements, so a
query cannot write. It cannot hang the server or flood the client either:

* a deadline interrupts SQLite itself (a progress handler every 1,000 VM steps and a
  timer calling ``interrupt()``), so a runaway query stops within its deadline;
* no value may exceed :data:`MAX_VALUE_BYTES` (SQLite's length limit: ``printf('%.*c', 1e9, 'x')``
  or ``zeroblob(1e9)`` fail at once instead of allocating a gigabyte);
* the SQL text is at most :data:`MAX_SQL_CHARS`, rows at most :data:`MAX_LIMIT`, and the whole
  answer at most :data:`MAX_RESULT_CHARS` (longer values are cut with a note; blobs are shown
  as their size).
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
import time
from typing import Any

from .. import db as database
from ..errors import ValidationError
from . import virtual

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
DEADLINE_SECONDS = 5.0
MAX_SQL_CHARS = 10_000
MAX_VALUE_BYTES = 1_000_000
MAX_RESULT_CHARS = 200_000
_PROGRESS_STEPS = 1_000
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


def run(db: database.Database, project_id: int, sql: str, limit: int = DEFAULT_LIMIT, *,
        deadline_seconds: float = DEADLINE_SECONDS) -> tuple[list[dict[str, Any]], bool]:
    """The first ``limit`` rows of a SELECT over ``nodes`` in ``db``'s file, and whether more rows were left out."""
    if not isinstance(sql, str) or not sql.strip():
        raise ValidationError(f"Write a SELECT statement against the \"nodes\" table. Columns: {COLUMNS_HELP}")
    if len(sql) > MAX_SQL_CHARS:
        raise ValidationError(f"The query is {len(sql):,} characters; at most {MAX_SQL_CHARS:,} are accepted.")
    limit = max(1, min(int(limit), MAX_LIMIT))
    reader = database.connect_readonly(db.path, db.binding)
    failures: tuple[type[BaseException], ...] = (*reader.errors(), OverflowError, MemoryError)
    conn = reader.conn
    timer = threading.Timer(deadline_seconds, conn.interrupt)
    try:
        reader.set_limit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        reader.set_limit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_SQL_CHARS * 4)
        conn.execute(_view_sql(project_id))
        authorizer = _Authorizer()
        conn.set_authorizer(authorizer)
        deadline = time.monotonic() + deadline_seconds
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), _PROGRESS_STEPS)
        timer.start()
        try:
            cursor = conn.execute(sql)
            names = _column_names(cursor)
            # sqlite3 refuses a second statement; apsw goes on to it, through the same authorizer and limit
            fetched = list(itertools.islice(cursor, limit + 1)) if names else []
        except failures as exc:
            reason = str(exc).rstrip(".")
            # Past the deadline, whatever the message: an interrupt that lands while SQLite prepares the
            # statement can surface as another error (e.g. "expected 0 columns" for the nodes view).
            if "interrupt" in reason.lower() or time.monotonic() >= deadline:
                reason = f"it ran longer than {deadline_seconds:g} seconds"
            elif "too big" in reason.lower() or isinstance(exc, (OverflowError, MemoryError)):
                reason = f"a value would exceed {MAX_VALUE_BYTES:,} bytes"
            elif authorizer.refusal:
                reason = authorizer.refusal
            raise ValidationError(
                f"Query failed: {reason}. Write one SELECT statement against the \"nodes\" table. "
                f"Columns: {COLUMNS_HELP}"
            ) from None
    finally:
        timer.cancel()
        reader.close()
    rows = _bounded_rows(names, fetched[:limit])
    return rows, len(fetched) > len(rows)


def _column_names(cursor: Any) -> list[str]:
    """The result's column names; [] when a SELECT has already finished without a row (apsw then has none).

    A statement that returns no rows at all is refused.
    """
    try:
        description = cursor.description
    except Exception:  # apsw.ExecutionCompleteError: the statement ran to its end at once
        return []
    if description is None:  # sqlite3: not a statement that returns rows
        raise sqlite3.DatabaseError("the statement returns no rows")
    return [d[0] for d in description]


def _bounded_rows(names: list[str], rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """Rows as dicts whose text fits :data:`MAX_RESULT_CHARS` in all; blobs become their size."""
    budget = MAX_RESULT_CHARS
    result: list[dict[str, Any]] = []
    for row in rows:
        record: dict[str, Any] = {}
        for name, value in zip(names, row):
            if isinstance(value, bytes):
                value = f"[blob, {len(value):,} bytes]"
            if isinstance(value, str):
                room = max(budget // max(len(names), 1), 200)
                if len(value) > room:
                    value = f"{value[:room]}[… {len(value) - room:,} more characters]"
                budget -= len(value)
            record[name] = value
        result.append(record)
        if budget <= 0:
            break
    return result
