"""A row read from the team server, decoded and checked before anything of it is stored here.

The server is shared: any member writes rows every other member pulls, with their own client or
with ``psql``, and the server itself may be hostile. So no value of a row is trusted, and one bad
row must never stop a pull (a pull that fails at the same row every round never gets past it):

* **Decoding cannot fail in the driver.** Times are read as seconds since 1970 (a float: ``infinity``
  and the year 20000 are numbers too), metadata as JSON text (:data:`SERVER_COLUMNS`). Python decodes
  them here, one row at a time, with bounds: metadata at most :data:`MAX_ROW_METADATA_BYTES`, nested
  at most :data:`~ccmemory.memories.MAX_METADATA_DEPTH` levels inside its ``meta``, numbers of at most
  :data:`MAX_NUMBER_CHARS` characters.
* **Values are checked as ``ccmemory import`` checks a record** (:mod:`ccmemory.archive.fields`,
  ``archive.records._load_memory``): content at most :data:`~ccmemory.memories.MAX_CONTENT_CHARS`
  (a longer text is cut there), times no later than now (a later one is set to now, so no row pins
  itself to the top), salience at most :data:`~ccmemory.memories.MAX_SALIENCE`, metadata within the
  store's depth and size, the source a short lowercase word.
* **Reserved metadata keys keep the types the store's own writers give them** (:data:`RESERVED`):
  a ``knowledge`` that is not an object, say, is dropped, so no local reader meets a type it does
  not expect. Other keys are kept as they are (within the bounds above).

A row that fails a check raises :class:`Unusable` naming the row and why; the pull reports it,
leaves it out and moves on.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timezone
from typing import Any, Callable, Sequence

from .. import clock, memories
from ..archive import fields
from ..errors import ValidationError
from ..nesting import too_deep
from ..record_ids import is_record_id
from . import sharing

#: What a pull reads of a row: nothing the driver could fail to decode (times as seconds, metadata as text).
SERVER_COLUMNS = ("id, project, scope, owner, updated_seq, extract(epoch FROM created_at)::float8 AS created_at, "
                  "extract(epoch FROM updated_at)::float8 AS updated_at, deleted, superseded_by, sector, category, "
                  "source, content, metadata::text AS metadata, embedding::text AS embedding, embedding_model")
NAMES = ("id", "project", "scope", "owner", "updated_seq", "created_at", "updated_at", "deleted", "superseded_by",
         "sector", "category", "source", "content", "metadata", "embedding", "embedding_model")
#: A row's whole metadata (tags, files, tier, importance and the memory's own ``meta``) as JSON text.
MAX_ROW_METADATA_BYTES = fields.MAX_JSON_BYTES + 2 * fields.MAX_LIST_ITEMS * (fields.MAX_ITEM_CHARS + 8) + 4_096
#: Levels of the row's metadata: the memory's own metadata sits one level inside it (``meta``).
MAX_ROW_DEPTH = memories.MAX_METADATA_DEPTH + 1
#: Longest number in metadata (a float's 17 digits and exponent fit; a 400-digit integer does not).
MAX_NUMBER_CHARS = 40
#: Longest id (a memory's is a 36-character uuid; the server allows 64).
MAX_ID_CHARS = 64
#: Longest source (``capture``, ``summary``, ``knowledge``, ...), as import allows.
MAX_SOURCE_CHARS = 32
#: Longest vector as text (16,000 dimensions, pgvector's most, of some 25 characters each).
MAX_VECTOR_CHARS = 400_000
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")


class Unusable(ValidationError):
    """A server row this machine cannot store; the message says which and why."""


# --- decoding --------------------------------------------------------------------------------------------------

def decode(record: Sequence[Any]) -> dict[str, Any]:
    """A row read with :data:`SERVER_COLUMNS`, decoded and checked (:func:`checked`); raises :class:`Unusable`.

    ``synced_hash`` is the hash of what the row said before it was checked (:func:`hash_of`), so a row
    this machine pushed is recognised as its own version, even when the checks change a value of it.
    """
    row = dict(zip(NAMES, record))
    for name in ("created_at", "updated_at"):
        row[name] = timestamp(row[name], name, row.get("id"))
    row["metadata"] = _metadata_of(row["metadata"], row.get("id"))
    hashed = sharing.digest(row, row.get("embedding_model"))  # of the row as the server holds it (no echo)
    return {**checked(row), "synced_hash": hashed}


def timestamp(seconds: Any, name: str = "time", memory_id: Any = None) -> str:
    """Seconds since 1970 as the store writes times (``2026-11-22T02:40:00.123Z``); a year outside 1..9999,
    or ``infinity``, raises :class:`Unusable`."""
    try:
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
            raise ValueError
        moment = datetime.fromtimestamp(seconds, timezone.utc)
    except (ValueError, OverflowError, OSError):
        raise Unusable(f"memory {_shown(memory_id)}: its {name} ({_shown(seconds)}) is not a time this machine "
                       "can store") from None
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def loads(text: str, what: str, *, max_bytes: int = MAX_ROW_METADATA_BYTES, max_depth: int = MAX_ROW_DEPTH) -> Any:
    """JSON text read within bounds: its size, its nesting (counted before parsing, without recursion) and
    the length of each number; anything else raises :class:`Unusable` (never RecursionError or OverflowError)."""
    if len(text) > max_bytes or len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise Unusable(f"{what} is more than {max_bytes:,} bytes of JSON")
    if _text_depth(text) > max_depth:
        raise Unusable(f"{what} is nested more than {max_depth} levels deep")
    try:
        return json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except (ValueError, RecursionError, OverflowError) as error:
        raise Unusable(f"{what} is not JSON this machine reads ({_shown(str(error))})") from None


def refusal(metadata: dict[str, Any]) -> str | None:
    """Why the server would refuse a row with this metadata (migration 3's bounds), or None: never push one."""
    if too_deep(metadata, MAX_ROW_DEPTH):
        return f"its metadata is nested more than {MAX_ROW_DEPTH - 1} levels deep"
    try:
        size = len(json.dumps(metadata).encode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError):
        return "its metadata cannot be written as JSON"
    return f"its metadata is {size:,} bytes of JSON" if size > MAX_ROW_METADATA_BYTES else None


def _metadata_of(text: Any, memory_id: Any) -> dict[str, Any]:
    if text is None:
        return {}
    if not isinstance(text, str):
        raise Unusable(f"memory {_shown(memory_id)}: its metadata is not JSON text")
    value = loads(text, f"memory {_shown(memory_id)}: its metadata")
    if not isinstance(value, dict):
        raise Unusable(f"memory {_shown(memory_id)}: its metadata is not an object")
    return value


def _text_depth(text: str) -> int:
    """How deep objects and arrays nest in JSON text (strings set aside); no recursion."""
    depth = deepest = 0
    for match in _BRACKETS.finditer(_STRING.sub('""', text)):
        depth += 1 if match.group() in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def _int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(f"a number of {len(text):,} digits")
    return int(text)


def _float(text: str) -> float:
    value = float(text) if len(text) <= MAX_NUMBER_CHARS else math.inf
    if not math.isfinite(value):
        raise ValueError(f"a number out of range ({text[:20]}…)")
    return value


def _constant(text: str) -> Any:
    raise ValueError(f"{text} is not a JSON number")


def _shown(value: Any) -> str:
    return repr(value)[:60]


def hash_of(row: dict[str, Any]) -> str:
    """The row's ``synced_hash`` (a row parked by an older ccmemory has none: its hash is taken now)."""
    given = row.get("synced_hash")
    return given if isinstance(given, str) and given else sharing.digest(row, row.get("embedding_model"))


# --- checking --------------------------------------------------------------------------------------------------

def checked(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` (decoded: times in the store's format, metadata an object) made what the store accepts, as
    ``ccmemory import`` makes a record; raises :class:`Unusable` when it cannot be (the message names the row)."""
    memory_id = row.get("id")
    if not is_record_id(memory_id) or not 8 <= len(memory_id) <= MAX_ID_CHARS:
        raise Unusable(f"a row with the id {_shown(memory_id)}: not an id this machine stores")
    try:
        return _checked(row)
    except ValidationError as error:
        raise Unusable(f"memory {memory_id}: {error}") from None


def _checked(row: dict[str, Any]) -> dict[str, Any]:
    for name in ("owner", "project"):
        fields.text(row, name, max_chars=500, blank=False)
    fields.choice(row, "scope", ("personal", "team"))
    seq = row.get("updated_seq")
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 1:
        raise ValidationError(f"its change number {_shown(seq)} is not a positive whole number")
    deleted = fields.flag(row, "deleted")
    latest = clock.now()
    created, updated = (_time(row, name, latest) for name in ("created_at", "updated_at"))
    superseded = row.get("superseded_by")
    text = row.get("content")
    return {
        **row, "deleted": deleted, "created_at": min(created, updated), "updated_at": updated,
        "superseded_by": superseded if is_record_id(superseded) and len(superseded) <= MAX_ID_CHARS else None,
        "sector": _short(row.get("sector")), "category": _short(row.get("category")), "source": _source(row),
        "content": (text if isinstance(text, str) else "")[:memories.MAX_CONTENT_CHARS],
        "metadata": {} if deleted else metadata(row.get("metadata")),
        "embedding": _vector(row.get("embedding")) if isinstance(row.get("embedding_model"), str) else None,
        "embedding_model": row.get("embedding_model") if isinstance(row.get("embedding_model"), str) else None,
    }


def _time(row: dict[str, Any], name: str, latest: str) -> str:
    """A time in the store's format, set back to ``latest`` (now) when it is later."""
    value = row.get(name)
    if not isinstance(value, str) or not _TIME.fullmatch(value):
        raise ValidationError(f"its {name} {_shown(value)} is not a time in the store's format")
    return min(value, latest)


def _short(value: Any) -> str:
    """A sector or category: text of at most 100 characters, else "" (the store then picks one)."""
    return value if isinstance(value, str) and len(value) <= 100 else ""


def _source(row: dict[str, Any]) -> str:
    """The writer's name, a short lowercase word as ``ccmemory import`` wants it ("" from the server: ``sync``)."""
    source = fields.text(row, "source", max_chars=MAX_SOURCE_CHARS, required=False) or "sync"
    if not source.replace("_", "").replace("-", "").isalnum() or not source.isascii() or source != source.lower():
        raise ValidationError(f"its source {_shown(source)} is not a lowercase word")
    return source


def _vector(value: Any) -> str | None:
    """pgvector text of finite numbers, else None (the background pass embeds the text here)."""
    if not isinstance(value, str) or len(value) > MAX_VECTOR_CHARS or not value.startswith("["):
        return None
    try:
        numbers = [float(part) for part in value.strip("[]").split(",") if part.strip()]
    except ValueError:
        return None
    return value if numbers and all(math.isfinite(number) for number in numbers) else None


def metadata(value: Any) -> dict[str, Any]:
    """The row's metadata as the store's writers make it: tags and files lists of bounded strings, a tier,
    an importance from 0 to 1, and the memory's own metadata (``meta``) checked by :func:`own_metadata`."""
    given = value if isinstance(value, dict) else {}
    importance = given.get("importance")
    if isinstance(importance, bool) or not isinstance(importance, (int, float)) or not math.isfinite(importance):
        importance = memories.DEFAULT_SALIENCE
    return {"tags": _strings(given.get("tags")), "files": _strings(given.get("files")),
            "tier": given.get("tier") if given.get("tier") in ("session", "project") else "project",
            "importance": min(max(float(importance), 0.0), 1.0), "meta": own_metadata(given.get("meta"))}


def _strings(value: Any) -> list[str]:
    """At most :data:`~ccmemory.archive.fields.MAX_LIST_ITEMS` strings of at most ``MAX_ITEM_CHARS`` each."""
    if not isinstance(value, list):
        return []
    kept = [item for item in value if isinstance(item, str) and len(item) <= fields.MAX_ITEM_CHARS]
    return kept[:fields.MAX_LIST_ITEMS]


def own_metadata(value: Any) -> dict[str, Any]:
    """A memory's own metadata: an object within the store's depth and size (else :class:`ValidationError`),
    whose reserved keys (:data:`RESERVED`) have the types the store's writers give them (others are dropped)."""
    if not isinstance(value, dict):
        return {}
    kept = fields.json_object({"metadata": value}, "metadata")
    return {key: item for key, item in kept.items() if key not in RESERVED or RESERVED[key](item)}


# --- reserved metadata keys ------------------------------------------------------------------------------------

def _is(*types: type) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, types) and not (isinstance(value, bool) and bool not in types)


def _record(**shape: tuple[type, ...]) -> Callable[[Any], bool]:
    """An object whose keys named in ``shape``, when present and not null, have those types."""
    def check(value: Any) -> bool:
        return isinstance(value, dict) and all(
            value.get(key) is None or _is(*types)(value[key]) for key, types in shape.items())
    return check


def _seen(value: Any) -> bool:
    """``staleness.record``: path -> [size, modification time]."""
    return isinstance(value, dict) and all(
        isinstance(path, str) and isinstance(state, list) and len(state) == 2 and all(_is(int)(n) for n in state)
        for path, state in value.items())


_TEXT, _WHOLE, _FLAG = (str,), (int,), (bool,)
#: The metadata keys local readers act on, and the types their writers store (knowledge.indexer,
#: knowledge.discovery, knowledge.promotion, staleness, observations, consolidation, failures,
#: session_summary, scopes, sync's conflict copies). A reader of a new key adds it here.
RESERVED: dict[str, Callable[[Any], bool]] = {
    "knowledge": _record(file=_TEXT, anchor=_TEXT, heading=_TEXT, title=_TEXT, keywords=(list,), part=_WHOLE,
                         parts=_WHOLE),
    "discovery": _record(key=_TEXT, kind=_TEXT, complete=_FLAG),
    "promotion": _record(promoted=_FLAG, promoted_at=_TEXT, path=_TEXT),
    "evidence": _record(count=_WHOLE, first_seen=_TEXT, last_seen=_TEXT, sessions=_WHOLE, replaced=(list,)),
    "seen": _seen,
    **{key: _is(str) for key in ("scope", "tool", "command", "description", "outcome", "tool_use_id", "fixed_by",
                                 "method", "conflict_copy_of", "file")},
    **{key: _is(bool) for key in ("multiline", "user_scope_declined")},
}
