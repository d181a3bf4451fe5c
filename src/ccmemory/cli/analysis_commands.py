"""``ccmemory analyze``: the structure of the project, in any language."""

from __future__ import annotations

import sys

import click

from .. import analysis, projects
from ..analysis import trust
from ..knowledge import settings as project_settings
from ..knowledge.settings import ProjectSettings
from .common import F, default_project_dir, echo, emit_json, fail, handles_errors, json_option, project_option


def trust_analyzers_option(command: F) -> F:
    return click.option(
        "--trust-analyzers", is_flag=True,
        help="Allow the project's own analyzers (.claude/analyzers/*.py, the repository's code) to run in deep "
             "analyses of this project, after you confirm at a terminal; any change to them needs a new opt-in.",
    )(command)


def allow_analyzers(settings: ProjectSettings) -> None:
    """``--trust-analyzers``: show the project's analyzers and record the user's opt-in, confirmed at a terminal.

    A terminal is required so that only the user can allow them: Claude's Bash tool, a script or
    a skill has no terminal to answer on.
    """
    found = trust.read(settings.root)
    if not found.modules:
        echo(f"No analyzer in {found.folder} (<language>.py files); nothing to allow.", err=True)
        return
    if found.problem:
        fail(f"{found.problem}; the analyzers cannot be allowed as they are.", 2)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        fail("--trust-analyzers asks you to confirm at a terminal: run it yourself in a terminal (not through "
             "Claude, a script or a pipe).", 2)
    echo(f"The project's analyzers in {found.folder} are the repository's code. If allowed, they run as you, "
               "with your rights, in every deep analysis of this project until any file there changes:")
    for name, data in sorted(found.files.items()):
        echo(f"  {name} ({len(data):,} bytes)")
    echo(f"Digest: {found.digest}")
    if not click.confirm(f"Run these analyzers for {settings.root}?", default=False):
        fail("Not allowed; the built-in analysis is used.", 1)
    trust.allow(settings.root, found)
    echo(f"Allowed; recorded in {trust.trust_path()}.")


@click.command()
@click.option("--quick", "depth", flag_value="quick", default=True,
              help="Folder structure, languages, entry points and basic stats (the default; a few seconds).")
@click.option("--deep", "depth", flag_value="deep",
              help="Also exports, conventions and frameworks, from a sample of the source files (up to a minute).")
@trust_analyzers_option
@project_option
@json_option
@handles_errors
def analyze(depth: str, trust_analyzers: bool, project_dir: str | None, as_json: bool) -> None:
    """Describe the project: languages, entry points, source/test/doc directories, stats."""
    settings = project_settings.load(projects.project_root(project_dir or default_project_dir()))
    if trust_analyzers:
        allow_analyzers(settings)
    result = analysis.run(settings, deep=depth == "deep")
    if as_json:
        emit_json(result)
        return
    for problem in result["problems"]:
        echo(f"Warning: {problem}", err=True)
    echo(analysis.render(result))


COMMANDS = [analyze]
