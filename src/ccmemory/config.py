"""User settings: a schema with defaults, ``<data dir>/config.json``, and Claude Code's plugin options on top.

Standard library only, because every hook reads it. Effective value of a setting,
first found wins:

1. a **plugin option** (the ``userConfig`` of ``.claude-plugin/plugin.json``, set when the
   plugin is installed or with ``/plugin`` → configure): Claude Code hands hooks each one as
   ``CLAUDE_PLUGIN_OPTION_<KEY>``, and ``.mcp.json`` passes the same names to the MCP server,
   so both read the same value; an empty value means "not set";
2. ``config.json`` in the data directory (``ccmemory config set`` writes it);
3. the default in :data:`SCHEMA`.

A missing file means the defaults; a broken file or a value the schema rejects
never stops a hook: the value is ignored and :attr:`Config.problems` says why,
so callers can log it. Example ``config.json``::

    {"capture": {"skip_tools": ["TodoWrite", "Glob"]},
     "context": {"max_tokens": 1500},
     "summary": {"mode": "claude", "timeout_seconds": 60}}
"""

from __future__ import annotations

import json
import os
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping

from . import paths

CONFIG_FILENAME = "config.json"
OPTION_ENV_PREFIX = "CLAUDE_PLUGIN_OPTION_"
FROM_DEFAULT, FROM_FILE, FROM_PLUGIN = "default", "config.json", "plugin option"

