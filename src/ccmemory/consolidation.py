"""Consolidation (``ccmemory consolidate``): merge repeated observations, fold old routine ones, decay unused ones.

A pass works on captured observations (source ``capture``) only, without a model, in three steps:

* **merge**: live observations of one project that record the same thing (the same shell command
  with the same outcome, the same file read, or texts equal once whitespace, numbers and paths are
  set aside; an edit also needs the same files) become one. The newest of a group survives with
  ``metadata.evidence`` = ``{"count", "first_seen", "last_seen", "sessions", "replaced"}`` summed
  over the group, ``replaced`` being ``[id, created_at, session_id]`` of the newest
  :data:`MAX_EVIDENCE` members it replaced; the other members are deleted (row, text, vector).
* **fold**: observations older than ``consolidation.fold_after_days`` whose session has a summary
  are folded into it: the summary gains one "Folded" line naming them (head lines, so keyword
  search still finds the session; a merge survivor as "N× head") and the rows go, text and
  vector. Never folded: failures (and calls that fixed one), edits, a command the summary names,
  project-tier (promoted) ones, user-wide ones, and anything recalled by a search or reinforced.
* **thin**: a file written (``Write``) longer ago than ``consolidation.fold_after_days`` keeps its
  first lines (what was written where, :data:`THIN_CHARS`) and loses the copy of the file's text
  it carried, which the file itself holds (or has long replaced). Same exceptions as folding.
* **decay**: an observation never retrieved loses salience with age, ``importance × 0.5^(age /
  half-life)``, down to a quarter of its importance (idempotent: computed from the importance).

Every change is written with what it replaced, in the same transaction, to ``consolidation_undo``
(zlib-compressed JSON, one row per batch; between two batches, writers waiting for the lock, such as
a hook's capture, go first): a pass killed half way leaves whole batches, each undoable, and
``--undo`` (:func:`undo`) puts back every row it touched exactly (vectors included; they are re-added
to the vector index). A pass killed half way is resumed by the next one, which
adds to its log, so one undo still restores the store as it was before it. Only the latest pass
keeps its log, and for ``consolidation.undo_days`` (7) after it finished (:func:`expire_undo`, run
by the background's checks and by ``--undo``): the next pass drops it, and so do ``gc`` and the storage
budget when they delete memories for good (past that point an undo would bring back a store that
never existed). A pass that freed enough ends with the keyword index merged and the file vacuumed
(:func:`ccmemory.retention.compact`). An undone pass pauses background passes until one is run by
hand (:func:`run_if_due`).
"""

from __future__ import annotations

import base64
import calendar
import json
import os
import re
import time
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from . import clock, config as settings, paths, retention, storage
from .db import Database
from .errors import NotFoundError
from .excerpts import cut
from .observations import FAILED, metadata_of, shown_command, tool_of
from .vocabulary import CAPTURE_SOURCE, FILE_CHANGING_TOOLS, SUMMARY_SOURCE

#: ``meta`` key holding when the last pass finished.
LAST_PASS_KEY = "consolidation.last_pass"
#: Examples of each kind of change a report shows.
EXAMPLES = 5
#: Changes written per transaction (one undo row each): short, so hooks writing meanwhile wait little (the
#: pass lets them in between two batches).
BATCH = 200
#: A background pass stops after this many changed rows; the next idle tick goes on.
BACKGROUND_MAX_CHANGES = 20_000
#: Salience never decays below this share of a memory's importance.
DECAY_FLOOR = 0.25
#: A decay smaller than this is not written (it would only grow the undo log).
DECAY_STEP = 0.01
MAX_DIGEST_CHARS = 1200
#: Members a survivor's ``evidence.replaced`` names (the newest); ``count`` counts them all.
MAX_EVIDENCE = 10
#: What an old file write keeps of its text (whole lines, the first one always).
THIN_CHARS = 300
#: Tools whose old observations are thinned.
THINNED_TOOLS = ("Write",)
#: A pass ends with :func:`ccmemory.retention.compact` when its free pages are at least this share of the file
COMPACT_SHARE = 0.2
#: ... and at least this many bytes.
COMPACT_MIN_BYTES = 1_000_000

_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_PATH = re.compile(r"(?:[\w.~-]*/)+[\w.-]*")


