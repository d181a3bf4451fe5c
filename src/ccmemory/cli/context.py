"""``ccmemory context``: what SessionStart injects (``--preview``) and the rolling local context.

``context show``, ``context clear``, ``context on|off|default`` work on one
working directory's log (``--dir``, default ``$CLAUDE_PROJECT_DIR`` or the
current directory); see :mod:`ccmemory.local_context`.
"""

from __future__ import annotations

import os

import click

from .groups import WholeHelpGroup

from .. import local_context, projects
from .. import privacy
from ..db import Database
from ..hooks import context as session_context
from .common import (default_project_dir, echo, emit_json, fail, handles_errors, load_settings, open_db,
                     project_option)

directory_option = click.option(
    "--dir", "directory", type=click.Path(file_okay=False, exists=True), default=None,
    help="Working directory whose log this is (default: $CLAUDE_PROJECT_DIR or the current directory).",
)


@click.group(cls=WholeHelpGroup, invoke_without_command=True)
@click.option("--preview", is_flag=True, help="Print the context a new session would receive (the default action).")
@project_option
@click.option("--json", "as_json", is_flag=True, help="Print the hook's JSON output instead of the bare text.")
@click.pass_context
@handles_errors
def context(ctx: click.Context, preview: bool, project_dir: str | None, as_json: bool) -> None:
    """Show the memory context SessionStart injects for a project, byte for byte.

    Nothing is written: an unknown project just has nothing to inject. The subcommands
    show, clear and switch the rolling local context of a directory.
    """
    if ctx.invoked_subcommand is not None:
        return
    folder = project_dir or default_project_dir()
    opted_out = privacy.opted_out(folder) or privacy.disabled_by_env()
    if opted_out:
        echo(f"Nothing would be injected: {opted_out}.", err=True)
        return
    db = open_db()
    try:
        project = projects.project_id(db, folder, create=False)
        root = projects.project_root(folder)
        text = "" if project is None else session_context.build(db, project, config=load_settings(), directory=folder)
    finally:
        db.close()
    if not text:
        echo(f"Nothing would be injected: no memory files, session summaries or project memories for {root} "
                   "yet.", err=True)
        return
    echo(session_context.hook_output(text) if as_json else text)


def _switch_state(db: Database, folder: str) -> str:
    default = load_settings().get("local_context", "enabled")
    explicit, where = local_context.setting(db, folder)
    if explicit is None:
        return f"{'on' if default else 'off'} (the default, local_context.enabled in config.json)"
    source = "set here" if where == local_context.directory_key(folder) else f"set on {where}"
    return f"{'on' if explicit else 'off'} ({source})"


@context.command()
@directory_option
@click.option("--write", "write_to", is_flag=False, flag_value=local_context.HUMAN_FILE, default=None,
              help=f"Also write it to a file (default name {local_context.HUMAN_FILE}, in the directory).")
@click.option("--json", "as_json", is_flag=True, help="Entries and themes as JSON.")
@handles_errors
def show(directory: str | None, write_to: str | None, as_json: bool) -> None:
    """Print the directory's rolling local context (newest 20 in full, 21-40 one line, older by theme)."""
    folder = directory or default_project_dir()
    db = open_db()
    try:
        if as_json:
            emit_json({"directory": local_context.directory_key(folder), "state": _switch_state(db, folder),
                       "entries": local_context.entries(db, folder), "themes": local_context.themes(db, folder)})
            return
        text = local_context.render(db, folder)
        state = _switch_state(db, folder)
    finally:
        db.close()
    if not text:
        echo(f"No local context for {local_context.directory_key(folder)} yet (recording is {state}).",
                   err=True)
        return
    echo(text, nl=False)
    if write_to:
        target = write_to if os.path.isabs(write_to) else os.path.join(folder, write_to)
        try:
            echo(f"Written to {local_context.write_human_file(text, target)}", err=True)
        except OSError as exc:
            fail(f"Could not write {target}: {exc}. Choose another file with --write PATH.")


@context.command()
@directory_option
@handles_errors
def clear(directory: str | None) -> None:
    """Forget the directory's local context and start a fresh one (the observations stay in memory)."""
    folder = directory or default_project_dir()
    db = open_db()
    try:
        gone = local_context.clear(db, folder)
    finally:
        db.close()
    echo(f"Context cleared for {local_context.directory_key(folder)} ({gone} entries). Starting fresh.")


def _switch(value: bool | None) -> click.Command:
    word = {True: "on", False: "off", None: "default"}[value]
    helps = {True: "Record the local context of this directory (and those below it).",
             False: "Stop recording the local context here, and leave it out of SessionStart (nothing is deleted).",
             None: "Forget this directory's own setting: follow its parent's, else local_context.enabled."}

    @directory_option
    @handles_errors
    def command(directory: str | None) -> None:
        folder = directory or default_project_dir()
        db = open_db()
        try:
            local_context.set_enabled(db, folder, value)
            state = _switch_state(db, folder)
        finally:
            db.close()
        echo(f"Local context for {local_context.directory_key(folder)}: {state}.")

    command.__doc__ = helps[value]
    return click.command(word)(command)


for _value in (True, False, None):
    context.add_command(_switch(_value))

COMMANDS = [context]
