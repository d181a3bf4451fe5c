"""``ccmemory init``: set a project up for the knowledge tier.

Creates ``.claude/knowledge/`` (with ``gotchas.md`` showing the format),
the skills memory-discover, memory-query and memory-save, ``.claude/settings.json``
enabling the plugin, and the git pre-commit hook; runs a quick analysis; prints
a checklist. It never overwrites a file. When ``.claude`` already exists it
asks before merging, but only on a terminal: without one (a script, CI, Claude's
Bash tool) it merges, which is safe because only missing files are created.
Exit codes: 0 success, 1 a file could not be written.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from .. import analysis, projects
from ..knowledge import githook, scaffold, settings as project_settings
from ..safe_files import UnsafeFileError
from .common import default_project_dir, echo, emit_json, fail, json_option, project_option


def _analyse(settings: project_settings.ProjectSettings) -> tuple[dict[str, Any], str | None]:
    result = analysis.run(settings)
    try:
        analysis.save_cache(settings, result)
    except OSError as exc:
        return result, f"Could not write {analysis.cache_path(settings)}: {exc.strerror or exc}"
    except UnsafeFileError as exc:
        return result, str(exc)
    return result, None


@click.command(name="init")
@click.option("--yes", "-y", is_flag=True, help="Merge into an existing .claude without asking.")
@click.option("--no-hook", is_flag=True, help="Do not install the git pre-commit hook.")
@project_option
@json_option
def init_command(yes: bool, no_hook: bool, project_dir: str | None, as_json: bool) -> None:
    """Create .claude/knowledge, the memory skills and the git hook in this project (never overwrites)."""
    root = projects.project_root(project_dir or default_project_dir())
    settings = project_settings.load(root)
    warnings = list(settings.problems)
    if os.path.isdir(os.path.join(root, ".claude")) and not yes:
        if sys.stdin.isatty() and not as_json:
            if not click.confirm("Existing .claude found. Merge templates? (y/N)", default=False, show_default=False):
                echo("Nothing changed.")
                return
        elif not as_json:
            echo("Existing .claude found: adding only the files it does not have yet.")
    try:
        placed = scaffold.copy(root, settings.knowledge_dir)
    except scaffold.WriteError as exc:
        fail(str(exc), 1)
        return
    warnings += [item.note for item in placed if item.action == "failed"]
    hook = None if no_hook else githook.install(root)
    if hook and hook.action in ("no-git", "unsupported"):
        warnings.append(hook.message)
    result, problem = _analyse(settings)
    warnings += [found for found in result["problems"] if found not in warnings]
    if problem:
        warnings.append(problem)
    knowledge = os.path.relpath(settings.knowledge_dir, root)
    steps = [
        f"Write what the project should remember in {knowledge}/ (one H3 section per fact; see gotchas.md)",
        "Run `ccmemory index` to make it searchable (the git hook re-indexes on every commit that changes it)",
        "Install the plugin so Claude has the memory tools the skills use: `claude plugin marketplace add "
        "<the ccmemory repository: a clone's path, a git URL or owner/repo>`, then "
        "`claude plugin install ccmemory@ccmemory` (settings.json enables it for this project)",
        "Run `ccmemory discover` for a deep analysis saved to memory",
        f"Commit {knowledge}/, .claude/skills/ and .claude/settings.json",
    ]
    if as_json:
        emit_json({"root": root, "files": [item.__dict__ for item in placed],
                   "hook": hook.__dict__ if hook else None, "analysis": result, "warnings": warnings,
                   "next_steps": steps})
        return
    for warning in warnings:
        echo(f"Warning: {warning}", err=True)
    for item in placed:
        if item.action == "skipped":
            echo(item.note)
    echo(f"\nccmemory is set up in {root}\n")
    created = [item.path for item in placed if item.action == "created"]
    echo("Created:" if created else "Created: nothing (everything was already there)")
    for path in created:
        echo(f"  [x] {path}")
    if hook:
        mark = "[x]" if hook.action in ("installed", "added") else "[ ]"
        echo(f"  {mark} {hook.message}")
    echo(f"\nProject: {result['project']}\nLanguages: {result['languages_text']}\n"
               f"Entry points: {', '.join(result['entry_points']) or 'none found'}\n"
               f"Directories: {result['directories']:,} | Files: {result['files']:,}")
    for note in result["notes"]:
        echo(note)
    echo("\nNext steps:")
    for number, step in enumerate(steps, 1):
        echo(f"  {number}. {step}")


COMMANDS = [init_command]
