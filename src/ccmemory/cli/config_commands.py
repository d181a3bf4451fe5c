"""``ccmemory config``: show every setting with its value and origin, and set or unset one in config.json."""

from __future__ import annotations

import json
from typing import Any

import click

from .groups import WholeHelpGroup

from .. import config as settings
from ..errors import ValidationError
from .common import echo, emit_json, handles_errors, json_option, load_settings

PLUGIN_HINT = "set it in Claude Code: /plugin → ccmemory → configure, or `claude plugin configure ccmemory@ccmemory`"


def _shown(value: Any) -> str:
    """A value as printed: JSON but for text, a password in a URL (sync.url) masked."""
    from ..team.connection import masked

    return masked(json.dumps(value) if not isinstance(value, str) else value)


def _option_for(section: str, key: str) -> str | None:
    return next((option for option, target in settings.PLUGIN_OPTIONS.items() if target == (section, key)), None)


@click.group(cls=WholeHelpGroup, invoke_without_command=True)
@click.pass_context
def config(ctx: click.Context) -> None:
    """Show the settings (no subcommand), or get, set and unset one."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(show)


@config.command()
@json_option
def show(as_json: bool) -> None:
    """Every setting: its value, where it comes from, and what it does."""
    loaded = load_settings()
    rows = []
    for section, keys in settings.SCHEMA.items():
        for key, spec in keys.items():
            value = loaded.get(section, key)
            rows.append({"name": f"{section}.{key}", "value": _shown(value) if spec.get("secret") and value else value,
                         "source": loaded.source(section, key), "default": spec["default"],
                         "plugin_option": _option_for(section, key), "help": spec["help"]})
    if as_json:
        emit_json({"config_file": loaded.path, "settings": rows, "problems": loaded.problems})
        return
    echo(f"Config file: {loaded.path}")
    width = max(len(row["name"]) for row in rows)
    for row in rows:
        origin = "" if row["source"] == settings.FROM_DEFAULT else f"  [{row['source']}]"
        echo(f"{row['name']:<{width}} = {_shown(row['value'])}{origin}")
        option = f" Plugin option `{row['plugin_option']}`." if row["plugin_option"] else ""
        echo(f"{'':<{width}}   {row['help']}{option}")
    for problem in loaded.problems:
        echo(f"Ignored: {problem}", err=True)


@config.command()
@click.argument("name")
@handles_errors
def get(name: str) -> None:
    """Print one setting's effective value (JSON for lists and null)."""
    section, key, _ = _known(name)
    echo(_shown(load_settings().get(section, key)))


@config.command(name="set")
@click.argument("name")
@click.argument("value")
@handles_errors
def set_(name: str, value: str) -> None:
    """Set NAME (section.key) to VALUE in config.json, checked against the schema.

    Lists take JSON (["a","b"]) or commas (a,b); null clears a setting that may be empty.
    """
    section, key, spec = _known(name)
    parsed, problem = settings.parse(name, spec, value)
    if problem:
        raise ValidationError(problem)
    user = _file_settings()
    user.setdefault(section, {})[key] = parsed
    path = settings.write_file_settings(user)
    echo(f"{name} = {_shown(parsed)} (saved in {path})")
    _warn_if_overridden(section, key)


@config.command()
@click.argument("name")
@handles_errors
def unset(name: str) -> None:
    """Remove NAME from config.json, so its default applies again."""
    section, key, spec = _known(name)
    user = _file_settings()
    if key not in (user.get(section) or {}):
        echo(f"{name} is not set in the config file; it is {_shown(spec['default'])} by default")
        return
    del user[section][key]
    if not user[section]:
        del user[section]
    settings.write_file_settings(user)
    echo(f"{name} unset; the default {_shown(spec['default'])} applies")
    _warn_if_overridden(section, key)


def _known(name: str) -> tuple[str, str, dict[str, Any]]:
    try:
        return settings.spec_of(name)
    except ValueError as exc:
        raise ValidationError(str(exc)) from None


def _file_settings() -> dict[str, Any]:
    try:
        return settings.read_file_settings()
    except ValueError as exc:
        raise ValidationError(f"{settings.config_path()} cannot be edited: {exc}. Fix or delete it first.") from None


def _warn_if_overridden(section: str, key: str) -> None:
    loaded = load_settings()
    if loaded.source(section, key) == settings.FROM_PLUGIN:
        echo(f"Note: inside Claude Code the plugin option `{_option_for(section, key)}` "
                   f"({_shown(loaded.get(section, key))}) overrides this; {PLUGIN_HINT}.", err=True)


COMMANDS = [config]
