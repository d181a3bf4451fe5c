"""The memory store: add, read, list, delete, reinforce, de-emphasize, supersede, timeline.

Standard library only: the capture hook writes through :func:`add`. Every
function takes an open :class:`~ccmemory.db.Database`; writes are one short
transaction each.
"""

from __future__ import annotations

import json
import os
import re

from . import clock, scopes, sessions
from .db import Database
from .errors import NotFoundError, ValidationError
from .nesting import too_deep
from .redaction import redact, redact_fields
from .vocabulary import CATEGORIES, MANUAL_SOURCE, MEMORY_SCOPES, SECTORS, TIERS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable, Sequence

USAGE_TYPES = ("created", "recalled", "reinforced", "updated")
MAX_CONTENT_CHARS = 10_000
DEFAULT_LIST_LIMIT = 50
COUNT_CAP = 1_000
#: How a list treats deleted or superseded memories.
INCLUSION = ("exclude", "include", "only")
DEFAULT_SALIENCE = 0.5
#: How much one reinforcement raises a memory (of the distance left to 1) and one de-emphasis lowers it.
DEFAULT_REINFORCE_AMOUNT = 0.1
DEFAULT_DEEMPHASIZE_AMOUNT = 0.2
#: How many memories a timeline shows on each side of its anchor, and at most.
DEFAULT_TIMELINE_DEPTH = 5
MAX_TIMELINE_DEPTH = 100
MAX_SALIENCE = 0.999
#: The shortest id prefix looked up (like git's abbreviations); a unique one names its memory.
MIN_ID_PREFIX = 4
#: How many candidates an ambiguous prefix lists.
SHOWN_CANDIDATES = 5
#: Longer "ids" are not looked up (a uuid has 36 characters).
MAX_ID_CHARS = 64
#: Deepest nesting of stored metadata (objects and lists inside each other; the object itself is level 1).
#: What reads it back gives up far sooner than Python's json reads it: orjson (``--json``) at 255 levels.
MAX_METADATA_DEPTH = 32

class Memory:
    """One memory as stored; ``tags``, ``files`` and ``metadata`` are decoded.

    A plain class rather than a dataclass: importing :mod:`dataclasses` costs the
    capture hook more than the rest of its work.
    """

    FIELDS = ("seq", "id", "project_id", "session_id", "content", "sector", "tier", "category", "tags", "files",
              "importance", "salience", "reference_count", "last_accessed", "created_at", "updated_at",
              "valid_until", "is_deleted", "deleted_at", "source", "metadata", "scope")
    __slots__ = FIELDS

    seq: int
    id: str
    #: The project it was written in; a ``user`` scope memory is seen from every project (:mod:`ccmemory.scopes`).
    project_id: int
    session_id: str | None
    content: str
    sector: str
    tier: str
    category: str
    tags: list[str]
    files: list[str]
    importance: float
    salience: float
    reference_count: int
    last_accessed: str | None
    created_at: str
    updated_at: str
    valid_until: str | None
    is_deleted: bool
    deleted_at: str | None
    source: str
    metadata: dict[str, Any]
    scope: str

    @property
    def is_superseded(self) -> bool:
        return self.valid_until is not None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "Memory":
        memory = cls.__new__(cls)
        for name in cls.FIELDS:
            setattr(memory, name, row[name])
        memory.tags = json.loads(row["tags"] or "[]")
        memory.files = json.loads(row["files"] or "[]")
        memory.metadata = json.loads(row["metadata"] or "{}")
        memory.is_deleted = bool(row["is_deleted"])
        return memory

    def to_dict(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in self.FIELDS if name != "seq"}
        data["is_superseded"] = self.is_superseded
        return data

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Memory) and all(getattr(self, n) == getattr(other, n) for n in self.FIELDS)

    def __repr__(self) -> str:
        return f"Memory(id={self.id!r}, sector={self.sector!r}, content={self.content[:40]!r})"


#: The columns a :class:`Memory` is read from, in its field order.
_MEMORY_COLUMNS = ", ".join(Memory.FIELDS)


