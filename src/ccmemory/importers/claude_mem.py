"""A claude-mem database (``~/.claude-mem/claude-mem.db``): its observations and session summaries.

The schema is claude-mem's (``src/services/sqlite/schema.sql`` and the migration runner):
``sdk_sessions`` (``content_session_id``: the Claude Code session; ``memory_session_id``: its
memory agent's; ``project``), ``observations`` (``type``, ``title``, ``subtitle``, ``narrative``,
``text``, ``facts``/``concepts``/``files_read``/``files_modified`` as JSON arrays,
``created_at_epoch`` in milliseconds) and ``session_summaries`` (``request``, ``investigated``,
``learned``, ``completed``, ``next_steps``, ``notes``, ``files_read``, ``files_edited``). Databases
from before claude-mem's migration 17 name the session columns ``claude_session_id`` and
``sdk_session_id``; both spellings are read.

claude-mem names a project by the base name of its directory, not its path, so a row's project
is, in order: ``--into-project``; the project ccmemory already holds the Claude Code session in;
the ``cwd`` of that session's transcript under Claude Code's ``projects`` folder; the one project
of ccmemory with that base name. Rows of a project none of these finds are counted and named in
the report.

The file is untrusted and never changed: it must be a regular file starting with SQLite's
header, it is opened read-only through a ``mode=ro`` URI (``immutable=1`` when no write-ahead log
is beside it, so no lock or journal file is touched), ``trusted_schema`` off, every query
bounded by a progress handler, text columns cut in SQL and at most :data:`MAX_ROWS` rows read.
A database that turns out corrupt stops the read with what was imported kept.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from typing import Any, Iterator
from urllib.parse import quote

from ..db import Database
from .. import paths, safe_files, transcript
from ..errors import ValidationError
from .base import Report, Writer, epoch_time

SOURCE = "claude-mem"
DEFAULT_PATH = os.path.join("~", ".claude-mem", "claude-mem.db")
MAX_ROWS = 200_000
#: Characters read of one text column (the memory is cut to the store's limit afterwards).
MAX_FIELD_CHARS = 20_000
#: SQLite virtual-machine steps allowed per query between two rows (a hostile view cannot spin forever).
MAX_STEPS = 50_000_000
#: Rows written per transaction.
BATCH = 500
_HEADER = b"SQLite format 3\x00"
#: claude-mem's observation types with a ccmemory category of the same meaning; the others are ``general``.
CATEGORIES = {"decision": "architecture", "bugfix": "gotcha", "refactor": "pattern"}
_SUMMARY_FIELDS = (("request", "Request"), ("investigated", "Investigated"), ("learned", "Learned"),
                   ("completed", "Completed"), ("next_steps", "Next steps"), ("notes", "Notes"))


class Source:
    """The claude-mem database at ``path``, open read-only; ValidationError when it is not one.

    Every query runs under a budget of :data:`MAX_STEPS` SQLite steps per row returned: a view
    or a corrupt page that makes a query spin ends it with :class:`sqlite3.OperationalError`.
    """

    def __init__(self, path: str) -> None:
        real = os.path.realpath(paths.expand_user(path))
        try:
            mode = os.stat(real).st_mode
        except OSError:
            raise ValidationError(f"No claude-mem database at {path}; give the path of claude-mem.db") from None
        if not stat.S_ISREG(mode):
            raise ValidationError(f"{path} is not a regular file; give the path of claude-mem.db")
        if safe_files.read_head(real, len(_HEADER)) != _HEADER:
            raise ValidationError(f"{path} is not an SQLite database; give the path of claude-mem.db")
        immutable = "" if os.path.exists(real + "-wal") else "&immutable=1"
        self.steps = 0
        self.connection = sqlite3.connect(f"file:{quote(real)}?mode=ro{immutable}", uri=True)
        try:
            self.connection.execute("PRAGMA trusted_schema = OFF")
            self.connection.execute("PRAGMA query_only = ON")
            self.connection.set_progress_handler(self._progress, 1000)
        except sqlite3.DatabaseError as exc:
            self.connection.close()
            raise ValidationError(f"{path} cannot be read as an SQLite database: {exc}") from None

    def _progress(self) -> int:
        self.steps += 1000
        return 1 if self.steps > MAX_STEPS else 0

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
        """The rows of one query, read one at a time, each within the step budget."""
        self.steps = 0
        cursor = self.connection.execute(sql, params)
        while True:
            self.steps = 0
            row = cursor.fetchone()
            if row is None:
                return
            yield row

    def columns(self, table: str) -> set[str]:
        """The columns of the table ``table`` (empty when there is no such table: a view is not read)."""
        kind = next(self.query("SELECT type FROM sqlite_master WHERE name = ?", (table,)), None)
        if kind is None or kind[0] != "table":
            return set()
        return {row[1] for row in self.query(f"PRAGMA table_info({table})")}

    def rows(self, table: str, wanted: tuple[str, ...], columns: set[str]) -> Iterator[dict[str, Any]]:
        """The rows of ``table`` by id: the wanted columns it has (text cut in SQL), the others None."""
        present = [name for name in wanted if name in columns]
        select = ", ".join(name if name in ("id", "created_at_epoch") else f"substr({name}, 1, {MAX_FIELD_CHARS})"
                           for name in present)
        for row in self.query(f"SELECT {select} FROM {table} ORDER BY id LIMIT {MAX_ROWS}"):
            values = dict(zip(present, row))
            yield {name: values.get(name) for name in wanted}

    def close(self) -> None:
        self.connection.close()


def _pick(columns: set[str], *names: str) -> str | None:
    return next((name for name in names if name in columns), None)


def _list(value: Any) -> list[str]:
    """A JSON array of strings as claude-mem stores them (``facts``, ``files_read``, …); anything else: empty."""
    if not isinstance(value, str) or not value.startswith("["):
        return []
    try:
        items = json.loads(value)
    except (ValueError, RecursionError):
        return []
    return [item for item in items if isinstance(item, str)] if isinstance(items, list) else []


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


class _Projects:
    """Which ccmemory project a claude-mem session's rows go to (see the module docstring)."""

    def __init__(self, writer: Writer, sessions: dict[str, str], into: str | None, config_dir: str | None) -> None:
        self.writer = writer
        self.sessions = sessions
        self.into = writer.project(into) if into else None
        self._cache: dict[tuple[str, str], int | None] = {}
        self._transcripts: dict[str, str] | None = None
        self._config_dir = config_dir

    def of(self, memory_session: str, name: str) -> int | None:
        if self.into is not None:
            return self.into
        key = (memory_session, name)
        if key not in self._cache:
            self._cache[key] = self._find(self.sessions.get(memory_session), name)
        return self._cache[key]

    def _find(self, content_session: str | None, name: str) -> int | None:
        db = self.writer.db
        if content_session:
            known = db.scalar("SELECT p.path FROM sessions s JOIN projects p ON p.id = s.project_id WHERE s.id = ?",
                              (content_session,))
            if known:
                return self.writer.project(known)
            cwd = self._transcript_cwd(content_session)
            if cwd:
                return self.writer.project(cwd)
        same = [row["path"] for row in db.rows("SELECT path FROM projects")
                if name and os.path.basename(row["path"]) == name]
        return self.writer.project(same[0]) if len(same) == 1 else None

    def _transcript_cwd(self, session_id: str) -> str | None:
        if self._transcripts is None:
            self._transcripts = {found.session_id: found.path for found in transcript.session_files(self._config_dir)}
        path = self._transcripts.get(session_id)
        if path is None:
            return None
        root = os.path.realpath(transcript.projects_dir(self._config_dir))
        try:
            for entry in transcript.entries(path, b'"cwd"', root=root, max_bytes=4 * 1024 * 1024):
                cwd = entry.get("cwd")
                if isinstance(cwd, str) and os.path.isabs(cwd) and "\0" not in cwd:
                    return cwd
        except (OSError, ValidationError):
            return None
        return None