#: Every setting: section -> key -> spec. ``type`` is int, float, bool, choice (one of
#: ``choices``), text (``nullable`` or not) or strings (a list of text).
SCHEMA: dict[str, dict[str, dict[str, Any]]] = {
    "capture": {
        "enabled": {"type": "bool", "default": True,
                    "help": "Record tool calls (PostToolUse) and session summaries (Stop)."},
        "max_result_chars": {"type": "int", "default": 10000, "min": 0,
                             "help": "Skip a tool call whose result serializes (as JSON) to more characters than "
                                     "this (noted in logs/hooks.log). What is never stored does not count: an edit's "
                                     "copies of the file and its diff, a Read's content, a web search's pages."},
        "max_field_chars": {"type": "int", "default": 1500, "min": 100,
                            "help": "Cut each stored field (command, output) to this, keeping head and tail."},
        "skip_tools": {"type": "strings", "help": "Tools never recorded (names or shell-style patterns).",
                       "default": ["TodoWrite", "TodoRead", "AskUserQuestion", "ListMcpResourcesTool",
                                   "ReadMcpResourceTool", "SlashCommand", "Skill", "ToolSearch", "ExitPlanMode",
                                   "EnterPlanMode"]},
    },
    "context": {
        "max_tokens": {"type": "int", "default": 2000, "min": 0, "max": 10000,
                       "help": "SessionStart budget in tokens (Claude Code itself caps it at 10,000 characters)."},
        "sessions": {"type": "int", "default": 3, "min": 0, "max": 50,
                     "help": "Latest session summaries shown at session start."},
        "memories": {"type": "int", "default": 40, "min": 0, "max": 500,
                     "help": "Most salient project memories listed at session start."},
    },
    "local_context": {
        "enabled": {"type": "bool", "default": True,
                    "help": "Keep the rolling per-directory activity log (`ccmemory context show`)."},
    },
    "summary": {
        "mode": {"type": "choice", "default": "extractive", "choices": ["extractive", "claude"],
                 "help": "extractive (deterministic, no model) or claude (your own `claude -p`, run detached)."},
        "claude_command": {"type": "text", "default": "claude", "help": "The claude CLI used by summary mode claude."},
        "model": {"type": "text", "default": None, "nullable": True,
                  "help": "Model for summary mode claude (default: the CLI's own)."},
        "timeout_seconds": {"type": "int", "default": 90, "min": 1, "max": 3600,
                            "help": "How long a model-written summary may take."},
    },
    "promotion": {
        "min_salience": {"type": "float", "default": 0.7, "min": 0.0, "max": 1.0,
                         "help": "SessionEnd promotes session memories above this salience to the project tier."},
        "auto_discoveries": {"type": "bool", "default": False,
                             "help": "After a search, write each discovery referenced 3+ times in 7 days to the "
                                     "project's knowledge folder (discoveries/<slug>.md). Off: only `ccmemory "
                                     "promote` writes them."},
    },
    "docs": {
        "allow_private_hosts": {"type": "strings", "default": [],
                                "help": "Hosts, addresses or networks (10.0.0.0/8) that docs ingest may fetch although "
                                        "they are not public (intranet pages); nothing else that is loopback, private "
                                        "or link-local is ever fetched."},
    },
    "consolidation": {
        "enabled": {"type": "bool", "default": True,
                    "help": "Consolidate in the background (the MCP server, when a pass is due): merge repeated "
                            "observations, fold old routine ones into their session's summary, decay unused ones."},
        "interval_hours": {"type": "int", "default": 24, "min": 1, "max": 8760,
                           "help": "Hours between background consolidation passes."},
        "fold_after_days": {"type": "int", "default": 30, "min": 1, "max": 3650,
                            "help": "Fold routine observations older than this into their session's summary "
                                    "(never failures, edits the summary names, or anything recalled or reinforced); "
                                    "older file writes keep only their first lines."},
        "undo_days": {"type": "int", "default": 7, "min": 1, "max": 365,
                      "help": "Keep the latest pass's undo log this many days after it finished, then drop it "
                              "(a newer pass drops it sooner)."},
        "decay_half_life_days": {"type": "int", "default": 90, "min": 1, "max": 3650,
                                 "help": "An observation never retrieved loses half its salience over this many days "
                                         "(down to a quarter of its importance)."},
    },
    "storage": {
        "budget_mb": {"type": "int", "default": 200, "min": 10,
                      "help": "The database's size budget in MB, every project together: over it, consolidation, "
                              "then the oldest least salient observations go."},
        "project_budget_mb": {"type": "int", "default": 50, "min": 1,
                              "help": "The share of the database one project may fill, in MB."},
    },
    "embedding": {
        "model": {"type": "text", "default": "sentence-transformers/all-MiniLM-L6-v2",
                  "help": "fastembed model name (the built-in one needs no download; another is downloaded once)."},
        "path": {"type": "text", "default": None, "nullable": True,
                 "help": "Local folder with model.onnx and tokenizer.json, run by ccmemory's own encoder (mean "
                         "pooling), nothing downloaded (docs/multilingual.md); with a fastembed model name: "
                         "that model's files."},
        "query_prefix": {"type": "text", "default": None, "nullable": True,
                         "help": "Text put before every search query, for a model trained with one (e5: 'query: ')."},
        "document_prefix": {"type": "text", "default": None, "nullable": True,
                            "help": "Text put before every memory and document embedded, for a model trained with "
                                    "one (e5: 'passage: ')."},
    },
    "sync": {
        "url": {"type": "text", "default": None, "nullable": True, "secret": True,
                "help": "The team server (postgresql://USER@HOST:PORT/DB; keep the password in ~/.pgpass). "
                        "Unset: CCMEMORY_SYNC_URL, then libpq's PG* variables and PGSERVICE."},
        "team": {"type": "text", "default": None, "nullable": True,
                 "help": "The team on the server this machine syncs with (unset: the only team you are a member of)."},
        "personal": {"type": "bool", "default": True,
                     "help": "Sync all my memories of projects with a git identity between my machines (scope "
                             "personal: only my role sees them)."},
        "team_sources": {"type": "strings", "default": ["summary", "manual", "mcp", "ui", "knowledge", "discovery"],
                         "help": "Memories of these sources are shared with the whole team (session summaries, "
                                 "memories added by hand or with memory_add, knowledge entries, discoveries). Add "
                                 "capture to share raw tool output too."},
        "replica_max": {"type": "int", "default": 50_000, "min": 0,
                        "help": "The most teammates' memories kept on this machine per project (the most salient "
                                "and newest); beyond it the rest stay on the server, and a search that includes "
                                "team memory also asks the server (1.5 s at most, then local results alone)."},
    },
}

