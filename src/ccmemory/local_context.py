"""The rolling local context of a working directory, kept by ccmemory from what the hooks saw.

An entry is one turn that did something: when it happened, what was asked, and
the files, commands, decisions and errors of that turn (built by
:mod:`ccmemory.activity` at Stop). The log is condensed as it grows, by
three rules:

1. the newest :data:`DETAILED` (20) entries are shown in full;
2. entries 21 to :data:`KEPT` (40) are shown one line each;
3. older entries are folded into their theme (the area of the project they
   touched), which keeps a count, a date range and the latest few titles.

Folding happens when an entry is recorded, so storage stays bounded too: at most
:data:`KEPT` entry rows and :data:`MAX_THEMES` theme rows per directory. The
rendered log is therefore far below :data:`MAX_LINES` (1,000) by construction.

Each directory can be switched on or off (:func:`set_enabled`); a directory
without its own setting follows its nearest parent that has one, else
``local_context.enabled`` in the config (on by default: it costs the capture
path nothing, being built at Stop from observations already stored).
Standard library only: the Stop and SessionStart hooks import it.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any
    from .db import Database

from . import clock, excerpts

DETAILED = 20
KEPT = 40
MAX_THEMES = 30
MAX_DETAIL_LINES = 6
THEME_TITLES = 3
MAX_LINES = 1000
OTHER_THEME = "other"
HUMAN_FILE = "local-context.md"


def directory_key(directory: str) -> str:
    """Directories are identified by their real path."""
    return os.path.realpath(directory)


# -- the switch --------------------------------------------------------------------------------------
def setting(db: Database, directory: str) -> tuple[bool | None, str | None]:
    """The explicit on/off that applies to ``directory`` (its own or its nearest parent's) and where it is set."""
    key = directory_key(directory)
    best: tuple[bool | None, str | None] = (None, None)
    for row in db.rows("SELECT directory, enabled FROM local_context_directories WHERE enabled IS NOT NULL"):
        place = row["directory"]
        if key == place or key.startswith(place.rstrip(os.sep) + os.sep):
            if best[1] is None or len(place) > len(best[1]):
                best = (bool(row["enabled"]), place)
    return best


def is_enabled(db: Database, directory: str, default: bool) -> bool:
    explicit, _ = setting(db, directory)
    return default if explicit is None else explicit


def set_enabled(db: Database, directory: str, enabled: bool | None) -> None:
    """Switch the local context of a directory (and those below it) on, off, or back to the default (None)."""
    with db.transaction():
        db.execute("INSERT INTO local_context_directories(directory, enabled) VALUES (?, ?) "
                   "ON CONFLICT(directory) DO UPDATE SET enabled = excluded.enabled",
                   (directory_key(directory), None if enabled is None else int(enabled)))


def clear(db: Database, directory: str) -> int:
    """Forget a directory's log (``ccmemory context clear``); returns how many entries went. Observations stay."""
    key = directory_key(directory)
    with db.transaction():
        gone = int(db.scalar("SELECT count(*) FROM local_context_entries WHERE directory = ?", (key,)))
        gone += int(db.scalar("SELECT ifnull(sum(entries), 0) FROM local_context_themes WHERE directory = ?", (key,)))
        db.execute("DELETE FROM local_context_entries WHERE directory = ?", (key,))
        db.execute("DELETE FROM local_context_themes WHERE directory = ?", (key,))
        newest = db.scalar("SELECT ifnull(max(seq), 0) FROM memories")
        db.execute("INSERT INTO local_context_directories(directory, cleared_at, cleared_seq) VALUES (?, ?, ?) "
                   "ON CONFLICT(directory) DO UPDATE SET cleared_at = excluded.cleared_at, "
                   "cleared_seq = excluded.cleared_seq", (key, clock.now(), newest))
    return gone


def forget_below(db: Database, root: str) -> None:
    """Drop the logs of ``root`` and every directory below it: another repository now stands there
    (:func:`ccmemory.projects.project_id` made it a new project), and what was done in the old one is not its
    recent activity. The observations stay with the old project."""
    key = directory_key(root).rstrip(os.sep)
    below = (key, key + os.sep, key + chr(ord(os.sep) + 1))
    for table in ("local_context_entries", "local_context_themes"):
        db.execute(f"DELETE FROM {table} WHERE directory = ? OR (directory >= ? AND directory < ?)", below)


# -- recording ---------------------------------------------------------------------------------------
def watermark(db: Database, directory: str, session_id: str) -> tuple[int, str | None]:
    """How far the log for this session here goes: the newest observation seq already in it (or cleared away),
    and the time of its newest entry (None without one)."""
    key = directory_key(directory)
    covered = db.one("SELECT ifnull(max(last_seq), 0) AS seq, max(at) AS at FROM local_context_entries "
                     "WHERE directory = ? AND session_id = ?", (key, session_id)) or {}
    cleared = db.scalar("SELECT cleared_seq FROM local_context_directories WHERE directory = ?", (key,)) or 0
    return max(int(covered.get("seq") or 0), int(cleared)), covered.get("at")


def _stored(title: str, details: list[str], files: list[str], theme: str) -> tuple[str, str, str, str]:
    """An entry's title, details, files and theme as the table holds them (one line each, bounded)."""
    return (excerpts.one_line(title, 200), json.dumps([excerpts.one_line(d, 300) for d in details[:MAX_DETAIL_LINES]]),
            json.dumps(files[:20]), excerpts.one_line(theme, 80) or OTHER_THEME)


def record(db: Database, directory: str, *, session_id: str | None, title: str, details: list[str],
           files: list[str], theme: str, last_seq: int, at: str | None = None) -> None:
    """Append one entry, then fold whatever falls beyond the newest :data:`KEPT` into its theme."""
    key = directory_key(directory)
    with db.transaction():
        db.execute(
            "INSERT INTO local_context_entries(directory, session_id, at, title, details, files, theme, last_seq) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (key, session_id, at or clock.now(), *_stored(title, details, files, theme), last_seq),
        )
        for old in db.rows("SELECT id, at, title, theme FROM local_context_entries WHERE directory = ? "
                           "ORDER BY id DESC LIMIT -1 OFFSET ?", (key, KEPT)):
            _fold(db, key, old["theme"], 1, old["at"], old["at"], [old["title"]])
            db.execute("DELETE FROM local_context_entries WHERE id = ?", (old["id"],))
        _merge_small_themes(db, key)


def session_entries(db: Database, directory: str, session_id: str) -> list[dict[str, Any]]:
    """The session's entries here, oldest first: id, at, title, details (JSON), last_seq."""
    return db.rows("SELECT id, at, title, details, last_seq FROM local_context_entries WHERE directory = ? "
                   "AND session_id = ? ORDER BY at, id", (directory_key(directory), session_id))


def rewrite_entry(db: Database, entry_id: int, *, title: str, details: list[str], files: list[str], theme: str,
                  last_seq: int) -> bool:
    """Rewrite one entry in place; False when it is gone (folded into its theme meanwhile)."""
    with db.transaction():
        db.execute("UPDATE local_context_entries SET title = ?, details = ?, files = ?, theme = ?, last_seq = ? "
                   "WHERE id = ?", (*_stored(title, details, files, theme), last_seq, entry_id))
        return db.changes() > 0


def _fold(db: Database, key: str, theme: str, count: int, first_at: str, last_at: str, titles: list[str]) -> None:
    row = db.one("SELECT entries, first_at, last_at, titles FROM local_context_themes WHERE directory = ? "
                 "AND theme = ?", (key, theme))
    if row is None:
        db.execute("INSERT INTO local_context_themes(directory, theme, entries, first_at, last_at, titles) "
                   "VALUES (?, ?, ?, ?, ?, ?)", (key, theme, count, first_at, last_at,
                                                 json.dumps(titles[-THEME_TITLES:])))
        return
    merged = [*json.loads(row["titles"]), *titles] if row["last_at"] <= last_at else \
        [*titles, *json.loads(row["titles"])]
    db.execute("UPDATE local_context_themes SET entries = ?, first_at = ?, last_at = ?, titles = ? "
               "WHERE directory = ? AND theme = ?",
               (row["entries"] + count, min(row["first_at"], first_at), max(row["last_at"], last_at),
                json.dumps(merged[-THEME_TITLES:]), key, theme))


def _merge_small_themes(db: Database, key: str) -> None:
    """Keep at most MAX_THEMES themes: the smallest ones join the theme "other"."""
    themes = db.rows("SELECT theme, entries, first_at, last_at, titles FROM local_context_themes "
                     "WHERE directory = ? AND theme != ? ORDER BY entries DESC, last_at DESC", (key, OTHER_THEME))
    has_other = db.scalar("SELECT 1 FROM local_context_themes WHERE directory = ? AND theme = ?",
                          (key, OTHER_THEME)) is not None
    room = MAX_THEMES - 1 if has_other or len(themes) > MAX_THEMES else MAX_THEMES
    for small in themes[room:]:
        db.execute("DELETE FROM local_context_themes WHERE directory = ? AND theme = ?", (key, small["theme"]))
        _fold(db, key, OTHER_THEME, small["entries"], small["first_at"], small["last_at"],
              json.loads(small["titles"]))


# -- reading -----------------------------------------------------------------------------------------
def entries(db: Database, directory: str) -> list[dict[str, Any]]:
    """The kept entries, oldest first, with details and files decoded."""
    rows = db.rows("SELECT at, session_id, title, details, files, theme FROM local_context_entries "
                   "WHERE directory = ? ORDER BY id", (directory_key(directory),))
    for row in rows:
        row["details"] = json.loads(row["details"])
        row["files"] = json.loads(row["files"])
    return rows


def themes(db: Database, directory: str) -> list[dict[str, Any]]:
    rows = db.rows("SELECT theme, entries, first_at, last_at, titles FROM local_context_themes "
                   "WHERE directory = ? ORDER BY first_at", (directory_key(directory),))
    for row in rows:
        row["titles"] = json.loads(row["titles"])
    return rows


def _entry_line(entry: dict[str, Any]) -> str:
    return f"[{clock.minute(entry['at'])}] {entry['title']}"


def _one_line_entry(entry: dict[str, Any], *, bracketed: bool = True) -> str:
    files = f" (files: {', '.join(os.path.basename(f) for f in entry['files'][:4])})" if entry["files"] else ""
    line = _entry_line(entry) if bracketed else f"{clock.minute(entry['at'])}: {entry['title']}"
    return excerpts.one_line(line + files, 240)


def render(db: Database, directory: str) -> str:
    """The whole log as Markdown, oldest first, condensed by the three rules; empty when there is nothing."""
    key = directory_key(directory)
    kept, grouped = entries(db, key), themes(db, key)
    cleared = db.scalar("SELECT cleared_at FROM local_context_directories WHERE directory = ?", (key,))
    if not kept and not grouped and not cleared:
        return ""
    lines = [f"# Local context: {key}",
             "Kept by ccmemory from what Claude Code's hooks saw, oldest first (`ccmemory context show`)."]
    if cleared:
        lines.append(f"Context cleared at {cleared}.")
    if grouped:
        lines += ["", "## Earlier work by theme"]
        for theme in grouped:
            latest = "; ".join(excerpts.one_line(t, 80) for t in reversed(theme["titles"]))
            lines.append(excerpts.one_line(f"- {theme['theme']}: {theme['entries']} entries, {theme['first_at'][:10]} to "
                                   f"{theme['last_at'][:10]}; latest: {latest}", 400))
    older, recent = kept[:-DETAILED] if len(kept) > DETAILED else [], kept[-DETAILED:]
    if older:
        lines += ["", f"## Entries {len(kept)} to {DETAILED + 1} back, one line each"]
        lines += [_one_line_entry(entry) for entry in older]
    if recent:
        lines += ["", f"## The last {len(recent)} entries"]
        for entry in recent:
            lines.append(_entry_line(entry))
            lines += [f"  - {detail}" for detail in entry["details"]]
    return "\n".join(lines) + "\n"


def session_start_entries(db: Database, directory: str) -> list[str]:
    """The kept entries as SessionStart shows them, newest first (the first three with details), each ending in a newline.

    Lines start with the time, not ``[``: SessionStart's memory lines start ``- [id]``. They are
    raw stored text: :mod:`ccmemory.hooks.context` escapes and fences them.
    """
    shown: list[str] = []
    for index, entry in enumerate(reversed(entries(db, directory))):
        text = "- " + _one_line_entry(entry, bracketed=False) + "\n"
        if index < 3:
            text += "".join(f"  - {detail}\n" for detail in entry["details"])
        shown.append(text)
    return shown


def write_human_file(text: str, path: str) -> str:
    """Write the rendered log for people to read; never through a symlink, only over a regular file."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    if os.path.lexists(path) and not os.path.isfile(path) or os.path.islink(path):
        raise OSError(f"{path} is not a regular file; not overwritten")
    handle = os.open(path, flags, 0o644)
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(text)
    return path
