"""User settings: one JSON file, ``<data dir>/config.json``, laid over built-in defaults.

Standard library only, because every hook reads it. A missing file means the
defaults; a broken file or a wrongly typed value never stops a hook: the
default is used and :attr:`Config.problems` says what was ignored, so callers
can log it. Example ``config.json``::

    {"capture": {"skip_tools": ["TodoWrite", "Glob"]},
     "context": {"max_tokens": 1500},
     "summary": {"mode": "claude", "timeout_seconds": 60}}
"""

from __future__ import annotations

import json
import os
TYPE_CHECKING = False  # typing costs the capture hook milliseconds; annotations are strings
if TYPE_CHECKING:
    from typing import Any

from . import paths

CONFIG_FILENAME = "config.json"

DEFAULTS: dict[str, dict[str, Any]] = {
    "capture": {
        # Observations whose tool result serializes to more than this are skipped.
        "max_result_bytes": 10240,
        # Each stored field (command, output, snippet) is cut to this, keeping head and tail.
        "max_field_chars": 1500,
        "skip_tools": [
            "TodoWrite", "TodoRead", "AskUserQuestion", "ListMcpResourcesTool", "ReadMcpResourceTool",
            "SlashCommand", "Skill", "ToolSearch", "ExitPlanMode", "EnterPlanMode",
        ],
    },
    "context": {
        # SessionStart budget; Claude Code itself caps additionalContext at 10,000 characters.
        "max_tokens": 2000,
        "sessions": 3,
        "memories": 40,
    },
    "local_context": {
        # The rolling per-directory activity log (``ccmemory context show``): on unless switched off here,
        # or per directory with ``ccmemory context off``.
        "enabled": True,
    },
    "summary": {
        # "extractive" (deterministic, no model) or "claude" (the user's own `claude -p`, run detached).
        "mode": "extractive",
        "claude_command": "claude",
        "model": None,
        "timeout_seconds": 90,
    },
    "promotion": {
        # SessionEnd moves session-tier memories above this salience into the project tier.
        "min_salience": 0.7,
    },
    "embedding": {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "path": None,
    },
}


class Config:
    """The effective settings plus the reasons any part of the file was ignored."""

    def __init__(self, data: dict[str, dict[str, Any]], path: str, problems: list[str]) -> None:
        self.data = data
        self.path = path
        self.problems = problems

    def get(self, section: str, key: str) -> Any:
        return self.data[section][key]

    def section(self, name: str) -> dict[str, Any]:
        return self.data[name]


def config_path() -> str:
    return os.path.join(paths.data_dir(), CONFIG_FILENAME)


def load(path: str | os.PathLike[str] | None = None) -> Config:
    """Read the config file (if any) over the defaults; never raises for bad content."""
    path = os.fspath(path) if path is not None else config_path()
    data = {name: {k: list(v) if isinstance(v, list) else v for k, v in values.items()}
            for name, values in DEFAULTS.items()}
    problems: list[str] = []
    try:
        with open(path, encoding="utf-8") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return Config(data, path, problems)
    except OSError as exc:
        return Config(data, path, [f"could not read {path}: {exc}; using defaults"])
    try:
        user = json.loads(raw) if raw.strip() else {}
    except ValueError as exc:
        return Config(data, path, [f"{path} is not valid JSON ({exc}); using defaults. Fix or delete the file."])
    if not isinstance(user, dict):
        return Config(data, path, [f"{path} must hold a JSON object; using defaults"])
    for section, values in user.items():
        if section not in data:
            problems.append(f"unknown section {section!r} in {path} ignored; known: {', '.join(data)}")
            continue
        if not isinstance(values, dict):
            problems.append(f"section {section!r} in {path} must be an object; ignored")
            continue
        for key, value in values.items():
            problem = _merge_value(data[section], section, key, value)
            if problem:
                problems.append(f"{problem} in {path}; the default is used")
    return Config(data, path, problems)


def _merge_value(target: dict[str, Any], section: str, key: str, value: Any) -> str | None:
    if key not in target:
        return f"unknown setting {section}.{key}"
    default = target[key]
    if default is None or value is None:
        if value is not None and not isinstance(value, str):
            return f"{section}.{key} must be text or null"
        target[key] = value
        return None
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, (int, float)):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
        if ok and isinstance(default, int) and not isinstance(default, bool):
            value = int(value)
    elif isinstance(default, list):
        ok = isinstance(value, list) and all(isinstance(item, str) for item in value)
    else:
        ok = isinstance(value, type(default))
    if not ok:
        return f"{section}.{key} has the wrong type ({type(value).__name__}, expected like {default!r})"
    target[key] = value
    return None
