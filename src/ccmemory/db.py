"""One SQLite connection type for every layer, over either SQLite binding.

Hooks run from any ``python3`` and use the standard library's ``sqlite3``: it has
FTS5 and needs no extension to write a memory. The CLI and the MCP server use
``apsw`` when it is installed, because it can load sqlite-vec's ``vec0``
extension on Pythons whose ``sqlite3`` was built without extension loading
(this machine's CPython, many macOS and pyenv builds). Both open the same WAL
file; :class:`Database` hides the differences the rest of the code would see.

Different processes may use different bindings, but one process never opens the file
with both: apsw carries its own copy of SQLite, and two copies in one process do not
know each other's locks (POSIX locks belong to the process). A connection of the second
copy then finds the ``-shm`` file "unused" and truncates it under the first copy's memory
map, whose next read kills the process with SIGBUS; its close drops the first copy's
locks too. So all connections of a process pass the same ``vectors`` to :func:`connect`,
and a read-only one (:func:`connect_readonly`) takes the binding of the connection it sits beside.

SQLite's write lock is not fair. A writer that finds it taken sleeps in its busy handler, up to 100 ms
between tries, while a job that commits a batch and begins the next one at once takes the lock back within
microseconds: a job writing many batches back to back (a consolidation pass) kept a hook's capture waiting
until it ended, and a capture that waits past its budget is lost. So a writer that finds the lock taken says
it waits (a file in ``<db>-waiting/`` while it waits, :data:`WAITING_SUFFIX`), and such a job calls
:meth:`Database.give_way` between its batches: it takes the lock again only once no one waits.

Another process may change the schema while this one prepares a statement: the background embedder creates a
vector table the first time it indexes a store. SQLite reads the new schema and prepares again only once; a
statement naming a virtual table (the FTS5 index) fails with SQLITE_SCHEMA when a second change lands in
between, which a command started beside an import met. A statement that failed so ran nothing, so
:class:`Database` prepares it again (:func:`_while_schema_changes`).
"""

from __future__ import annotations

import os
import time

try:  # the C module itself: sqlite3's Python layer would import datetime, ~2.5 ms of every hook
    import _sqlite3 as sqlite3
except ImportError:  # an interpreter without CPython's extension module
    import sqlite3  # type: ignore[no-redef]
from contextlib import contextmanager

from . import paths
from .errors import StorageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Iterator, Sequence, Union

    Params = Union[Sequence[Any], Dict[str, Any]]

BUSY_TIMEOUT_MS = 10_000
_BUSY_RETRIES = 5
#: Tries at switching a new file to WAL while other processes do the same (~4 s in all).
_WAL_ATTEMPTS = 20
#: ``<db><suffix>/<pid>.<random>``: a writer waiting for the write lock (see the module docstring).
WAITING_SUFFIX = "-waiting"
#: What :meth:`Database.give_way` waits at most each time for the writers waiting to have had their turn:
#: a waiter stopped (SIGSTOP) or itself waiting behind another long writer slows a job, never stalls it.
GIVE_WAY_SECONDS = 2.0
#: A waiting writer gives up after its busy timeout, tried ``_BUSY_RETRIES`` times: a marker older than this
#: belongs to a process that is gone (or to a pid used again since), and is not waited for.
_WAITING_STALE_SECONDS = BUSY_TIMEOUT_MS / 1000 * _BUSY_RETRIES + 10
#: How long a statement whose preparation meets other processes' schema changes is tried again (see the module
#: docstring): a store's few changes end within milliseconds.
_SCHEMA_RETRY_SECONDS = 2.0


