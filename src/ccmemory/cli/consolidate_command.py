"""``ccmemory consolidate``: a consolidation pass, its dry run and its undo, then the storage budget."""

from __future__ import annotations

from typing import Any

import click

from .. import budget, consolidation, locks
from .common import (echo, embed_in_background, emit_json, fail, handles_errors, json_option, load_settings, open_store,
                     project_option)

#: How long a pass by hand waits for a background pass of another process to finish.
LOCK_WAIT_SECONDS = 30.0


@click.command()
@click.option("--dry-run", is_flag=True, help="Show what a pass would merge, fold, thin, decay and drop; change nothing.")
@click.option("--undo", is_flag=True, help="Put back everything the latest pass changed (budget drops excepted).")
@click.option("--all-projects", is_flag=True, help="Consolidate every project, not only this one.")
@project_option
@json_option
@handles_errors
def consolidate(dry_run: bool, undo: bool, all_projects: bool, project_dir: str | None, as_json: bool) -> None:
    """Merge repeated observations, fold old routine ones into their session's summary, decay unused ones.

    Then, when the database is over its budget (storage.budget_mb, storage.project_budget_mb), the
    oldest least salient observations go. Every pass can be undone with --undo until the next one.
    """
    db, project = open_store(project_dir)
    if undo and dry_run:
        fail("--undo and --dry-run do not go together: --undo changes the store back at once.", 2)
    loaded = load_settings()
    try:
        with locks.held(consolidation.lock_path(), wait=LOCK_WAIT_SECONDS, command="consolidate"):
            if undo:
                result: dict[str, Any] = consolidation.undo(db)
            else:
                report = consolidation.consolidate(db, project_id=None if all_projects else project,
                                                   dry_run=dry_run, loaded=loaded)
                result = {**report.to_dict(), "budget": budget.enforce(db, loaded, dry_run=dry_run),
                          "usage": budget.usage(db, loaded)}
    except locks.Busy:
        fail(f"Another consolidation has been running for over {LOCK_WAIT_SECONDS:.0f} s; try again once it "
             "has finished.", 1)
    if not dry_run:
        embed_in_background(db)  # a merge or a fold rewrote texts, an undo put old ones back: their vectors are gone
    if as_json:
        emit_json(result)
    elif undo:
        echo(f"Undid consolidation pass {result['pass_id']} of {result['started_at']}: "
             f"{result['restored_rows']} rows restored. Background passes wait until you run "
             "`ccmemory consolidate` again.")
    else:
        for line in render(result):
            echo(line)


def render(result: dict[str, Any]) -> list[str]:
    """A pass's report as lines: the counts, examples of each change, the budget."""
    dry = result["dry_run"]
    lines = [f"{'Would merge' if dry else 'Merged'} {result['merged_rows']} repeated observations into "
             f"{result['merged_groups']} (the newest of each, with the count as evidence); "
             f"{'would fold' if dry else 'folded'} {result['folded_rows']} old routine observations into "
             f"{result['folded_sessions']} session summaries; {'would thin' if dry else 'thinned'} "
             f"{result['thinned']} old file writes to their first lines; {'would decay' if dry else 'decayed'} "
             f"{result['decayed']} never retrieved."]
    for kind, examples in result["examples"].items():
        for example in examples:
            lines.append(f"  {kind}: {example}")
    dropped = result["budget"]["dropped"]
    usage = result["usage"]
    lines.append(f"Budget: {usage['database_bytes'] / 1e6:.1f} MB of {usage['budget_bytes'] / 1e6:.0f} MB "
                 f"({usage['project_budget_bytes'] / 1e6:.0f} MB a project)"
                 + (f"; {'would drop' if dry else 'dropped'} {dropped} oldest least salient observations "
                    "(not undoable)" if dropped else "") + ".")
    if not dry:
        lines.append(f"Pass {result['pass_id']} took {result['seconds']:.1f} s; database "
                     f"{result['bytes_before'] / 1e6:.1f} MB -> {result['budget']['bytes_after'] / 1e6:.1f} MB. "
                     "`ccmemory consolidate --undo` puts it back.")
    return lines


COMMANDS = [consolidate]
