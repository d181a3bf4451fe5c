"""``ccmemory analyze``: the structure of the project, in any language (seed 001, F5.3, F7)."""

from __future__ import annotations

import click

from .. import analysis, projects
from ..knowledge import settings as project_settings
from .common import default_project_dir, echo, emit_json, handles_errors, json_option, project_option


@click.command()
@click.option("--quick", "depth", flag_value="quick", default=True,
              help="Folder structure, languages, entry points and basic stats (the default; a few seconds).")
@click.option("--deep", "depth", flag_value="deep",
              help="Also exports, conventions and frameworks, from a sample of the source files (up to a minute).")
@project_option
@json_option
@handles_errors
def analyze(depth: str, project_dir: str | None, as_json: bool) -> None:
    """Describe the project: languages, entry points, source/test/doc directories, stats."""
    settings = project_settings.load(projects.project_root(project_dir or default_project_dir()))
    result = analysis.run(settings, deep=depth == "deep")
    if as_json:
        emit_json(result)
        return
    for problem in result["problems"]:
        echo(f"Warning: {problem}", err=True)
    echo(analysis.render(result))


COMMANDS = [analyze]