class Database:
    """A connection plus the few operations the store needs from it."""

    def __init__(self, conn: Any, binding: str, path: str) -> None:
        self.conn = conn
        self.binding = binding
        self.path = path
        self.vectors_loaded = False
        self.vector_error: str | None = None
        self._in_transaction = False

    def execute(self, sql: str, params: Params = ()) -> Any:
        """Run one statement and return the binding's cursor."""
        return _while_schema_changes(lambda: self.conn.execute(sql, params))

    def rows(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        """Run a query and return its rows as dicts keyed by column name."""
        return _while_schema_changes(lambda: self._rows(sql, params))

    def _rows(self, sql: str, params: Params) -> list[dict[str, Any]]:
        cursor = self.conn.execute(sql, params)
        try:
            names = [d[0] for d in cursor.description]
        except Exception:  # apsw raises when a statement returns no rows at all
            return []
        return [dict(zip(names, row)) for row in cursor.fetchall()]

    def one(self, sql: str, params: Params = ()) -> dict[str, Any] | None:
        """The first row of a query, or None."""
        found = self.rows(sql, params)
        return found[0] if found else None

    def scalar(self, sql: str, params: Params = ()) -> Any:
        """The first column of the first row, or None."""
        row = _while_schema_changes(lambda: self.conn.execute(sql, params).fetchone())
        return row[0] if row else None

    def changes(self) -> int:
        """Rows changed by the last INSERT/UPDATE/DELETE."""
        if self.binding == "apsw":
            return self.conn.changes()
        return self.conn.execute("SELECT changes()").fetchone()[0]

    @contextmanager
    def transaction(self) -> Iterator["Database"]:
        """A short write transaction (BEGIN IMMEDIATE), retried while the file is busy.

        Nested use joins the outer transaction, so core functions can be composed.
        """
        if self._in_transaction:
            yield self
            return
        try:
            self._begin()
        except Exception as exc:  # sqlite3.OperationalError or apsw.BusyError
            raise StorageError(
                f"The memory database {self.path} stayed locked: {exc}. "
                "Another ccmemory process holds it; try again in a moment."
            ) from exc
        self._in_transaction = True
        try:
            yield self
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        else:
            self.conn.execute("COMMIT")
        finally:
            self._in_transaction = False

    def _begin(self) -> None:
        """BEGIN IMMEDIATE; a writer that finds the write lock taken says it waits until it has the lock."""
        self._set_busy_timeout(0)
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            return
        except Exception as exc:
            if not _is_busy(exc):
                raise
        finally:
            self._set_busy_timeout(BUSY_TIMEOUT_MS)
        with _waiting(self.path):
            _while_busy(lambda: self.conn.execute("BEGIN IMMEDIATE"), _BUSY_RETRIES, 0.05)

    def _set_busy_timeout(self, milliseconds: int) -> None:
        if self.binding == "apsw":
            self.conn.set_busy_timeout(milliseconds)
        else:
            self.conn.execute(f"PRAGMA busy_timeout = {int(milliseconds)}")

    def waiting_writers(self) -> list[int]:
        """The pids of the connections waiting for the write lock (one entry per waiting connection)."""
        folder = _waiting_folder(self.path)
        if folder is None:
            return []
        try:
            names = os.listdir(folder)
        except OSError:
            return []
        from .locks import alive

        found = []
        for name in names:
            head = name.partition(".")[0]
            pid = int(head) if head.isdigit() else 0
            marker = os.path.join(folder, name)
            try:
                age = time.time() - os.lstat(marker).st_mtime
            except OSError:  # its writer took the lock meanwhile
                continue
            if not alive(pid):
                paths.remove_quietly(marker)
            elif age < _WAITING_STALE_SECONDS:
                found.append(pid)
        return found

    def give_way(self) -> None:
        """Let the writers waiting for the write lock have it before this connection takes it again: wait
        until none is left waiting, :data:`GIVE_WAY_SECONDS` at most. A job writing many batches calls it
        before each one, outside a transaction."""
        deadline = time.monotonic() + GIVE_WAY_SECONDS
        while self.waiting_writers() and time.monotonic() < deadline:
            time.sleep(0.002)

    def set_limit(self, category: int, value: int) -> None:
        """Set one of SQLite's run-time limits (``SQLITE_LIMIT_*``) of this connection."""
        if self.binding == "apsw":
            self.conn.limit(category, value)
        else:
            self.conn.setlimit(category, value)

    def errors(self) -> tuple[type[BaseException], ...]:
        """The exception classes a failing statement raises on this binding."""
        if self.binding == "apsw":
            import apsw

            return (apsw.Error,)
        return (sqlite3.Error, sqlite3.Warning)

    def close(self) -> None:
        """Close the connection; the WAL is checkpointed by the last closer."""
        self.conn.close()


@contextmanager
def _waiting(path: str) -> Iterator[None]:
    """Say, for the block, that this connection waits for the write lock of the database at ``path``
    (:meth:`Database.give_way`); not said where it cannot be (a read-only folder, a folder of that
    name that is a symlink or someone else's: a database put in a shared folder such as ``/tmp``)."""
    marker = None
    if path not in ("", ":memory:"):
        try:
            os.makedirs(path + WAITING_SUFFIX, mode=0o700, exist_ok=True)
            folder = _waiting_folder(path)
            if folder:
                name = os.path.join(folder, f"{os.getpid()}.{os.urandom(6).hex()}")
                os.close(os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
                marker = name
        except OSError:
            pass
    try:
        yield
    finally:
        if marker is not None:
            paths.remove_quietly(marker)


def _waiting_folder(path: str) -> str | None:
    """The folder where writers of the database at ``path`` say they wait, when it is a folder of this user's."""
    folder = path + WAITING_SUFFIX
    return folder if paths.own_folder(folder) else None


def unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` says the database cannot be written now rather than that the write was wrong: its write
    lock stayed taken past the retries, another process upgrades it, it cannot be opened or written (read-only,
    locked, a folder missing). Such a write may succeed later; capture keeps it meanwhile (:mod:`ccmemory.spill`)."""
    if isinstance(exc, StorageError):
        return True
    if type(exc).__module__ == "apsw":
        return type(exc).__name__ in ("BusyError", "LockedError", "CantOpenError", "ReadOnlyError", "IOError",
                                      "FullError")
    return isinstance(exc, sqlite3.OperationalError)


def _is_busy(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}".lower()
    return "busy" in text or "locked" in text


def _schema_changed(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLITE_SCHEMA: the schema changed while the statement was prepared."""
    if type(exc).__module__ == "apsw":
        return type(exc).__name__ == "SchemaChangeError"
    return getattr(exc, "sqlite_errorcode", None) == getattr(sqlite3, "SQLITE_SCHEMA", 17)


def _while_schema_changes(action: Callable[[], Any]) -> Any:
    """``action()``, tried again while another process's schema change makes its statement fail to prepare."""
    deadline = time.monotonic() + _SCHEMA_RETRY_SECONDS
    pause = 0.001
    while True:
        try:
            return action()
        except Exception as exc:
            if not _schema_changed(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.004)


def _while_busy(action: Callable[[], Any], attempts: int, pause: float) -> Any:
    """``action()``, tried again after a growing, jittered pause while SQLite says the file is busy."""
    attempt = 1
    while True:
        try:
            return action()
        except Exception as exc:
            if not _is_busy(exc) or attempt >= attempts:
                raise
            time.sleep(pause * attempt + pause * (time.perf_counter_ns() % 1000) / 1000)
            attempt += 1


def _wal_mode(db: Database) -> Any:
    """Switch to WAL, retried while busy: when several processes open a new file at once, SQLite answers
    all but one "database is locked" at once, without waiting (each holds a read lock and wants the
    write lock), so the busy timeout does not cover it."""
    return _while_busy(lambda: db.scalar("PRAGMA journal_mode = WAL"), _WAL_ATTEMPTS, 0.02)


def _configure(db: Database) -> None:
    db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    mode = _wal_mode(db)
    if str(mode).lower() != "wal":
        raise StorageError(f"Could not switch {db.path} to WAL mode (got {mode!r}); is it on a network drive?")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("PRAGMA foreign_keys = ON")


def _open_apsw(path: str) -> Database | None:
    try:
        import apsw
    except ImportError:
        return None
    conn = apsw.Connection(path)
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    return Database(conn, "apsw", path)


def _open_sqlite3(path: str) -> Database:
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    return Database(conn, "sqlite3", path)


def connect_readonly(path: str, binding: str) -> Database:
    """A read-only connection to an existing database, on ``binding`` (that of the process's other connections)."""
    if binding == "apsw":
        import apsw

        conn: Any = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    else:
        from urllib.parse import quote

        conn = sqlite3.connect(f"file:{quote(os.path.realpath(path))}?mode=ro", uri=True,
                               timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    return Database(conn, binding, path)


def connect(path: str | os.PathLike[str] | None = None, *, vectors: bool = False, migrate: bool = True) -> Database:
    """Open (and create and migrate, if needed) the memory database.

    ``vectors=False`` is the hook path: standard library only, nothing loaded.
    ``vectors=True`` prefers apsw and loads sqlite-vec; when either is missing the
    connection still works for everything but vector search, and
    ``vector_error`` says why (search then falls back to keywords). All connections
    of one process pass the same ``vectors`` (see above).
    """
    if path is None:
        path = paths.db_path()
        paths.ensure_private_dir(os.path.dirname(path))
    else:
        path = os.fspath(path)
        paths.private_parent(path)
    existed = os.path.exists(path)
    db = (_open_apsw(path) if vectors else None) or _open_sqlite3(path)
    try:
        if not existed:
            paths.make_private_file(path)
        _configure(db)
        if migrate:
            from .migrations import migrate as run_migrations

            run_migrations(db)
        if vectors:
            from .vectors import load_extension

            load_extension(db)
    except Exception:
        db.close()
        raise
    return db