@dataclass
class Merge:
    """One group of repeated observations: the survivor (newest) and the members it replaces."""

    project_id: int
    what: str
    survivor: int
    replaced: list[int]
    evidence: dict[str, Any]


@dataclass
class Fold:
    """A session's old routine observations and the line its summary gains."""

    session_id: str
    summary_seq: int
    folded: list[int]
    digest: str
    #: Members of ``folded`` that this pass's merges make survivors (they gain evidence first).
    survivors: list[int] = field(default_factory=list)


@dataclass
class Plan:
    merges: list[Merge] = field(default_factory=list)
    folds: list[Fold] = field(default_factory=list)
    #: (seq, salience now, salience after)
    decays: list[tuple[int, float, float]] = field(default_factory=list)
    #: (seq, the text it keeps)
    thins: list[tuple[int, str]] = field(default_factory=list)
    examples: dict[str, list[str]] = field(default_factory=lambda: {"merged": [], "folded": [], "thinned": [],
                                                                    "decayed": []})

    def changes(self) -> int:
        return (sum(len(m.replaced) + 1 for m in self.merges) + sum(len(f.folded) + 1 for f in self.folds)
                + len(self.decays) + len(self.thins))


@dataclass
class Report:
    """What a pass did (or, dry, would do)."""

    dry_run: bool
    pass_id: int | None = None
    merged_groups: int = 0
    merged_rows: int = 0
    folded_rows: int = 0
    folded_sessions: int = 0
    thinned: int = 0
    decayed: int = 0
    complete: bool = True
    examples: dict[str, list[str]] = field(default_factory=dict)
    bytes_before: int = 0
    bytes_after: int = 0
    compacted: bool = False
    resumed: bool = False
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


# ---------------------------------------------------------------------------------------------- planning

def _normal(text: str, *, paths: bool) -> str:
    """Text with whitespace collapsed and numbers (and, with ``paths``, paths) replaced by placeholders."""
    text = _PATH.sub("<path>", text) if paths else text
    return " ".join(_NUMBER.sub("#", text).split())


def merge_key(content: str, files: str, metadata: dict[str, Any]) -> str:
    """What two observations must share to be merged (see the module docstring)."""
    tool = tool_of(metadata)
    outcome = "failed" if metadata.get("outcome") == FAILED else "ok"
    command = metadata.get("command")
    if tool == "Bash" and isinstance(command, str):
        return f"Bash\0{' '.join(command.split())}\0{outcome}"
    if tool == "Read":
        return f"Read\0{files}\0{outcome}"
    if tool in FILE_CHANGING_TOOLS:
        return f"{tool}\0{files}\0{_normal(content, paths=False)}"
    return f"{tool}\0{_normal(content, paths=True)}\0{outcome}"


def _head(content: str) -> str:
    return cut(content.split("\n", 1)[0], 160)


def _protected_ids(db: Database, where: str, params: tuple[Any, ...]) -> set[str]:
    """Ids of the observations a search recalled or someone reinforced: consolidation leaves them alone."""
    return {r["memory_id"] for r in db.rows(
        "SELECT DISTINCT sm.memory_id FROM session_memories sm JOIN memories m ON m.id = sm.memory_id "
        f"WHERE sm.usage_type IN ('recalled', 'reinforced') AND m.source = ? {where}", (CAPTURE_SOURCE, *params))}


def _epoch(stamp: str) -> float:
    """Seconds since the epoch of one of the store's UTC timestamps."""
    return calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S"))


def _age_days(created_at: str, now: float) -> float:
    return max(0.0, (now - _epoch(created_at)) / 86400)


def plan(db: Database, *, project_id: int | None, loaded: settings.Config | None = None,
         max_changes: int | None = None) -> Plan:
    """What a pass would change, read only; ``max_changes`` bounds it (a background pass)."""
    loaded = loaded or settings.load()
    fold_after = loaded.get("consolidation", "fold_after_days")
    half_life = loaded.get("consolidation", "decay_half_life_days")
    now = _epoch(clock.now())
    result = Plan()
    project_ids = [project_id] if project_id is not None else \
        [r["id"] for r in db.rows("SELECT id FROM projects ORDER BY id")]
    for project in project_ids:
        _plan_project(db, project, result, fold_after=fold_after, half_life=half_life, now=now)
        if max_changes is not None and result.changes() >= max_changes:
            break
    return result


