"""``ccmemory discover`` and ``ccmemory promote``: discovery memories, and a memory written out as knowledge."""

from __future__ import annotations

import signal
import sys
from typing import Any

import click

from .. import projects
from ..knowledge import discovery, promotion, settings as project_settings
from .analysis_commands import allow_analyzers, trust_analyzers_option
from .common import (INTERRUPTED_EXIT, default_project_dir, echo, embed_in_background, emit_json, fail, handles_errors,
                     json_option, open_store, project_option)


def _interrupt_on_terminate(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


@click.command()
@click.option("--save/--no-save", default=True, show_default=True,
              help="Store the findings as discovery memories, or only print them.")
@trust_analyzers_option
@project_option
@json_option
@handles_errors
def discover(save: bool, trust_analyzers: bool, project_dir: str | None, as_json: bool) -> None:
    """Deep analysis of the project, saved as discovery memories (one run at a time)."""
    settings = project_settings.load(projects.project_root(project_dir or default_project_dir()))
    if trust_analyzers:
        allow_analyzers(settings)
    db, project = open_store(settings.root) if save else (None, None)
    signal.signal(signal.SIGTERM, _interrupt_on_terminate)
    say = (lambda text: None) if as_json else (lambda text: echo(f"Discovery: {text}...", err=True))
    try:
        run = discovery.discover(db, project, settings, save_findings=save, on_status=say)
    except discovery.AlreadyRunning as busy:
        fail(str(busy), 1)
        return
    except KeyboardInterrupt:
        echo("Discovery interrupted: partial findings were saved with complete: false" if save
                   else "Discovery interrupted", err=True)
        if db is not None:
            embed_in_background(db)
        sys.exit(INTERRUPTED_EXIT)
    if db is not None and (run.saved or run.updated):
        embed_in_background(db)
    if as_json:
        emit_json({"complete": run.complete, "saved": run.saved, "updated": run.updated, "kinds": run.kinds(),
                   "findings": [finding.__dict__ for finding in run.findings], "problems": run.problems,
                   "analysis": run.analysis})
        return
    for problem in [*settings.problems, *run.problems]:
        echo(f"Warning: {problem}", err=True)
    for finding in run.findings:
        echo(f"- {finding.content}")
    kinds = ", ".join(f"{kind} {count}" for kind, count in run.kinds().items())
    if save:
        echo(f"\n{len(run.findings)} discoveries ({kinds}): {run.saved} saved, {run.updated} updated, "
                   f"{len(run.findings) - run.saved - run.updated} unchanged")
    else:
        echo(f"\n{len(run.findings)} discoveries ({kinds}); not saved (--no-save)")
    for note in run.analysis.get("notes", []):
        echo(note)


@click.command()
@click.argument("memory_id", required=False)
@click.option("--auto", "automatic", is_flag=True,
              help=f"Promote every discovery referenced {promotion.MIN_REFERENCES}+ times in "
                   f"{promotion.WINDOW_DAYS} days.")
@project_option
@json_option
@handles_errors
def promote(memory_id: str | None, automatic: bool, project_dir: str | None, as_json: bool) -> None:
    """Write a memory (a discovery) to .claude/knowledge/discoveries/<slug>.md and mark it promoted."""
    if bool(memory_id) == automatic:
        fail("Give one memory id, or --auto", 2)
    settings = project_settings.load(projects.project_root(project_dir or default_project_dir()))
    db, project = open_store(settings.root)
    if memory_id:
        done = [promotion.promote(db, memory_id, settings, project)]
    else:
        done = promotion.auto_promote(db, project, settings)
    if as_json:
        emit_json(promotion.describe(done))
        return
    if automatic and not done:
        echo("Nothing to promote.")
    for result in done:
        echo(result.message, err=result.action == "exists")


COMMANDS = [discover, promote]
