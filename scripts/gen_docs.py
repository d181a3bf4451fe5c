"""Render the docs' tables of CLI commands, MCP tools and settings from the code that defines them.

Each table sits between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->`` in a
Markdown file; ``python scripts/gen_docs.py`` rewrites what is between the markers, and
``--check`` only compares, exits 1 and names the stale files. ``tests/test_docs.py`` runs the
check, so a command, tool or setting changed in the code without its docs fails the suite.

The sources: the click group :data:`ccmemory.cli.cli` (each command's first help sentence,
subcommands too), the ``TOOLS`` of every module in :data:`ccmemory.mcp.registry.TOOL_MODULES`
(name, first sentence of the description, annotations; each parameter's type, default, range and
description from the tool's declaration, :mod:`ccmemory.parameters`) and :data:`ccmemory.config.SCHEMA`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from importlib import import_module
from pathlib import Path
from typing import Any, Callable, Iterator

import click

ROOT = Path(__file__).resolve().parents[1]

#: Longer than any first sentence, so click returns the sentence whole (as ``ccmemory --help`` shows it).
SUMMARY_CHARS = 400


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def first_sentence(text: str) -> str:
    """The first sentence of a description: up to the first full stop that ends a sentence.

    A stop ends one when a capital letter or the end follows it and it is not part of an
    ellipsis or an abbreviation (``e.g.``, ``i.e.``).
    """
    flat = " ".join(text.split())
    match = re.match(r"(.+?(?<!\.)(?<!e\.g)(?<!i\.e)[.!?])(?=\s+[A-Z`]|$)", flat)
    return match.group(1) if match else flat


def walk_commands(group: click.Group, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    """Every visible command under ``group`` in ``--help`` order, a subgroup's commands after it."""
    ctx = click.Context(group, info_name="ccmemory")
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        yield f"{prefix}{name}", command
        if isinstance(command, click.Group):
            yield from walk_commands(command, f"{prefix}{name} ")


def cli_group() -> click.Group:
    from ccmemory.cli import cli
    return cli


def command_summary(command: click.Command) -> str:
    return cell(command.get_short_help_str(limit=SUMMARY_CHARS))


def commands_table() -> str:
    """The top-level commands, a group's subcommands named beside it."""
    rows = ["| command | does |", "|---|---|"]
    for name, command in walk_commands(cli_group()):
        if " " in name:
            continue
        shown = f"`{name}`"
        if isinstance(command, click.Group):
            subs = [sub for sub, _ in walk_commands(command)]
            shown = f"`{name} {'|'.join(subs)}`".replace("|", "\\|")
        rows.append(f"| {shown} | {command_summary(command)} |")
    return "\n".join(rows)


def all_commands_table() -> str:
    """Every command and subcommand with its usage line."""
    rows = ["| command | does |", "|---|---|"]
    for name, command in walk_commands(cli_group()):
        ctx = click.Context(command, info_name=f"ccmemory {name}")
        usage = " ".join(command.collect_usage_pieces(ctx))
        rows.append(f"| `{cell(f'{name} {usage}'.strip())}` | {command_summary(command)} |")
    return "\n".join(rows)


def mcp_tools() -> list[Any]:
    from ccmemory.mcp.registry import TOOL_MODULES
    return [tool for module in TOOL_MODULES for tool in import_module(module).TOOLS]


def tool_kind(annotations: Any) -> str:
    kinds = ["read-only" if annotations.read_only else "writes"]
    if annotations.destructive:
        kinds.append("destructive")
    if annotations.open_world:
        kinds.append("open-world")
    return ", ".join(kinds)


def tools_table() -> str:
    rows = ["| tool | does | kind |", "|---|---|---|"]
    for tool in mcp_tools():
        rows.append(f"| `{tool.name}` | {cell(first_sentence(tool.description))} | {tool_kind(tool.annotations)} |")
    return "\n".join(rows)


def tool_hints(annotations: Any) -> str:
    """Every MCP annotation of a tool, as its ``tools/list`` entry carries it."""
    hints = annotations.as_mcp()
    return f"{annotations.title}: " + ", ".join(f"`{name}` {json.dumps(hints[name])}" for name in hints if name != "title")


def tool_parameters() -> str:
    """Each tool's annotations and parameters (type, default, range, description), from its declaration."""
    blocks = []
    for tool in mcp_tools():
        lines = [f"### `{tool.name}`", "", tool_hints(tool.annotations), ""]
        if tool.parameters.items:
            lines += ["| parameter | type | default | range | description |", "|---|---|---|---|---|"]
            for parameter in tool.parameters.items:
                default = "required" if parameter.required else f"`{cell(parameter.default_text() or 'none')}`"
                lines.append(f"| `{parameter.name}` | {parameter.type_name} | {default} | "
                             f"{cell(parameter.range_text() or '')} | {cell(parameter.param.description)} |")
        else:
            lines.append("No parameters.")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def default_text(spec: dict[str, Any]) -> str:
    value = spec["default"]
    return "none" if value is None else json.dumps(value)


def settings_table() -> str:
    """Every setting with its default and help (docs/settings.md)."""
    from ccmemory.config import SCHEMA
    rows = ["| setting | default | what it does |", "|---|---|---|"]
    for section, keys in SCHEMA.items():
        for key, spec in keys.items():
            rows.append(f"| `{section}.{key}` | `{cell(default_text(spec))}` | {cell(spec['help'])} |")
    return "\n".join(rows)


def settings_sections() -> str:
    """The settings by section, names only: the README's short table (docs/settings.md has the full one)."""
    from ccmemory.config import SCHEMA
    rows = ["| section | settings |", "|---|---|"]
    for section, keys in SCHEMA.items():
        rows.append(f"| `{section}` | {', '.join(f'`{key}`' for key in keys)} |")
    return "\n".join(rows)


#: Marker name -> the function rendering its table.
TABLES: dict[str, Callable[[], str]] = {
    "commands": commands_table,
    "all-commands": all_commands_table,
    "tools": tools_table,
    "tool-parameters": tool_parameters,
    "settings": settings_table,
    "settings-sections": settings_sections,
}

#: The files holding generated tables.
FILES = ("README.md", "docs/cli.md", "docs/mcp-tools.md", "docs/settings.md")

_BLOCK = re.compile(r"(<!-- generated:([a-z-]+) -->\n).*?(<!-- /generated:\2 -->)", re.S)


def render(text: str, tables: dict[str, str]) -> str:
    """``text`` with every generated block replaced by its table (an unknown name is an error)."""
    def replace(match: re.Match[str]) -> str:
        name = match.group(2)
        if name not in tables:
            raise SystemExit(f"unknown generated block {name!r}; known: {', '.join(tables)}")
        return f"{match.group(1)}{tables[name]}\n{match.group(3)}"
    return _BLOCK.sub(replace, text)


def stale_files(root: Path = ROOT) -> list[str]:
    """The files whose generated blocks differ from what the code renders now."""
    tables = {name: make() for name, make in TABLES.items()}
    return [name for name in FILES
            if render((root / name).read_text(encoding="utf-8"), tables) != (root / name).read_text(encoding="utf-8")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a file is stale instead of rewriting it")
    args = parser.parse_args(argv)
    stale = stale_files()
    if args.check:
        for name in stale:
            print(f"{name} is stale: run python scripts/gen_docs.py", file=sys.stderr)
        return 1 if stale else 0
    tables = {name: make() for name, make in TABLES.items()}
    for name in stale:
        path = ROOT / name
        path.write_text(render(path.read_text(encoding="utf-8"), tables), encoding="utf-8")
        print(f"rewrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
