"""The ``ccmemory`` command line: a click group whose commands live in small modules by area.

A command's module is imported only when that command runs (``--help`` lists
them all, so it imports every module): ``ccmemory list`` then pays neither for
the demo's subprocess and tempfile machinery nor for the hooks' context code.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

import click

from .. import __version__

#: Command name -> module under ccmemory.cli holding it (listed in that module's COMMANDS).
COMMAND_MODULES = {
    **dict.fromkeys(("add", "search", "list", "get", "delete", "restore", "reinforce", "deemphasize", "supersede"),
                    "memory_commands"),
    "docs": "docs_commands",
    "files": "files_commands",
    **dict.fromkeys(("export", "import"), "archive_commands"),
    **dict.fromkeys(("stats", "embed", "doctor", "vacuum", "gc"), "maintenance"),
    "analyze": "analysis_commands",
    **dict.fromkeys(("discover", "promote"), "discovery_commands"),
    "init": "init_command",
    **dict.fromkeys(("index", "git-hook"), "knowledge_commands"),
    "config": "config_commands",
    "context": "context",
    "demo": "demo",
    "ui": "ui_command",
}


class LazyGroup(click.Group):
    """A group that imports a command's module on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMAND_MODULES, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMAND_MODULES:
            module: Any = import_module(f"{__name__}.{COMMAND_MODULES[cmd_name]}")
            for command in module.COMMANDS:
                self.add_command(command)
        return self.commands.get(cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ccmemory")
def cli() -> None:
    """Persistent, searchable memory of each project for Claude Code."""


def main() -> None:
    """Console-script entry point."""
    cli()