def _plan_project(db: Database, project_id: int, result: Plan, *, fold_after: int, half_life: int,
                  now: float) -> None:
    protected = _protected_ids(db, "AND m.project_id = ?", (project_id,))
    rows = db.rows(
        "SELECT seq, id, session_id, content, category, files, metadata, created_at, importance, salience, "
        "reference_count, tier FROM memories WHERE project_id = ? AND source = ? AND is_deleted = 0 "
        "AND valid_until IS NULL AND scope = 'project' ORDER BY seq", (project_id, CAPTURE_SOURCE))
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        row["meta"] = metadata_of(row["metadata"])
        if row["id"] in protected or row["reference_count"]:
            row["kept"] = True
            continue
        groups.setdefault(merge_key(row["content"], row["files"], row["meta"]), []).append(row)
    merged: set[int] = set()
    for members in groups.values():
        if len(members) < 2:
            continue
        members.sort(key=lambda r: (r["created_at"], r["seq"]))
        survivor = members[-1]
        count = sum(int((m["meta"].get("evidence") or {}).get("count", 1)) for m in members)
        first = min((m["meta"].get("evidence") or {}).get("first_seen", m["created_at"]) for m in members)
        sessions = {m["session_id"] for m in members}
        replaced: list[list[Any]] = []
        for member in members[:-1]:
            replaced += (member["meta"].get("evidence") or {}).get("replaced", [])
            replaced.append([member["id"], member["created_at"], member["session_id"]])
        replaced += (survivor["meta"].get("evidence") or {}).get("replaced", [])
        replaced.sort(key=lambda entry: str(entry[1]))
        evidence = {"count": count, "first_seen": first, "last_seen": survivor["created_at"],
                    "sessions": max(len(sessions), max(int((m["meta"].get("evidence") or {}).get("sessions", 1))
                                                       for m in members)),
                    "replaced": replaced[-MAX_EVIDENCE:]}
        result.merges.append(Merge(project_id, _head(survivor["content"]), survivor["seq"],
                                   [m["seq"] for m in members[:-1]], evidence))
        merged.update(m["seq"] for m in members[:-1])
        survivor["count"] = count
        if len(result.examples["merged"]) < EXAMPLES:
            result.examples["merged"].append(f"{count}× {_head(survivor['content'])}")
    _plan_folds(db, project_id, rows, merged, result, fold_after=fold_after, now=now)
    for row in rows:
        if row.get("kept") or row["seq"] in merged or "count" in row:
            continue
        kept = thinned(row["content"])
        if (kept is not None and tool_of(row["meta"]) in THINNED_TOOLS and not row.get("folded")
                and row["tier"] == "session" and row["category"] != "gotcha"
                and _age_days(row["created_at"], now) > fold_after):
            result.thins.append((row["seq"], kept))
            if len(result.examples["thinned"]) < EXAMPLES:
                result.examples["thinned"].append(f"{len(row['content'])} -> {len(kept)} characters: "
                                                  f"{_head(row['content'])}")
        target = row["importance"] * max(DECAY_FLOOR, 0.5 ** (_age_days(row["created_at"], now) / half_life))
        if target < row["salience"] - DECAY_STEP and not row.get("folded"):
            result.decays.append((row["seq"], row["salience"], round(target, 4)))
            if len(result.examples["decayed"]) < EXAMPLES:
                result.examples["decayed"].append(f"{row['salience']:.2f} -> {target:.2f}: {_head(row['content'])}")


def thinned(content: str) -> str | None:
    """What an old file write keeps of ``content`` (:data:`THIN_CHARS`), None when it is short enough already."""
    if len(content) <= THIN_CHARS + 100:
        return None
    head = content[:THIN_CHARS]
    if "\n" in head:  # whole lines, the first one at least
        head = head[:head.rfind("\n")]
    return f"{head}\n[{len(content) - len(head)} characters of the file dropped by consolidation]"