def import_claude_mem(db: Database, report: Report, path: str = DEFAULT_PATH, *, into: str | None = None,
                      project_name: str | None = None, config_dir: str | None = None) -> None:
    """Import the observations and session summaries of the claude-mem database at ``path``.

    ``project_name`` keeps only the rows of that claude-mem project; ``into`` puts every row into
    that project directory's project.
    """
    writer = Writer(db, SOURCE, report)
    connection = Source(path)
    unplaced: dict[str, dict[str, int]] = {}
    try:
        try:
            sessions = _sessions(connection)
            projects = _Projects(writer, sessions, into, config_dir)
            observation_columns = connection.columns("observations")
            summary_columns = connection.columns("session_summaries")
            if not observation_columns and not summary_columns:
                raise ValidationError(f"{path} holds neither observations nor session_summaries: not a claude-mem "
                                      "database")
            for kind, columns, build in (("observation", observation_columns, _observation),
                                         ("summary", summary_columns, _summary)):
                if columns:
                    _import_table(writer, connection, kind, columns, build, projects, project_name, unplaced)
        except sqlite3.DatabaseError as exc:
            report.problem(path, f"the database could not be read further ({exc}); what was read before is kept")
    finally:
        connection.close()
    for name, counts in sorted(unplaced.items()):
        what = ", ".join(f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in sorted(counts.items()))
        report.skip(f"project {name!r}: {what}", "ccmemory cannot tell this project's directory (no session of it "
                    "here, no transcript of it); import it with --project-name NAME --into-project DIR")


