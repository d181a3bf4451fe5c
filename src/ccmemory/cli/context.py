"""``ccmemory context --preview``: exactly what the SessionStart hook would inject."""

from __future__ import annotations

import os

import click

from .. import config as settings, projects
from ..hooks import context as session_context, privacy
from .common import default_project_dir, handles_errors, open_db, project_option


@click.command()
@click.option("--preview", is_flag=True, help="Print the context a new session would receive (the only action).")
@project_option
@click.option("--json", "as_json", is_flag=True, help="Print the hook's JSON output instead of the bare text.")
@handles_errors
def context(preview: bool, project_dir: str | None, as_json: bool) -> None:
    """Show the memory context SessionStart injects for a project, byte for byte.

    Nothing is written: an unknown project just has nothing to inject.
    """
    folder = project_dir or default_project_dir()
    opted_out = privacy.opted_out(folder) or privacy.disabled_by_env()
    if opted_out:
        click.echo(f"Nothing would be injected: {opted_out}.", err=True)
        return
    db = open_db()
    try:
        project = projects.project_id(db, folder, create=False)
        root = projects.project_root(folder)
        text = "" if project is None else session_context.build(
            db, project, project_name=os.path.basename(root) or root, config=settings.load())
    finally:
        db.close()
    if not text:
        click.echo(f"Nothing would be injected: no session summaries or project memories for {root} yet.", err=True)
        return
    click.echo(session_context.hook_output(text) if as_json else text)


COMMANDS = [context]