#: Plugin options (``userConfig`` keys in plugin.json) and the setting each one sets.
PLUGIN_OPTIONS: dict[str, tuple[str, str]] = {
    "summary_mode": ("summary", "mode"),
    "context_max_tokens": ("context", "max_tokens"),
    "capture": ("capture", "enabled"),
}

DEFAULTS: dict[str, dict[str, Any]] = {
    section: {key: spec["default"] for key, spec in keys.items()} for section, keys in SCHEMA.items()
}

_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


class Config:
    """The effective settings, where each came from, and the reasons anything was ignored."""

    def __init__(self, data: dict[str, dict[str, Any]], path: str, problems: list[str],
                 sources: dict[str, str] | None = None) -> None:
        self.data = data
        self.path = path
        self.problems = problems
        self.sources = sources or {}

    def get(self, section: str, key: str) -> Any:
        return self.data[section][key]

    def section(self, name: str) -> dict[str, Any]:
        return self.data[name]

    def source(self, section: str, key: str) -> str:
        return self.sources.get(f"{section}.{key}", FROM_DEFAULT)


def config_path() -> str:
    return os.path.join(paths.data_dir(), CONFIG_FILENAME)


def spec_of(name: str) -> tuple[str, str, dict[str, Any]]:
    """Section, key and spec of a dotted setting name; ValueError naming the known ones otherwise."""
    section, _, key = name.partition(".")
    if section not in SCHEMA or key not in SCHEMA[section]:
        known = ", ".join(f"{s}.{k}" for s, keys in SCHEMA.items() for k in keys)
        raise ValueError(f"unknown setting {name!r}; known settings: {known}")
    return section, key, SCHEMA[section][key]


def check(name: str, spec: dict[str, Any], value: Any) -> tuple[Any, str | None]:
    """The value as stored if the schema accepts it, else (None, why not)."""
    kind = spec["type"]
    if value is None:
        return (None, None) if spec.get("nullable") else (None, f"{name} cannot be null")
    if kind == "bool":
        ok = isinstance(value, bool)
    elif kind in ("int", "float"):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok and kind == "int":
            ok = float(value).is_integer()
            value = int(value) if ok else value
        if ok and ("min" in spec and value < spec["min"] or "max" in spec and value > spec["max"]):
            return None, f"{name} must be between {spec.get('min', '-inf')} and {spec.get('max', 'inf')}, not {value}"
    elif kind == "choice":
        if value not in spec["choices"]:
            return None, f"{name} must be one of {', '.join(spec['choices'])}, not {value!r}"
        ok = True
    elif kind == "strings":
        ok = isinstance(value, list) and all(isinstance(item, str) for item in value)
    else:
        ok = isinstance(value, str) and bool(value.strip())
    if not ok:
        expected = {"bool": "true or false", "int": "a whole number", "float": "a number", "strings": "a list of text",
                    "text": "text"}.get(kind, kind)
        return None, f"{name} must be {expected}, not {json.dumps(value)}"
    return value, None


def parse(name: str, spec: dict[str, Any], text: str) -> tuple[Any, str | None]:
    """A value typed on a command line or passed as a plugin option, checked against the schema."""
    kind = spec["type"]
    raw = text.strip()
    value: Any = raw
    if spec.get("nullable") and raw.lower() in ("", "null", "none"):
        value = None
    elif kind == "bool":
        value = True if raw.lower() in _TRUE else False if raw.lower() in _FALSE else raw
    elif kind in ("int", "float"):
        try:
            value = float(raw) if kind == "float" or "." in raw else int(raw)
        except ValueError:
            pass
    elif kind == "strings":
        try:
            value = json.loads(raw) if raw.startswith("[") else [part.strip() for part in raw.split(",") if part.strip()]
        except ValueError as exc:
            return None, f"{name}: {exc}"
    return check(name, spec, value)


