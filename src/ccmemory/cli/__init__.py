"""The ``ccmemory`` command line: a click group whose commands live in small modules by area."""

from __future__ import annotations

import click

from .. import __version__
from . import (analysis_commands, archive_commands, config_commands, context, demo, discovery_commands,
               docs_commands, files_commands, init_command, knowledge_commands, maintenance, memory_commands,
               ui_command)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ccmemory")
def cli() -> None:
    """Persistent, searchable memory of each project for Claude Code."""


for _module in (memory_commands, docs_commands, files_commands, archive_commands, config_commands, init_command,
                knowledge_commands, analysis_commands, discovery_commands, maintenance, context, demo, ui_command):
    for _command in _module.COMMANDS:
        cli.add_command(_command)


def main() -> None:
    """Console-script entry point."""
    cli()