def foldable(row: dict[str, Any], summary: str) -> bool:
    """Whether an old observation may be folded into its session's summary (see the module docstring)."""
    meta = row["meta"]
    tool = tool_of(meta)
    if (row.get("kept") or row["tier"] != "session" or row["category"] == "gotcha" or meta.get("outcome") == FAILED
            or meta.get("fixed_by") or tool in FILE_CHANGING_TOOLS):
        return False
    if tool == "Bash":
        command = shown_command(meta, marked=False)[:100]
        return not command or command not in summary
    return _head(row["content"]) not in summary


def _folded_head(row: dict[str, Any]) -> str:
    """How a folded observation is named in its session's summary: a merge survivor with its count."""
    count = row.get("count") or int((row["meta"].get("evidence") or {}).get("count", 1))
    return f"{count}× {_head(row['content'])}" if count > 1 else _head(row["content"])


def _plan_folds(db: Database, project_id: int, rows: list[dict[str, Any]], merged: set[int], result: Plan, *,
                fold_after: int, now: float) -> None:
    by_session: dict[str, list[dict[str, Any]]] = {}
    for row in rows:  # a survivor is as old as its newest member: its own row
        if row["session_id"] and row["seq"] not in merged and _age_days(row["created_at"], now) > fold_after:
            by_session.setdefault(row["session_id"], []).append(row)
    if not by_session:
        return
    summaries = {r["session_id"]: r for r in db.rows(
        "SELECT seq, session_id, content FROM memories WHERE project_id = ? AND source = ? AND is_deleted = 0",
        (project_id, SUMMARY_SOURCE))}
    for session_id, candidates in by_session.items():
        summary = summaries.get(session_id)
        if summary is None:
            continue
        chosen = [row for row in candidates if foldable(row, summary["content"])]
        if not chosen:
            continue
        for row in chosen:
            row["folded"] = True
        heads = list(dict.fromkeys(_folded_head(row) for row in chosen))
        shown, length = [], 0
        for head in heads:
            if length + len(head) > MAX_DIGEST_CHARS:
                break
            shown.append(head)
            length += len(head) + 2
        more = f" (+{len(heads) - len(shown)} more)" if len(heads) > len(shown) else ""
        digest = (f"Folded ({clock.now()[:10]}; {len(chosen)} routine call{'s' if len(chosen) != 1 else ''}, "
                  f"their text dropped): " + "; ".join(shown) + more)
        result.folds.append(Fold(session_id, summary["seq"], [row["seq"] for row in chosen], digest,
                                 [row["seq"] for row in chosen if "count" in row]))
        if len(result.examples["folded"]) < EXAMPLES:
            result.examples["folded"].append(f"{len(chosen)} from session {session_id[:8]}: {'; '.join(heads[:3])}")


# ---------------------------------------------------------------------------------------------- applying

class _Log:
    """What one batch changes, as it was before: written with the batch, in its transaction."""

    def __init__(self, db: Database, pass_id: int) -> None:
        self.db = db
        self.pass_id = pass_id
        self.entry: dict[str, Any] = {"updated": [], "deleted": [], "embeddings": [], "links": [], "usage": [],
                                      "sessions": [], "salience": []}

    def row(self, seq: int, kind: str, *, vector: bool = False) -> dict[str, Any] | None:
        """Save a memory row before changing it; its vector too when it is deleted or its text changes
        (``vector``), and its links and usage when it is deleted."""
        row = self.db.one("SELECT * FROM memories WHERE seq = ? AND is_deleted = 0", (seq,))
        if row is None:
            return None
        self.entry[kind].append(row)
        if kind == "deleted" or vector:
            for saved in self.db.rows("SELECT id, item_seq, part, model, vector FROM memory_embeddings WHERE item_seq = ?",
                                      (seq,)):
                self.entry["embeddings"].append({**saved, "vector": base64.b64encode(saved["vector"]).decode()})
        if kind == "deleted":
            self.entry["links"] += self.db.rows(
                "SELECT * FROM memory_relationships WHERE source_id = ? OR target_id = ?", (row["id"], row["id"]))
            self.entry["usage"] += self.db.rows("SELECT * FROM session_memories WHERE memory_id = ?", (row["id"],))
        return row

    def write(self) -> None:
        data = zlib.compress(json.dumps(self.entry, separators=(",", ":")).encode(), 6)
        self.db.execute("INSERT INTO consolidation_undo(pass_id, data) VALUES (?, ?)", (self.pass_id, data))