def claude_plugin_options(settings_file: str | None = None) -> dict[str, str]:
    """ccmemory's plugin options as Claude Code stored them (``pluginConfigs`` in its user settings).

    For the command line, which Claude Code does not start: it reads the same
    values hooks receive as ``CLAUDE_PLUGIN_OPTION_<KEY>``. Empty when unreadable.
    """
    if settings_file is None:
        settings_file = os.path.join(paths.claude_config_dir(), "settings.json")
    try:
        with open(settings_file, encoding="utf-8") as handle:
            configs = json.load(handle).get("pluginConfigs") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    for plugin_id, entry in sorted(configs.items()):
        if plugin_id.split("@")[0] == "ccmemory" and isinstance(entry, dict):
            options = entry.get("options") or {}
            return {f"{OPTION_ENV_PREFIX}{key.upper()}": json.dumps(value) if isinstance(value, bool) else str(value)
                    for key, value in options.items() if key in PLUGIN_OPTIONS}
    return {}


def load(path: str | os.PathLike[str] | None = None, *, environ: Mapping[str, str] | None = None) -> Config:
    """The effective settings: plugin options over the config file over the defaults; never raises."""
    path = os.fspath(path) if path is not None else config_path()
    data = {name: {k: list(v) if isinstance(v, list) else v for k, v in values.items()}
            for name, values in DEFAULTS.items()}
    problems: list[str] = []
    sources: dict[str, str] = {}

    def use(section: str, key: str, checked: tuple[Any, str | None], source: str, why_ignored: str) -> None:
        value, problem = checked
        if problem:
            problems.append(problem + why_ignored)
            return
        data[section][key] = value
        sources[f"{section}.{key}"] = source

    _read_file(path, use, problems)
    env = os.environ if environ is None else environ
    for option, (section, key) in PLUGIN_OPTIONS.items():
        text = env.get(OPTION_ENV_PREFIX + option.upper())
        if text:
            use(section, key, parse(f"plugin option {option}", SCHEMA[section][key], text), FROM_PLUGIN,
                "; ignored (change it with /plugin in Claude Code)")
    return Config(data, path, problems, sources)


def _read_file(path: str, use: Callable[..., None], problems: list[str]) -> None:
    """Hand each setting of the config file to ``use``; note what cannot be read at all."""
    try:
        user = read_file_settings(path)
    except OSError as exc:
        problems.append(f"could not read {path}: {exc}; using defaults")
        return
    except ValueError as exc:
        problems.append(f"{exc}; using defaults. Fix or delete the file.")
        return
    for section, values in user.items():
        if section not in SCHEMA:
            problems.append(f"unknown section {section!r} in {path} ignored; known: {', '.join(SCHEMA)}")
        elif not isinstance(values, dict):
            problems.append(f"section {section!r} in {path} must be an object; ignored")
        else:
            for key, value in values.items():
                if key not in SCHEMA[section]:
                    problems.append(f"unknown setting {section}.{key} in {path}; ignored")
                else:
                    use(section, key, check(f"{section}.{key}", SCHEMA[section][key], value), FROM_FILE,
                        f" in {path}; the default is used")


def read_file_settings(path: str | None = None) -> dict[str, Any]:
    """The config file's JSON object as written ({} when there is none); ValueError if it is not one."""
    path = path or config_path()
    try:
        with open(path, encoding="utf-8") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return {}
    try:
        user = json.loads(raw) if raw.strip() else {}
    except ValueError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc})") from None
    if not isinstance(user, dict):
        raise ValueError(f"{path} must hold a JSON object")
    return user


def write_file_settings(user: dict[str, Any], path: str | None = None) -> str:
    """Replace the config file atomically (private to the user); returns its path."""
    if path is None:
        path = config_path()
        paths.ensure_private_dir(os.path.dirname(path))
    else:
        paths.private_parent(path)
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(user, handle, indent=2, sort_keys=True)
        handle.write("\n")
    paths.make_private_file(temporary)
    os.replace(temporary, path)
    return path