def new_id() -> str:
    """A random (version 4) UUID string, made without importing :mod:`uuid` (which imports platform)."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


_SECTOR_CUES = (
    ("emotional", r"\b(prefer|prefers|preferred|like|likes|love|loves|hate|hates|dislike|annoy\w*|frustrat\w*|happy|"
     r"unhappy|wants?|feel\w*)\b"),
    ("procedural", r"\b(how to|steps?|run|runs|install|build|deploy|command|workflow|first\b.*\bthen|always|never)\b"),
    ("reflective", r"\b(learned|lesson|realized|realised|in hindsight|insight|summary|takeaway|should have)\b"),
    ("episodic", r"\b(yesterday|today|this morning|earlier|just now|session|we fixed|i fixed|happened|ran)\b"),
)


def classify_sector(content: str) -> str:
    """A deterministic guess at the sector of a memory given without one."""
    text = content.lower()
    for sector, pattern in _SECTOR_CUES:
        if re.search(pattern, text):
            return sector
    return "semantic"


def _validate_content(content: Any) -> str:
    if content is None or (isinstance(content, str) and not content.strip()):
        raise ValidationError("Content is required")
    if not isinstance(content, str):
        raise ValidationError(f"Content must be text, got {type(content).__name__}")
    if len(content) > MAX_CONTENT_CHARS:
        raise ValidationError(
            f"Content exceeds maximum length of 10,000 characters ({len(content):,} given); "
            "split it into several memories or ingest it as a document"
        )
    return content


def _redacted_content(content: Any) -> str:
    """Valid content with private spans and secrets removed: the store never holds either."""
    content = redact(_validate_content(content))[:MAX_CONTENT_CHARS]
    if not content.strip():
        raise ValidationError("Nothing is left to store once <private> spans are removed")
    return content


def _redacted_metadata(metadata: Any) -> dict[str, Any] | None:
    """Metadata as stored: an object at most :data:`MAX_METADATA_DEPTH` levels deep whose strings (keys and
    values, at any depth) are redacted."""
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        raise ValidationError(f"Metadata must be an object, got {type(metadata).__name__}")
    if too_deep(metadata, MAX_METADATA_DEPTH):
        raise ValidationError(f"Metadata is nested more than {MAX_METADATA_DEPTH} levels deep (objects and lists "
                              "inside each other); store a flatter object")
    return redact_fields(metadata)


def _validate_choice(value: str, allowed: Sequence[str], what: str) -> str:
    if value not in allowed:
        raise ValidationError(f"Unknown {what} {value!r}; use one of: {', '.join(allowed)}")
    return value


def _validate_unit(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise ValidationError(f"{what} must be a number between 0 and 1, got {value!r}")
    return float(value)


def _string_list(values: Iterable[Any] | None, what: str) -> list[str]:
    if values is None:
        return []
    if isinstance(values, str):
        values = [part.strip() for part in values.split(",")]
    result: list[str] = []
    for value in values:
        if not isinstance(value, str):
            raise ValidationError(f"{what} must be strings, got {value!r}")
        value = redact(value.strip())
        if value and value not in result:
            result.append(value)
    return result


def normalize_category(category: str | None) -> str:
    """Seed rule: an unknown category becomes ``general`` rather than an error."""
    if not category:
        return "general"
    category = category.strip().lower()
    return category if category in CATEGORIES else "general"


def add(
    db: Database,
    *,
    project_id: int,
    content: str,
    sector: str | None = None,
    tier: str = "project",
    category: str | None = None,
    tags: Iterable[str] | None = None,
    files: Iterable[str] | None = None,
    importance: float | None = None,
    salience: float | None = None,
    session_id: str | None = None,
    source: str = MANUAL_SOURCE,
    metadata: dict[str, Any] | None = None,
    dedupe_key: str | None = None,
    created_at: str | None = None,
    scope: str = "project",
) -> Memory:
    """Store a memory and return it.

    ``created_at`` is when the remembered thing happened (an ISO-8601 date or
    date-time, see :func:`ccmemory.clock.parse`); it defaults to now. Imported
    history and benchmarks give the real time, so time-ordered views and time
    cues in queries see it.

    With a ``session_id`` the memory belongs to that session (its
    ``session_id`` is where it was created: no ``session_memories`` row repeats
    it); the session row is made if missing (see :mod:`ccmemory.sessions`).
    ``dedupe_key`` makes a retried write in the same session a no-op that
    returns the memory already stored.

    ``scope`` ``user`` stores it for every project (:mod:`ccmemory.scopes`): kept, so always at
    the project tier.
    """
    content = _redacted_content(content)
    sector = _validate_choice(sector, SECTORS, "sector") if sector else classify_sector(content)
    scope = scopes.check(scope, MEMORY_SCOPES)
    tier = "project" if scope == "user" else _validate_choice(tier, TIERS, "tier")
    importance = DEFAULT_SALIENCE if importance is None else _validate_unit(importance, "Importance")
    salience = importance if salience is None else _validate_unit(salience, "Salience")
    metadata = _redacted_metadata(metadata)
    now = clock.now()
    if created_at is None:
        happened = now
    else:
        try:
            happened = clock.parse(created_at)
        except ValueError as exc:
            raise ValidationError(f"created_at: {exc}") from None
    memory_id = new_id()
    with db.transaction():
        if session_id:
            sessions.ensure(db, session_id, project_id)
        db.execute(
            "INSERT OR IGNORE INTO memories(id, project_id, session_id, content, sector, tier, category, tags, files, "
            "importance, salience, created_at, updated_at, source, dedupe_key, metadata, scope) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                memory_id, project_id, session_id, content, sector, tier, normalize_category(category),
                _compact_json(_string_list(tags, "Tags")), _compact_json(_string_list(files, "Files")),
                importance, min(salience, MAX_SALIENCE), happened, now, source, dedupe_key if session_id else None,
                _compact_json(metadata or {}), scope,
            ),
        )
        if dedupe_key and session_id and db.changes() == 0:
            memory_id = db.scalar(
                "SELECT id FROM memories WHERE session_id = ? AND dedupe_key = ?", (session_id, dedupe_key)
            )
    return get(db, memory_id, project_id=project_id)


def _compact_json(value: Any) -> str:
    """JSON without the spaces after separators: every captured row stores its tags, files and metadata, and a
    memory rewritten in place stores them the same way (a summary rewritten at each Stop and one written once
    by a backfill hold the same bytes)."""
    return json.dumps(value, separators=(",", ":"))


def record_usage(db: Database, session_id: str, memory_ids: Sequence[str], usage_type: str) -> None:
    """Note in ``session_memories`` that a session recalled, reinforced or updated memories.

    The session a memory was created in is its ``session_id`` (:func:`add` writes no usage row for it).
    """
    _validate_choice(usage_type, USAGE_TYPES, "usage type")
    if db.scalar("SELECT 1 FROM sessions WHERE id = ?", (session_id,)):
        _link(db, session_id, memory_ids, usage_type)


def _link(db: Database, session_id: str, memory_ids: Sequence[str], usage_type: str) -> None:
    """Insert ``session_memories`` rows for a session known to exist."""
    now = clock.now()
    with db.transaction():
        for memory_id in memory_ids:
            db.execute(
                "INSERT OR IGNORE INTO session_memories(session_id, memory_id, usage_type, created_at) "
                "VALUES (?, ?, ?, ?)",
                (session_id, memory_id, usage_type, now),
            )


def _scope(project_id: int | None) -> tuple[str, tuple[Any, ...]]:
    """The SQL condition confining an id lookup to one project and the user-wide memories (None: every
    project, for admin tools and reads that ask for every project)."""
    if project_id is None:
        return "", ()
    if isinstance(project_id, bool) or not isinstance(project_id, int):
        raise ValidationError(f"project_id must be a project's number, got {project_id!r}")
    return " AND (project_id = ? OR scope = 'user')", (project_id,)


def resolve_id(db: Database, memory_id: str, *, project_id: int | None) -> str:
    """The full id of a memory of ``project_id`` (or a user-wide one) given its id or a unique prefix of at
    least 4 characters.

    A memory of another project is not found: ids never cross projects (user-wide memories belong
    to every project). A prefix that is too short or that starts several memories is refused with a
    :class:`ValidationError` saying so.
    """
    if not isinstance(memory_id, str) or not memory_id.strip():
        raise ValidationError("A memory id is required; find ids with memory_search or `ccmemory list`")
    memory_id = memory_id.strip()
    where, params = _scope(project_id)
    if len(memory_id) <= MAX_ID_CHARS and memory_id.isascii():  # ids are ASCII; other text is never one
        if db.scalar(f"SELECT 1 FROM memories WHERE id = ?{where}", (memory_id, *params)):
            return memory_id
        if len(memory_id) < MIN_ID_PREFIX:
            raise ValidationError(f"The id {memory_id!r} is too short: give at least {MIN_ID_PREFIX} characters "
                                  "of it (ids are shown by memory_search and `ccmemory list`)")
        found = [r["id"] for r in db.rows(
            f"SELECT id FROM memories WHERE substr(id, 1, ?) = ?{where} ORDER BY id LIMIT ?",
            (len(memory_id), memory_id, *params, SHOWN_CANDIDATES + 1))]
        if len(found) == 1:
            return found[0]
        if found:
            listed = ", ".join(found[:SHOWN_CANDIDATES]) + (", …" if len(found) > SHOWN_CANDIDATES else "")
            raise ValidationError(f"The id prefix {memory_id!r} is ambiguous: it starts {listed}. "
                                  "Give more characters of the id.")
    raise NotFoundError(
        f"No memory with id {memory_id[:60]!r} in this project. "
        "Find ids with memory_search, memory_list or `ccmemory list`."
    )


def why_not_found(db: Database, memory_id: str, *, project_id: int | None) -> str:
    """Why ``memory_id`` names no memory of ``project_id`` (not found, too short, ambiguous); "" when it does."""
    try:
        resolve_id(db, memory_id, project_id=project_id)
    except (NotFoundError, ValidationError) as exc:
        return str(exc)
    return ""


def get(db: Database, memory_id: str, *, project_id: int | None) -> Memory:
    """One memory of ``project_id`` by id (or unique id prefix); deleted ones included."""
    where, params = _scope(project_id)
    row = (db.one(f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id = ?{where}", (memory_id, *params))
           if isinstance(memory_id, str) and memory_id.isascii() else None)
    if row is None:
        full_id = resolve_id(db, memory_id, project_id=project_id)
        row = db.one(f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id = ?", (full_id,))
    assert row is not None
    return Memory.from_row(row)


def get_many(db: Database, memory_ids: Sequence[str], *, project_id: int | None) -> tuple[list[Memory], list[str]]:
    """The memories of ``project_id`` for a batch of ids, in the order asked, and the ids not found."""
    found: list[Memory] = []
    missing: list[str] = []
    for memory_id in memory_ids:
        try:
            found.append(get(db, memory_id, project_id=project_id))
        except (NotFoundError, ValidationError):
            missing.append(str(memory_id)[:MAX_ID_CHARS])
    return found, missing


def by_seq(db: Database, seqs: Sequence[int]) -> dict[int, Memory]:
    """Memories keyed by their row number (used by search to hydrate hits)."""
    if not seqs:
        return {}
    marks = ",".join("?" * len(seqs))
    rows = db.rows(f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE seq IN ({marks})", tuple(seqs))
    return {row["seq"]: Memory.from_row(row) for row in rows}


def _list_filters(
    *,
    project_id: int | None = None,
    scope: str | None = None,
    category: str | None = None,
    sector: str | None = None,
    tier: str | None = None,
    session_id: str | None = None,
    deleted: str = "exclude",
    superseded: str = "include",
) -> list[tuple[list[str], list[Any]]]:
    """The WHERE clauses and parameters of each part :func:`list_memories` and :func:`count_memories` read.

    One part, but for ``scope`` ``project``: the project's own rows (its index) and the user-wide
    memories of the other projects (their small index), each read in order, then merged.
    """
    if sector:
        _validate_choice(sector, SECTORS, "sector")
    if tier:
        _validate_choice(tier, TIERS, "tier")
    _validate_choice(deleted, INCLUSION, "deleted filter")
    _validate_choice(superseded, INCLUSION, "superseded filter")
    clauses, params = [], []  # type: list[str], list[Any]
    for column, value in (("category", category), ("sector", sector), ("tier", tier), ("session_id", session_id)):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value.strip().lower() if column == "category" and isinstance(value, str) else value)
    if category is not None and category.strip().lower() != "general":
        clauses.append("category <> 'general'")  # lets SQLite use the partial memories_category index
    clauses += {"exclude": ["is_deleted = 0"], "only": ["is_deleted = 1"], "include": []}[deleted]
    clauses += {"exclude": ["valid_until IS NULL"], "only": ["valid_until IS NOT NULL"], "include": []}[superseded]
    if scope is None or (scope == "project" and project_id is None):
        own = (["project_id = ?"], [project_id]) if project_id is not None else ([], [])
        return [(own[0] + clauses, own[1] + params)]
    if scopes.check(scope) == "project":
        return [(["project_id = ?", *clauses], [project_id, *params]),
                (["scope = 'user'", "project_id <> ?", *clauses], [project_id, *params])]
    return [((["scope = 'user'"] if scope == "user" else []) + clauses, params)]


_NEWEST_FIRST = "ORDER BY created_at DESC, seq DESC"


def list_memories(
    db: Database,
    *,
    project_id: int | None = None,
    scope: str | None = None,
    category: str | None = None,
    sector: str | None = None,
    tier: str | None = None,
    session_id: str | None = None,
    include_deleted: bool = False,
    include_superseded: bool = True,
    deleted: str | None = None,
    superseded: str | None = None,
    limit: int = DEFAULT_LIST_LIMIT,
    offset: int = 0,
    before: tuple[str, int] | None = None,
) -> list[Memory]:
    """Memories newest first. An unknown category gives an empty list, not an error.

    ``deleted`` and ``superseded`` (``exclude``, ``include`` or ``only``) override
    the two ``include_*`` flags. ``before`` is a keyset cursor, the
    ``(created_at, seq)`` of the last memory of the previous page: it walks the
    ``(project_id, created_at)`` index, so page 1,000 costs what page 1 does,
    where a large ``offset`` reads every row it skips.

    Without ``scope``, ``project_id`` lists that project's own rows (every project's when None);
    with one, what the scope covers (:func:`ccmemory.scopes.condition`), user-wide memories included.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValidationError(f"Limit must be a positive whole number, got {limit!r}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValidationError(f"Offset must be a whole number, 0 or more, got {offset!r}")
    parts = _list_filters(
        project_id=project_id, scope=scope, category=category, sector=sector, tier=tier, session_id=session_id,
        deleted=deleted or ("include" if include_deleted else "exclude"),
        superseded=superseded or ("include" if include_superseded else "exclude"),
    )
    selects, params = [], []  # type: list[str], list[Any]
    for clauses, values in parts:
        if before is not None:
            clauses = [*clauses, "(created_at, seq) < (?, ?)"]  # a row value: SQLite seeks the index to it
            values = [*values, before[0], before[1]]
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        selects.append(f"SELECT {_MEMORY_COLUMNS} FROM memories {where} {_NEWEST_FIRST}")
        params += values
    if len(selects) == 1:
        sql = f"{selects[0]} LIMIT ? OFFSET ?"
    else:  # each part walks its own index as far as the page needs, then the parts are merged
        sql = " UNION ALL ".join(f"SELECT * FROM ({select} LIMIT {limit + offset})" for select in selects)
        sql += f" {_NEWEST_FIRST} LIMIT ? OFFSET ?"
    return [Memory.from_row(row) for row in db.rows(sql, (*params, limit, offset))]


def count_memories(db: Database, *, cap: int = COUNT_CAP, **filters: Any) -> int:
    """How many memories :func:`list_memories` would list with these filters, counting at most ``cap``.

    ``filters`` are those of :func:`list_memories` (``project_id``, ``scope``, ``category``,
    ``sector``, ``tier``, ``session_id``, ``deleted``, ``superseded``). The cap bounds
    the work on a large store: a caller shows "1,000+" rather than reading 100k
    rows to print an exact number nobody pages through.
    """
    total = 0
    for clauses, params in _list_filters(**filters):
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        total += db.scalar(f"SELECT COUNT(*) FROM (SELECT 1 FROM memories {where} LIMIT ?)", (*params, cap))
    return min(total, cap)


def delete(db: Database, memory_id: str, *, project_id: int | None, hard: bool = False) -> dict[str, Any]:
    """Soft delete (restorable) or hard delete; an unknown id (or another project's) reports ``deleted: False``.

    A memory it superseded is shown again unless another live memory still supersedes it.
    """
    try:
        full_id = resolve_id(db, memory_id, project_id=project_id)
    except NotFoundError:
        return {"deleted": False, "id": str(memory_id)[:MAX_ID_CHARS], "reason": "Entry not found"}
    except ValidationError as exc:  # too short or ambiguous
        return {"deleted": False, "id": str(memory_id)[:MAX_ID_CHARS], "reason": str(exc)}
    if not hard and db.scalar("SELECT is_deleted FROM memories WHERE id = ?", (full_id,)):
        return {"deleted": False, "id": full_id, "reason": "already deleted"}
    with db.transaction():
        replaced = _superseded_targets(db, full_id)
        if hard:
            db.execute("DELETE FROM memories WHERE id = ?", (full_id,))
        else:
            db.execute(
                "UPDATE memories SET is_deleted = 1, deleted_at = ?, updated_at = ? WHERE id = ?",
                (clock.now(), clock.now(), full_id),
            )
        refresh_superseded(db, replaced)
    return {"deleted": True, "id": full_id, "hard": hard}


def restore(db: Database, memory_id: str, *, project_id: int | None) -> Memory:
    """Undo a soft delete; what it superseded is hidden again."""
    full_id = resolve_id(db, memory_id, project_id=project_id)
    with db.transaction():
        db.execute("UPDATE memories SET is_deleted = 0, deleted_at = NULL, updated_at = ? WHERE id = ?",
                   (clock.now(), full_id))
        refresh_superseded(db, _superseded_targets(db, full_id))
    return get(db, full_id, project_id=project_id)


def _superseded_targets(db: Database, memory_id: str) -> list[str]:
    return [r["target_id"] for r in db.rows(
        "SELECT target_id FROM memory_relationships WHERE source_id = ? AND relationship_type = 'SUPERSEDES'",
        (memory_id,))]


def refresh_superseded(db: Database, memory_ids: Sequence[str]) -> None:
    """A memory is superseded exactly while a live (not deleted) memory supersedes it."""
    now = clock.now()
    for memory_id in memory_ids:
        live = db.scalar(
            "SELECT 1 FROM memory_relationships r JOIN memories m ON m.id = r.source_id "
            "WHERE r.target_id = ? AND r.relationship_type = 'SUPERSEDES' AND m.is_deleted = 0 LIMIT 1",
            (memory_id,))
        if live:
            db.execute("UPDATE memories SET valid_until = COALESCE(valid_until, ?) WHERE id = ?", (now, memory_id))
        else:
            db.execute("UPDATE memories SET valid_until = NULL WHERE id = ?", (memory_id,))


def reinforce(db: Database, memory_id: str, amount: float = DEFAULT_REINFORCE_AMOUNT, *, project_id: int | None,
              session_id: str | None = None) -> Memory:
    """Raise salience by ``amount`` of the distance left to 1: diminishing, never reaching 1."""
    amount = _validate_unit(amount, "Amount")
    memory = get(db, memory_id, project_id=project_id)
    salience = min(memory.salience + amount * (1.0 - memory.salience), MAX_SALIENCE)
    with db.transaction():
        db.execute("UPDATE memories SET salience = ?, last_accessed = ?, updated_at = ? WHERE id = ?",
                   (salience, clock.now(), clock.now(), memory.id))
        if session_id:
            record_usage(db, session_id, [memory.id], "reinforced")
    return get(db, memory.id, project_id=project_id)


def deemphasize(db: Database, memory_id: str, amount: float = DEFAULT_DEEMPHASIZE_AMOUNT, *, project_id: int | None) -> Memory:
    """Lower salience by ``amount`` of its current value: never below 0."""
    amount = _validate_unit(amount, "Amount")
    memory = get(db, memory_id, project_id=project_id)
    with db.transaction():
        db.execute("UPDATE memories SET salience = ?, updated_at = ? WHERE id = ?",
                   (memory.salience * (1.0 - amount), clock.now(), memory.id))
    return get(db, memory.id, project_id=project_id)


def rewrite(db: Database, memory_id: str, content: str, *, project_id: int | None,
            files: Iterable[str] | None = None, metadata: dict[str, Any] | None = None,
            tags: Iterable[str] | None = None, sector: str | None = None, salience: float | None = None) -> bool:
    """Replace a memory's text (and optionally files, metadata, tags, sector, salience) in place.

    Returns False when nothing changed. FTS follows by trigger; a changed text
    drops the memory's vector by trigger, so it is embedded again.
    """
    content = _redacted_content(content)
    memory = get(db, memory_id, project_id=project_id)
    new_files = memory.files if files is None else _string_list(files, "Files")
    new_metadata = memory.metadata if metadata is None else _redacted_metadata(metadata)
    new_tags = memory.tags if tags is None else _string_list(tags, "Tags")
    new_sector = memory.sector if sector is None else _validate_choice(sector, SECTORS, "sector")
    new_salience = memory.salience if salience is None else min(_validate_unit(salience, "Salience"), MAX_SALIENCE)
    if (content, new_files, new_metadata, new_tags, new_sector, new_salience) == (
            memory.content, memory.files, memory.metadata, memory.tags, memory.sector, memory.salience):
        return False
    # Only a changed text is written: writing ``content`` at all fires the trigger that drops the vector.
    text_part = "content = ?, " if content != memory.content else ""
    with db.transaction():
        db.execute(f"UPDATE memories SET {text_part}files = ?, metadata = ?, tags = ?, sector = ?, salience = ?, "
                   "updated_at = ? WHERE id = ?",
                   ((content,) if text_part else ()) + (_compact_json(new_files), _compact_json(new_metadata),
                                                        _compact_json(new_tags), new_sector, new_salience,
                                                        clock.now(), memory.id))
    return True


def set_scope(db: Database, memory_id: str, scope: str, *, project_id: int | None) -> Memory:
    """Make a memory user-wide (seen from every project, kept at the project tier) or its project's alone.

    A user-wide memory given back goes to the project it was written in. Either answer settles a
    proposal (:func:`ccmemory.scopes.propose`): ``project`` declines it for good.
    """
    scope = scopes.check(scope, MEMORY_SCOPES)
    memory = get(db, memory_id, project_id=project_id)
    metadata = dict(memory.metadata)
    if metadata.pop(scopes.PROPOSED, None) is not None and scope == "project":
        metadata[scopes.DECLINED] = True
    with db.transaction():
        db.execute("UPDATE memories SET scope = ?, tier = CASE WHEN ? = 'user' THEN 'project' ELSE tier END, "
                   "metadata = ?, updated_at = ? WHERE id = ?",
                   (scope, scope, _compact_json(metadata), clock.now(), memory.id))
    return get(db, memory.id, project_id=None)


def promote(db: Database, session_id: str, min_salience: float) -> int:
    """Move a session's session-tier memories with salience above ``min_salience`` to the project tier."""
    with db.transaction():
        db.execute(
            "UPDATE memories SET tier = 'project', updated_at = ? "
            "WHERE session_id = ? AND tier = 'session' AND salience > ? AND is_deleted = 0",
            (clock.now(), session_id, min_salience),
        )
        return db.changes()


def demote(db: Database, memory_ids: Sequence[str]) -> int:
    """Move these memories back to the session tier (a user-wide one stays at the project tier, as it must)."""
    if not memory_ids:
        return 0
    marks = ",".join("?" * len(memory_ids))
    with db.transaction():
        db.execute(f"UPDATE memories SET tier = 'session', updated_at = ? WHERE id IN ({marks}) "
                   "AND tier = 'project' AND scope <> 'user'", (clock.now(), *memory_ids))
        return db.changes()


def supersede(db: Database, old_memory_id: str, new_memory_id: str, *,
              project_id: int | None) -> tuple[Memory, Memory]:
    """Record that a newer memory replaces an older one.

    The old memory keeps its content, gets ``valid_until`` and a SUPERSEDES
    link from the new one; default search hides it, timeline and history keep it.
    """
    old = get(db, old_memory_id, project_id=project_id)
    new = get(db, new_memory_id, project_id=project_id)
    if old.id == new.id:
        raise ValidationError("A memory cannot supersede itself; pass two different ids")
    if old.is_deleted or new.is_deleted:
        raise ValidationError("Deleted memories cannot take part in supersede; restore them first")
    if db.scalar("SELECT 1 FROM memory_relationships WHERE source_id = ? AND target_id = ? "
                 "AND relationship_type = 'SUPERSEDES'", (old.id, new.id)):
        raise ValidationError(f"{old.id} already supersedes {new.id}; a memory cannot supersede its replacement")
    now = clock.now()
    with db.transaction():
        db.execute(
            "INSERT OR IGNORE INTO memory_relationships(source_id, target_id, relationship_type, created_at) "
            "VALUES (?, ?, 'SUPERSEDES', ?)",
            (new.id, old.id, now),
        )
        db.execute("UPDATE memories SET valid_until = COALESCE(valid_until, ?), updated_at = ? WHERE id = ?",
                   (now, now, old.id))
    return get(db, old.id, project_id=project_id), get(db, new.id, project_id=project_id)


def superseded_by(db: Database, memory_ids: Sequence[str]) -> dict[str, str]:
    """For each superseded memory among ``memory_ids``, the id of its newest replacement."""
    if not memory_ids:
        return {}
    marks = ",".join("?" * len(memory_ids))
    rows = db.rows(
        f"SELECT target_id, source_id FROM memory_relationships WHERE relationship_type = 'SUPERSEDES' "
        f"AND target_id IN ({marks}) ORDER BY created_at",
        tuple(memory_ids),
    )
    return {row["target_id"]: row["source_id"] for row in rows}


def replaces(db: Database, memory_id: str) -> list[str]:
    """The ids of the memories this one supersedes."""
    return [row["target_id"] for row in db.rows(
        "SELECT target_id FROM memory_relationships WHERE source_id = ? AND relationship_type = 'SUPERSEDES' "
        "ORDER BY created_at", (memory_id,))]


def related_counts(db: Database, memory_ids: Sequence[str]) -> dict[str, int]:
    """How many relationships touch each memory."""
    if not memory_ids:
        return {}
    marks = ",".join("?" * len(memory_ids))
    rows = db.rows(
        f"SELECT id, COUNT(*) AS n FROM (SELECT source_id AS id FROM memory_relationships WHERE source_id IN ({marks}) "
        f"UNION ALL SELECT target_id FROM memory_relationships WHERE target_id IN ({marks})) GROUP BY id",
        (*memory_ids, *memory_ids),
    )
    return {row["id"]: row["n"] for row in rows}


def latest_seq(db: Database) -> int:
    """The row number of the newest memory of any project (0 for none): new memories have larger ones."""
    return db.scalar("SELECT MAX(seq) FROM memories") or 0


def touch_references(db: Database, memory_ids: Sequence[str], *, session_id: str | None = None) -> None:
    """Count a search hit: ``reference_count`` + 1 and ``last_accessed`` now."""
    if not memory_ids:
        return
    now = clock.now()
    marks = ",".join("?" * len(memory_ids))
    with db.transaction():
        db.execute(
            f"UPDATE memories SET reference_count = reference_count + 1, last_accessed = ? WHERE id IN ({marks})",
            (now, *memory_ids),
        )
        if session_id:
            record_usage(db, session_id, memory_ids, "recalled")


def timeline(db: Database, anchor_id: str, *, project_id: int | None, before: int = DEFAULT_TIMELINE_DEPTH,
             after: int = DEFAULT_TIMELINE_DEPTH) -> dict[str, Any]:
    """The memories of the anchor's project just before and after it, with their sessions.

    Superseded memories stay in the timeline (they are history); deleted ones do not. Seen from
    another project, a user-wide anchor has only user-wide neighbours and no sessions: the project
    it was written in stays its own.
    """
    for value, what in ((before, "depth_before"), (after, "depth_after")):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TIMELINE_DEPTH:
            raise ValidationError(f"{what} must be a whole number from 0 to {MAX_TIMELINE_DEPTH}, got {value!r}")
    anchor = get(db, anchor_id, project_id=project_id)
    foreign = project_id is not None and anchor.project_id != project_id
    place, where = ("scope = 'user'", ()) if foreign else ("project_id = ?", (anchor.project_id,))
    cols = _MEMORY_COLUMNS
    earlier = db.rows(
        f"SELECT {cols} FROM memories WHERE {place} AND is_deleted = 0 AND (created_at < ? OR "
        f"(created_at = ? AND seq < ?)) ORDER BY created_at DESC, seq DESC LIMIT ?",
        (*where, anchor.created_at, anchor.created_at, anchor.seq, before),
    )
    later = db.rows(
        f"SELECT {cols} FROM memories WHERE {place} AND is_deleted = 0 AND (created_at > ? OR "
        f"(created_at = ? AND seq > ?)) ORDER BY created_at, seq LIMIT ?",
        (*where, anchor.created_at, anchor.created_at, anchor.seq, after),
    )
    before_list = [Memory.from_row(r) for r in reversed(earlier)]
    after_list = [Memory.from_row(r) for r in later]
    session_ids = []
    for memory in (*before_list, anchor, *after_list):
        if memory.session_id and memory.session_id not in session_ids and not foreign:
            session_ids.append(memory.session_id)
    return {"anchor": anchor, "before": before_list, "after": after_list,
            "sessions": sessions.get_sessions(db, session_ids)}


def stats(db: Database, project_id: int | None = None) -> dict[str, Any]:
    """Counts for ``ccmemory stats``: by sector, tier, deleted, superseded and pending embeddings."""
    where, params = ("WHERE project_id = ?", (project_id,)) if project_id is not None else ("", ())
    totals = db.one(
        f"SELECT COUNT(*) AS total, SUM(is_deleted) AS deleted, SUM(valid_until IS NOT NULL) AS superseded "
        f"FROM memories {where}", params,
    ) or {}
    by_sector = {r["sector"]: r["n"] for r in db.rows(
        f"SELECT sector, COUNT(*) AS n FROM memories {where} GROUP BY sector", params)}
    by_tier = {r["tier"]: r["n"] for r in db.rows(
        f"SELECT tier, COUNT(*) AS n FROM memories {where} GROUP BY tier", params)}
    return {
        "memories": totals.get("total") or 0,
        "deleted": totals.get("deleted") or 0,
        "superseded": totals.get("superseded") or 0,
        "by_sector": by_sector,
        "by_tier": by_tier,
        "sessions": db.scalar(f"SELECT COUNT(*) FROM sessions {where}", params),
        "documents": db.scalar(f"SELECT COUNT(*) FROM documents {where}", params),
        "projects": db.scalar("SELECT COUNT(*) FROM projects"),
        "user_wide": db.scalar("SELECT COUNT(*) FROM memories WHERE scope = 'user' AND is_deleted = 0"),
    }
