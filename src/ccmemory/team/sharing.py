"""What leaves this machine for the team server, decided on this machine alone (no server, no psycopg).

Two scopes, one per memory on the server:

* ``personal``: the owner's machines only (row-level security hides it from teammates). By
  default every memory of mine in a project that syncs (``sync.personal``).
* ``team``: every member of the team. By default only curated memories: those whose source is in
  ``sync.team_sources`` (session summaries, memories added by hand, with ``memory_add`` or in the
  viewer, knowledge entries and discoveries) — never captured tool output (source ``capture``)
  unless that setting lists it.

``ccmemory sync share ID --scope personal|team`` overrides the rules for one memory (``sync_choices``):
making a team memory personal again takes it back from the team (the server leaves a tombstone).

A project syncs only when its identity is portable (``git:``/``remote:``, the same on every
machine, :mod:`ccmemory.identity`) and none of its locations holds ``.ccmemory-off``. A project
known only by its path cannot be matched on another machine, so it never syncs.

Whatever leaves is redacted again (:func:`ccmemory.redaction.redact`): private spans and
secrets are removed even from rows stored before a rule existed.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .. import memories, privacy
from ..db import Database
from ..redaction import redact, redact_fields

SCOPES = ("personal", "team")


def project_sync_status(db: Database, project_id: int) -> tuple[str | None, str]:
    """The project's portable identity if it syncs (else None), and why it does or does not."""
    row = db.one("SELECT identity FROM projects WHERE id = ?", (project_id,))
    key = (row or {}).get("identity") or ""
    if not key.startswith(("git:", "remote:")):
        return None, "not synced: no git history, so it has no identity shared between machines"
    for alias in db.rows("SELECT path FROM project_aliases WHERE project_id = ?", (project_id,)):
        marker = privacy.find_opt_out_marker(alias["path"])
        if marker:
            return None, f"not synced: opted out by {marker}"
    return key, "synced"


def desired_scope(memory: memories.Memory, choice: str | None, current: str | None, settings: Any) -> str | None:
    """The scope ``memory`` (mine, in a project that syncs) should have on the server; None: do not share it.

    The user's choice first; then the scope it already has on the server (decided once, by the machine that
    shared it first, so machines with different settings do not flip it back and forth); then the settings.
    """
    if choice in SCOPES:
        return choice
    if current in SCOPES:
        return current
    if memory.source in settings.get("sync", "team_sources"):
        return "team"
    return "personal" if settings.get("sync", "personal") else None


def payload(memory: memories.Memory, *, project: str, scope: str, superseded_by: str | None) -> dict[str, Any]:
    """The server's row for ``memory``, redacted again: what leaves this machine."""
    return {
        "id": memory.id, "project": project, "scope": scope, "deleted": bool(memory.is_deleted),
        "superseded_by": superseded_by, "sector": memory.sector, "category": memory.category,
        "source": memory.source, "content": redact(memory.content),
        "metadata": redact_fields({"tags": memory.tags, "files": memory.files, "tier": memory.tier,
                                   "importance": memory.importance, "meta": memory.metadata}),
        "created_at": memory.created_at, "updated_at": memory.updated_at,
    }


def digest(row: dict[str, Any], model: str | None) -> str:
    """A hash of what a row says (not when): equal on both sides when the server already holds this version.

    A deleted row is only its id, its scope and the flag (the server clears the rest).
    """
    if row["deleted"]:
        fields: Any = [row["id"], row["scope"], True]
    else:
        fields = [row["id"], row["project"], row["scope"], row["superseded_by"], row["sector"], row["category"],
                  row["source"], row["content"], row["metadata"], model]
    return hashlib.sha256(json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
