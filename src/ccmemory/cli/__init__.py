"""The ``ccmemory`` command line: a click group whose commands live in small modules by area.

A command's module is imported only when that command runs (``--help`` lists
them all, so it imports every module): ``ccmemory list`` then pays neither for
the demo's subprocess and tempfile machinery nor for the hooks' context code.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

import click

from .groups import WholeHelpGroup

from .. import __version__

#: Command name -> module under ccmemory.cli holding it (listed in that module's COMMANDS).
COMMAND_MODULES = {
    **dict.fromkeys(("add", "search", "list", "get", "delete", "restore", "reinforce", "deemphasize", "supersede",
                     "scope"), "memory_commands"),
    "docs": "docs_commands",
    "files": "files_commands",
    **dict.fromkeys(("export", "import"), "archive_commands"),
    "import-from": "importer_commands",
    "backfill": "backfill_command",
    "projects": "project_commands",
    **dict.fromkeys(("stats", "embed", "doctor", "vacuum", "gc"), "maintenance"),
    "consolidate": "consolidate_command",
    "analyze": "analysis_commands",
    **dict.fromkeys(("discover", "promote"), "discovery_commands"),
    "init": "init_command",
    **dict.fromkeys(("index", "git-hook"), "knowledge_commands"),
    "config": "config_commands",
    "context": "context",
    "demo": "demo",
    "ui": "ui_command",
    "server": "server_commands",
    "sync": "sync_commands",
}


class LazyGroup(WholeHelpGroup):
    """A group that imports a command's module on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMAND_MODULES, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMAND_MODULES:
            module: Any = import_module(f"{__name__}.{COMMAND_MODULES[cmd_name]}")
            for command in module.COMMANDS:
                self.add_command(command)
        return self.commands.get(cmd_name)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """No arguments: the help with the commands, on stdout, exit 0 (asking for help is not a usage error)."""
        if not args and not ctx.resilient_parsing:
            click.echo(ctx.get_help())
            ctx.exit(0)
        return super().parse_args(ctx, args)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        """An unknown command says so and points at ``--help``, with the nearest names when there are some."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and not ctx.resilient_parsing and self.get_command(ctx, name) is None:
            import difflib

            near = difflib.get_close_matches(name, self.list_commands(ctx), n=3)
            hint = f" Did you mean {' or '.join(repr(n) for n in near)}?" if near else ""
            raise click.UsageError(f"Unknown command: {name}. Run 'ccmemory --help'.{hint}", ctx)
        return super().resolve_command(ctx, args)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ccmemory")
def cli() -> None:
    """Persistent, searchable memory of each project for Claude Code."""


def main() -> None:
    """Console-script entry point."""
    cli()
