"""What ``memory_status`` and ``ccmemory stats`` report: the store's counts and the settings in effect."""

from __future__ import annotations

from typing import Any

from . import budget, config as settings, consolidation, embeddings, memories, quoting, scopes, storage
from .db import Database

#: The settings a status shows (the ones people change), with a label each.
SHOWN_SETTINGS = (("capture", "enabled", "capture"), ("summary", "mode", "summary mode"),
                  ("context", "max_tokens", "session-start budget"))


def status(db: Database, project_id: int | None, loaded: settings.Config) -> dict[str, Any]:
    """Counts for a project (None: every project), pending embeddings, the database, settings and their sources."""
    result = memories.stats(db, project_id)
    result["pending_embeddings"] = embeddings.pending_count(db, embeddings.configured_spec().model_id)
    result["database"] = str(db.path)
    result["project_id"] = project_id
    result.update(storage.size_report(db))
    result["settings"] = {f"{section}.{key}": {"value": loaded.get(section, key), "source": loaded.source(section, key)}
                          for section, key, _ in SHOWN_SETTINGS}
    result["config_problems"] = list(loaded.problems)
    result["user_scope_proposals"] = scopes.proposals(db, project_id) if project_id is not None else []
    result["budget"] = budget.usage(db, loaded)
    last = consolidation.latest_pass(db)
    result["last_consolidation"] = None if last is None else {
        "at": last["finished_at"] or last["started_at"], "undone": bool(last["undone_at"]),
        "merged": last["report"].get("merged_rows", 0), "folded": last["report"].get("folded_rows", 0),
        "thinned": last["report"].get("thinned", 0), "finished": bool(last["finished_at"]),
        "undo_kept_until": consolidation.undo_kept_until(db, loaded)}
    return result


def budget_lines(result: dict[str, Any], project_id: int | None) -> list[str]:
    """The storage budget, what fills it (this project's share by kind) and the latest consolidation."""
    usage = result["budget"]
    lines = [f"Budget: {usage['database_bytes'] / 1e6:.1f} MB of {usage['budget_bytes'] / 1e6:.0f} MB"
             + (" (over: `ccmemory consolidate` brings it back)" if usage["over"] else "") + "."]
    for project in usage["projects"]:
        if project_id is None or project["id"] == project_id:
            kinds = ", ".join(f"{kind} {amount / 1e6:.1f}" for kind, amount in project["by_kind"].items() if amount)
            lines.append(f"  {quoting.escape(project['path'])}: {project['bytes'] / 1e6:.1f} MB of "
                         f"{usage['project_budget_bytes'] / 1e6:.0f} MB ({kinds or 'empty'}; MB, estimated)")
    last = result["last_consolidation"]
    lines.append("Consolidation: never run." if last is None else
                 f"Consolidation: last pass {last['at'][:16]} merged {last['merged']}, folded {last['folded']}, "
                 f"thinned {last['thinned']}" + (" (undone)" if last["undone"] else "")
                 + ("" if last["finished"] else " (stopped half way: the next pass resumes it)")
                 + f"; its undo log {usage['undo_log_bytes'] / 1e6:.1f} MB"
                 + (f", kept until {last['undo_kept_until'][:10]} (`ccmemory consolidate --undo`)"
                    if last.get("undo_kept_until") else "") + ".")
    return lines


def render(result: dict[str, Any], project_dir: str) -> str:
    """The status as a few plain lines."""
    tiers = ", ".join(f"{name} {count}" for name, count in sorted(result["by_tier"].items())) or "none"
    sectors = ", ".join(f"{name} {count}" for name, count in sorted(result["by_sector"].items())) or "none"
    lines = [
        f"Project {project_dir}: {result['memories']} memories ({tiers}; {result['deleted']} deleted, "
        f"{result['superseded']} superseded), {result['sessions']} sessions, {result['documents']} documents.",
        f"By sector: {sectors}.",
        f"Pending embeddings: {result['pending_embeddings']}. Database: {result['database']} "
        f"({result['database_bytes'] / 1e6:.1f} MB, {result['projects']} projects).",
    ]
    lines.append(f"User-wide memories (every project sees them): {result['user_wide']}.")
    lines += budget_lines(result, result.get("project_id"))
    lines += proposal_lines(result["user_scope_proposals"])
    lines.append(settings_line(result))
    lines += [f"Config problem: {problem}" for problem in result["config_problems"]]
    return "\n".join(lines)


def proposal_lines(proposals: list[dict[str, Any]]) -> list[str]:
    """The memories proposed for the user's scope (ids and project paths only, escaped: no stored text)."""
    if not proposals:
        return []
    lines = [f"Proposed for your user scope ({len(proposals)}; a near-identical memory is in other projects too): "
             "`ccmemory scope ID user` makes one user-wide, `ccmemory scope ID project` declines."]
    for proposal in proposals:
        also = ", ".join(quoting.escape(path) for path in proposal["projects"])
        lines.append(f"  {proposal['id']} (in {also}; copies {', '.join(proposal['copies']) or '-'})")
    return lines


def settings_line(result: dict[str, Any]) -> str:
    """The settings people change, their values and where each comes from, on one line."""
    parts = []
    for section, key, label in SHOWN_SETTINGS:
        shown = result["settings"][f"{section}.{key}"]
        value = {True: "on", False: "off"}.get(shown["value"], shown["value"])
        parts.append(f"{label} {value} ({shown['source']})")
    return "Settings: " + "; ".join(parts) + ". `ccmemory config` shows them all."
