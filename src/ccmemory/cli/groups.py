"""The command groups' help: each command's first sentence whole, wrapped, never cut mid-phrase.

click cuts a command's summary in ``--help`` to what fits beside its name on one line and adds
"..."; here the summary is the whole first sentence of the docstring and wraps onto further lines.
"""

from __future__ import annotations

import click

#: Longer than any first sentence: click then stops at the sentence's end instead of cutting.
SUMMARY_CHARS = 400


class WholeHelpGroup(click.Group):
    """A group whose command list shows each summary whole."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=SUMMARY_CHARS)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