def _apply_logged(db: Database, pass_id: int, items: Sequence[Any], size: int,
                  apply: Callable[[Database, _Log, Any], object]) -> None:
    """``apply`` each item, ``size`` to a transaction that also writes their undo log: a pass killed half way
    leaves only whole, undoable batches. Between two batches, writers waiting for the lock (a hook's capture)
    go first (:meth:`ccmemory.db.Database.give_way`)."""
    for start in range(0, len(items), size):
        db.give_way()
        with db.transaction():
            log = _Log(db, pass_id)
            for item in items[start:start + size]:
                apply(db, log, item)
            log.write()


def _apply_thin(db: Database, log: _Log, thin: tuple[int, str]) -> None:
    seq, kept = thin
    if log.row(seq, "updated", vector=True) is not None:
        db.execute("UPDATE memories SET content = ? WHERE seq = ?", (kept, seq))


def _apply_decay(db: Database, log: _Log, decay: tuple[int, float, float]) -> None:
    seq, before, after = decay
    db.execute("UPDATE memories SET salience = ? WHERE seq = ? AND is_deleted = 0", (after, seq))
    log.entry["salience"].append([seq, before])


def _delete(db: Database, log: _Log, seq: int) -> bool:
    """Delete one memory for good, its vector, links and usage with it, saved to the log first."""
    if log.row(seq, "deleted") is None:
        return False
    db.execute("DELETE FROM memory_embeddings WHERE item_seq = ?", (seq,))
    db.execute("DELETE FROM memories WHERE seq = ?", (seq,))
    return True


def _apply_merge(db: Database, log: _Log, merge: Merge) -> None:
    survivor = log.row(merge.survivor, "updated")
    if survivor is None:
        return
    metadata = metadata_of(survivor["metadata"])
    metadata["evidence"] = merge.evidence
    db.execute("UPDATE memories SET metadata = ? WHERE seq = ?",
               (json.dumps(metadata, separators=(",", ":")), merge.survivor))
    for seq in merge.replaced:
        _delete(db, log, seq)


def _apply_fold(db: Database, log: _Log, fold: Fold) -> int:
    summary = log.row(fold.summary_seq, "updated", vector=True)
    if summary is None:
        return 0
    done = sum(_delete(db, log, seq) for seq in fold.folded)
    if done:
        text = cut(summary["content"] + "\n" + fold.digest, 10_000)
        session = db.one("SELECT id, summary FROM sessions WHERE id = ?", (fold.session_id,))
        if session is not None:
            log.entry["sessions"].append(session)
            db.execute("UPDATE sessions SET summary = ? WHERE id = ?", (text, fold.session_id))
        db.execute("UPDATE memories SET content = ? WHERE seq = ?", (text, fold.summary_seq))
    return done


def _interrupted(db: Database) -> int | None:
    """The id of the latest pass when it was killed half way (neither finished nor undone): the next one resumes it."""
    last = latest_pass(db)
    return int(last["id"]) if last is not None and not last["finished_at"] and not last["undone_at"] else None


def _free_bytes(db: Database) -> tuple[int, int]:
    """Bytes of free pages in the file and the file's bytes (pages), after a checkpoint."""
    db.rows("PRAGMA wal_checkpoint(PASSIVE)")
    size = int(db.scalar("PRAGMA page_size"))
    return int(db.scalar("PRAGMA freelist_count")) * size, int(db.scalar("PRAGMA page_count")) * size