def _sessions(connection: Source) -> dict[str, str]:
    """claude-mem's memory-agent session id -> the Claude Code session id, for every session."""
    columns = connection.columns("sdk_sessions")
    memory = _pick(columns, "memory_session_id", "sdk_session_id")
    content = _pick(columns, "content_session_id", "claude_session_id")
    if memory is None or content is None:
        return {}
    return {row[0]: row[1] for row in connection.query(
        f"SELECT substr({memory}, 1, 200), substr({content}, 1, 200) FROM sdk_sessions LIMIT {MAX_ROWS}")
        if isinstance(row[0], str) and isinstance(row[1], str)}


_OBSERVATION_COLUMNS = ("id", "project", "type", "title", "subtitle", "narrative", "text", "facts", "concepts",
                        "files_read", "files_modified", "created_at", "created_at_epoch")
_SUMMARY_COLUMNS = ("id", "project", "request", "investigated", "learned", "completed", "next_steps", "notes",
                    "files_read", "files_edited", "created_at", "created_at_epoch")


def _import_table(writer: Writer, connection: Source, kind: str, columns: set[str], build: Any,
                  projects: _Projects, project_name: str | None, unplaced: dict[str, dict[str, int]]) -> None:
    session_column = _pick(columns, "memory_session_id", "sdk_session_id")
    wanted = (*(_OBSERVATION_COLUMNS if kind == "observation" else _SUMMARY_COLUMNS), "session")
    if session_column is not None:
        columns = {*columns, "session"}
    rows = _rows_with_session(connection, kind, wanted, columns, session_column)
    done = 0
    while True:
        with writer.batch():
            for row in rows:
                _import_row(writer, kind, row, build, projects, project_name, unplaced)
                done += 1
                if done % BATCH == 0:
                    break
            else:
                return


def _rows_with_session(connection: Source, kind: str, wanted: tuple[str, ...], columns: set[str],
                       session_column: str | None) -> Iterator[dict[str, Any]]:
    table = "observations" if kind == "observation" else "session_summaries"
    if session_column is None:
        return connection.rows(table, wanted, columns)
    return connection.rows(f"(SELECT *, {session_column} AS session FROM {table})", wanted, columns)


def _import_row(writer: Writer, kind: str, row: dict[str, Any], build: Any, projects: _Projects,
                project_name: str | None, unplaced: dict[str, dict[str, int]]) -> None:
    name = _text(row["project"])[:200]
    if project_name is not None and name != project_name:
        return
    if not isinstance(row["id"], int):
        writer.report.problem(f"{kind} row", "it has no numeric id; not imported")
        return
    item = f"{kind}:{row['id']}:{row['created_at_epoch']}"
    session = row["session"] if isinstance(row["session"], str) else ""
    project = projects.of(session, name)
    if project is None:
        unplaced.setdefault(name or "(none)", {})
        unplaced[name or "(none)"][kind] = unplaced[name or "(none)"].get(kind, 0) + 1
        return
    content, category, tags, files = build(row)
    when = epoch_time(row["created_at_epoch"])
    metadata = {"claude_mem_project": name}
    if projects.sessions.get(session):
        metadata["claude_code_session"] = projects.sessions[session][:200]
    writer.add(project, item, content, when=when, category=category, tags=[kind, *tags], files=files,
               metadata=metadata, kind=kind)


def _observation(row: dict[str, Any]) -> tuple[str, str, list[str], list[str]]:
    kind = _text(row["type"])[:40]
    head = " — ".join(part for part in (_text(row["title"]), _text(row["subtitle"])) if part)
    facts = _list(row["facts"])
    parts = [head, _text(row["narrative"]) or _text(row["text"])]
    if facts:
        parts.append("\n".join(f"- {fact.strip()}" for fact in facts if fact.strip()))
    content = "\n\n".join(part for part in parts if part)
    return (content, CATEGORIES.get(kind, "general"), [kind, *_list(row["concepts"])],
            _list(row["files_read"]) + _list(row["files_modified"]))


def _summary(row: dict[str, Any]) -> tuple[str, str, list[str], list[str]]:
    lines = [f"{label}: {_text(row[name])}" for name, label in _SUMMARY_FIELDS if _text(row[name])]
    content = "Session summary (claude-mem)\n" + "\n".join(lines) if lines else ""
    return content, "general", ["session-summary"], _list(row["files_read"]) + _list(row["files_edited"])