def consolidate(db: Database, *, project_id: int | None, dry_run: bool = False, trigger: str = "manual",
                loaded: settings.Config | None = None, max_changes: int | None = None) -> Report:
    """Run one pass (or, ``dry_run``, only say what it would do) over a project (None: every project)."""
    started = time.monotonic()
    report = Report(dry_run=dry_run, bytes_before=storage.database_bytes(db.path))
    found = plan(db, project_id=project_id, loaded=loaded, max_changes=max_changes)
    report.merged_groups = len(found.merges)
    report.merged_rows = sum(len(m.replaced) for m in found.merges)
    report.folded_rows = sum(len(f.folded) for f in found.folds)
    report.folded_sessions = len(found.folds)
    report.decayed = len(found.decays)
    report.thinned = len(found.thins)
    report.examples = found.examples
    if dry_run:
        report.bytes_after = report.bytes_before
        report.seconds = time.monotonic() - started
        return report
    now = clock.now()
    with db.transaction():
        resumed = _interrupted(db)
        if resumed is None:
            db.execute("DELETE FROM consolidation_undo")
            db.execute("INSERT INTO consolidation_passes(started_at, trigger) VALUES (?, ?)", (now, trigger))
            report.pass_id = int(db.scalar("SELECT last_insert_rowid()"))
        else:
            report.pass_id, report.resumed = resumed, True
    _apply_logged(db, report.pass_id, found.merges, 20, _apply_merge)
    _apply_logged(db, report.pass_id, found.folds, 20, _apply_fold)
    _apply_logged(db, report.pass_id, found.thins, BATCH, _apply_thin)
    _apply_logged(db, report.pass_id, found.decays, 2000, _apply_decay)
    report.complete = max_changes is None or found.changes() < max_changes
    free, size = _free_bytes(db)
    if free >= COMPACT_MIN_BYTES and free >= COMPACT_SHARE * size:
        retention.compact(db)
        report.compacted = True
    report.seconds = time.monotonic() - started
    report.bytes_after = storage.database_bytes(db.path)
    with db.transaction():
        db.execute("UPDATE consolidation_passes SET finished_at = ?, report = ? WHERE id = ?",
                   (clock.now(), json.dumps(report.to_dict()), report.pass_id))
        if report.complete:
            db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (LAST_PASS_KEY, clock.now()))
    return report


# ---------------------------------------------------------------------------------------------- undo

def latest_pass(db: Database) -> dict[str, Any] | None:
    """The newest pass: id, started_at, finished_at, trigger, report (decoded), undone_at."""
    row = db.one("SELECT * FROM consolidation_passes ORDER BY id DESC LIMIT 1")
    if row is not None:
        row["report"] = json.loads(row["report"] or "{}")
    return row


def undo_kept_until(db: Database, loaded: settings.Config) -> str | None:
    """When the latest finished pass's undo log is dropped (``consolidation.undo_days`` after it finished); None
    when there is no log to keep (no pass, undone, or still running: a pass killed half way keeps its log for
    the next one to resume)."""
    last = latest_pass(db)
    if last is None or not last["finished_at"] or last["undone_at"]:
        return None
    if not db.scalar("SELECT 1 FROM consolidation_undo LIMIT 1"):
        return None
    until = _epoch(last["finished_at"]) + loaded.get("consolidation", "undo_days") * 86400
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(until)) + last["finished_at"][19:]


def expire_undo(db: Database, loaded: settings.Config) -> bool:
    """Drop the undo log once it is older than ``consolidation.undo_days`` (:func:`undo_kept_until`); whether it
    was dropped. The log costs about as much as what the pass deleted: kept for ever, a pass would not shrink
    the store."""
    until = undo_kept_until(db, loaded)
    if until is None or until > clock.now():
        return False
    with db.transaction():
        db.execute("DELETE FROM consolidation_undo")
    return True


def undo(db: Database, loaded: settings.Config | None = None) -> dict[str, Any]:
    """Put back every row the latest pass changed, exactly as it was; NotFoundError when there is nothing to undo."""
    loaded = loaded or settings.load()
    expire_undo(db, loaded)
    last = latest_pass(db)
    if last is None or last["undone_at"] or not db.scalar(
            "SELECT 1 FROM consolidation_undo WHERE pass_id = ? LIMIT 1", (last["id"],)):
        raise NotFoundError("No consolidation pass to undo: only the latest pass can be undone, once, within "
                            f"consolidation.undo_days ({loaded.get('consolidation', 'undo_days')}) days of it, and "
                            "not after `gc` or the storage budget deleted memories for good (`ccmemory consolidate "
                            "--dry-run` shows what a pass would do).")
    restored = 0
    columns: list[str] = [r["name"] for r in db.rows("PRAGMA table_info(memories)")]
    while True:
        db.give_way()
        with db.transaction():
            step = db.one("SELECT step, data FROM consolidation_undo WHERE pass_id = ? ORDER BY step DESC LIMIT 1",
                          (last["id"],))
            if step is None:
                break
            restored += _restore(db, json.loads(zlib.decompress(step["data"])), columns)
            db.execute("DELETE FROM consolidation_undo WHERE step = ?", (step["step"],))
    with db.transaction():
        db.execute("UPDATE consolidation_passes SET undone_at = ? WHERE id = ?", (clock.now(), last["id"]))
    return {"pass_id": last["id"], "started_at": last["started_at"], "restored_rows": restored}


def _restore(db: Database, entry: dict[str, Any], columns: list[str]) -> int:
    for seq, salience in entry["salience"]:
        db.execute("UPDATE memories SET salience = ? WHERE seq = ?", (salience, seq))
    marks = ", ".join("?" * len(columns))
    for row in entry["deleted"]:
        db.execute(f"INSERT INTO memories({', '.join(columns)}) VALUES ({marks})", tuple(row[c] for c in columns))
    others = [c for c in columns if c not in ("seq", "content")]
    for row in entry["updated"]:
        current = db.scalar("SELECT content FROM memories WHERE seq = ?", (row["seq"],))
        if current != row["content"]:  # its trigger drops the vector: put back below
            db.execute("UPDATE memories SET content = ? WHERE seq = ?", (row["content"], row["seq"]))
        db.execute(f"UPDATE memories SET {', '.join(f'{c} = ?' for c in others)} WHERE seq = ?",
                   (*(row[c] for c in others), row["seq"]))
    for vector in entry["embeddings"]:  # indexed = 0: the vector index takes it back in at its next sync
        db.execute("INSERT OR REPLACE INTO memory_embeddings(id, item_seq, part, model, vector, indexed) "
                   "VALUES (?, ?, ?, ?, ?, 0)", (vector["id"], vector["item_seq"], vector["part"], vector["model"],
                                                base64.b64decode(vector["vector"])))
    for link in entry["links"]:
        db.execute("INSERT OR IGNORE INTO memory_relationships(id, source_id, target_id, relationship_type, "
                   "created_at) VALUES (?, ?, ?, ?, ?)",
                   (link["id"], link["source_id"], link["target_id"], link["relationship_type"], link["created_at"]))
    for usage in entry["usage"]:
        db.execute("INSERT OR IGNORE INTO session_memories(session_id, memory_id, usage_type, created_at) "
                   "VALUES (?, ?, ?, ?)", (usage["session_id"], usage["memory_id"], usage["usage_type"],
                                           usage["created_at"]))
    for session in entry["sessions"]:
        db.execute("UPDATE sessions SET summary = ? WHERE id = ?", (session["summary"], session["id"]))
    return len(entry["deleted"]) + len(entry["updated"]) + len(entry["salience"])


# ---------------------------------------------------------------------------------------------- background

def lock_path() -> str:
    """The lock one pass at a time holds, whichever process runs it."""
    return os.path.join(paths.data_dir(), "consolidate.lock")


def is_due(db: Database, loaded: settings.Config) -> bool:
    """Whether the background should run a pass: enabled, the interval passed, the latest pass not undone."""
    if not loaded.get("consolidation", "enabled"):
        return False
    last = latest_pass(db)
    if last is not None and last["undone_at"]:
        return False
    stamp = db.scalar("SELECT value FROM meta WHERE key = ?", (LAST_PASS_KEY,))
    if stamp is None:
        return True
    return _age_days(stamp, _epoch(clock.now())) * 24 >= loaded.get("consolidation", "interval_hours")


def run_if_due(db: Database, loaded: settings.Config | None = None) -> Report | None:
    """A bounded background pass over every project, then the storage budget, when due and no other
    process runs one (:func:`lock_path`); None when nothing ran."""
    from . import budget, locks

    loaded = loaded or settings.load()
    expire_undo(db, loaded)
    if not is_due(db, loaded):
        return None
    try:
        with locks.held(lock_path(), command="consolidate"):
            if not is_due(db, loaded):  # another process finished one while this one looked
                return None
            report = consolidate(db, project_id=None, trigger="background", loaded=loaded,
                                 max_changes=BACKGROUND_MAX_CHANGES)
            if report.complete:
                budget.enforce(db, loaded)
            return report
    except locks.Busy:
        return None
