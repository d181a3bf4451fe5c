"""Settings: the schema, config.json, Claude Code's plugin options on top, and `ccmemory config`.

Plugin options (``userConfig`` in plugin.json) reach hooks as ``CLAUDE_PLUGIN_OPTION_<KEY>``
(verified with Claude Code 2.1.197 and 2.1.330) and the MCP server through the same names in
``.mcp.json``; these tests drive the real hook process, the real MCP server and the real CLI.
"""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path


from ccmemory import config
from testing.hooks import bash_call, common, memories_of, run_hook
from testing.mcp import running_server
from testing.cli import invoke

REPO_ROOT = Path(__file__).resolve().parents[1]


def cli(home: Path, *args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """The CLI of a user whose HOME is beside the data dir (their ``~/.claude`` is the test's own)."""
    return invoke(home, cwd, *args, HOME=str(home.parent / "user-home"), **env)


def test_every_default_passes_its_own_schema():
    for section, keys in config.SCHEMA.items():
        for key, spec in keys.items():
            assert config.check(f"{section}.{key}", spec, spec["default"]) == (spec["default"], None)
    for option, (section, key) in config.PLUGIN_OPTIONS.items():
        assert key in config.SCHEMA[section], option


def test_the_file_is_checked_against_the_schema(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"context": {"max_tokens": 1200, "sessions": -1}, "summary": {"mode": "poetic"},
                                "capture": {"enabled": "yes", "skip_tools": ["Glob"]}, "nope": {}}))
    loaded = config.load(path, environ={})
    assert loaded.get("context", "max_tokens") == 1200 and loaded.source("context", "max_tokens") == "config.json"
    assert loaded.get("capture", "skip_tools") == ["Glob"]
    assert loaded.get("context", "sessions") == 3 and loaded.get("summary", "mode") == "extractive"
    assert loaded.get("capture", "enabled") is True and loaded.source("capture", "enabled") == "default"
    problems = " | ".join(loaded.problems)
    assert "context.sessions must be between 0 and 50" in problems
    assert "summary.mode must be one of extractive, claude" in problems
    assert "capture.enabled must be true or false" in problems
    assert "unknown section 'nope'" in problems


def test_plugin_options_win_over_the_file_and_empty_means_unset(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"summary": {"mode": "claude"}, "context": {"max_tokens": 900}}))
    env = {"CLAUDE_PLUGIN_OPTION_SUMMARY_MODE": "extractive", "CLAUDE_PLUGIN_OPTION_CONTEXT_MAX_TOKENS": "",
           "CLAUDE_PLUGIN_OPTION_CAPTURE": "false"}
    loaded = config.load(path, environ=env)
    assert (loaded.get("summary", "mode"), loaded.source("summary", "mode")) == ("extractive", "plugin option")
    assert (loaded.get("context", "max_tokens"), loaded.source("context", "max_tokens")) == (900, "config.json")
    assert loaded.get("capture", "enabled") is False
    bad = config.load(path, environ={"CLAUDE_PLUGIN_OPTION_CONTEXT_MAX_TOKENS": "lots"})
    assert bad.get("context", "max_tokens") == 900
    assert any("plugin option context_max_tokens" in problem and "/plugin" in problem for problem in bad.problems)


def test_the_manifest_declares_the_options_and_mcp_json_passes_them_to_the_server():
    manifest = json.loads((REPO_ROOT / ".claude-plugin" / "plugin.json").read_text())
    assert set(manifest["userConfig"]) == set(config.PLUGIN_OPTIONS)
    types = {"bool": "boolean", "int": "number", "float": "number", "choice": "string"}
    for option, (section, key) in config.PLUGIN_OPTIONS.items():
        declared = manifest["userConfig"][option]
        assert declared["type"] == types[config.SCHEMA[section][key]["type"]]
        assert "default" not in declared, "a default would always override config.json"
    env = json.loads((REPO_ROOT / ".mcp.json").read_text())["mcpServers"]["memory"]["env"]
    assert env == {f"{config.OPTION_ENV_PREFIX}{option.upper()}": f"${{user_config.{option}}}"
                   for option in config.PLUGIN_OPTIONS}


def test_capture_off_as_a_plugin_option_stores_nothing(tmp_path, project_dir):
    home = tmp_path / "home"
    call = bash_call("s-off", project_dir, "make test", "ok", "toolu_1")
    run_hook("post_tool_use", call, home, CLAUDE_PLUGIN_OPTION_CAPTURE="false")
    run_hook("stop", common("s-off", project_dir, "Stop", last_assistant_message="Done."), home,
             CLAUDE_PLUGIN_OPTION_CAPTURE="false")
    assert memories_of(home, "s-off") == []
    run_hook("post_tool_use", bash_call("s-on", project_dir, "make test", "ok", "toolu_2"), home)
    assert len(memories_of(home, "s-on")) == 1


def test_the_mcp_server_reports_the_settings_it_was_given(tmp_path, project_dir):
    with running_server(tmp_path / "home", project_dir, CLAUDE_PLUGIN_OPTION_SUMMARY_MODE="claude",
                        CLAUDE_PLUGIN_OPTION_CAPTURE="") as server:
        answer = server.call("memory_status")
    assert not answer.is_error, answer.text
    assert "summary mode claude (plugin option)" in answer.text
    assert "capture on (default)" in answer.text and "0 memories" in answer.text


def test_config_command_sets_validates_and_unsets(tmp_path):
    home = tmp_path / "data"
    assert cli(home, "config", "set", "context.max_tokens", "1500").returncode == 0
    assert cli(home, "config", "set", "capture.skip_tools", "Glob, Grep").returncode == 0
    assert cli(home, "config", "set", "summary.model", "null").returncode == 0
    refused = cli(home, "config", "set", "summary.mode", "poetic")
    assert refused.returncode == 2 and "must be one of extractive, claude" in refused.stderr
    unknown = cli(home, "config", "set", "context.budget", "5")
    assert unknown.returncode == 2 and "known settings: capture.enabled" in unknown.stderr
    saved = json.loads((home / "config.json").read_text())
    assert saved == {"capture": {"skip_tools": ["Glob", "Grep"]}, "context": {"max_tokens": 1500},
                     "summary": {"model": None}}
    assert stat.S_IMODE((home / "config.json").stat().st_mode) == 0o600
    assert cli(home, "config", "get", "context.max_tokens").stdout.strip() == "1500"
    shown = json.loads(cli(home, "config", "show", "--json").stdout)
    by_name = {row["name"]: row for row in shown["settings"]}
    assert by_name["context.max_tokens"]["source"] == "config.json"
    assert by_name["summary.mode"]["plugin_option"] == "summary_mode"
    assert cli(home, "config", "unset", "context.max_tokens").returncode == 0
    assert "context" not in json.loads((home / "config.json").read_text())


def test_the_cli_reads_the_plugin_options_claude_code_saved(tmp_path):
    home = tmp_path / "data"
    settings_dir = tmp_path / "user-home" / ".claude"
    settings_dir.mkdir(parents=True)
    (settings_dir / "settings.json").write_text(json.dumps(
        {"pluginConfigs": {"ccmemory@ccmemory": {"options": {"capture": False, "summary_mode": "claude"}}}}))
    shown = json.loads(cli(home, "config", "show", "--json").stdout)
    by_name = {row["name"]: row for row in shown["settings"]}
    assert (by_name["capture.enabled"]["value"], by_name["capture.enabled"]["source"]) == (False, "plugin option")
    assert by_name["summary.mode"]["value"] == "claude"
    overridden = cli(home, "config", "set", "summary.mode", "extractive")
    assert overridden.returncode == 0 and "plugin option `summary_mode`" in overridden.stderr


def test_doctor_prints_only_real_problems(tmp_path):
    home = tmp_path / "data"
    healthy = cli(home, "doctor")
    assert healthy.returncode == 0, healthy.stdout
    assert healthy.stdout.startswith("No problems found") and "[ok" not in healthy.stdout
    home.mkdir(exist_ok=True)
    (home / "config.json").write_text('{"summary": {"mode": "poetic"}}')
    broken = cli(home, "doctor")
    assert broken.returncode == 1
    assert broken.stdout.splitlines()[0].startswith("[FAIL] config: summary.mode must be one of")
    assert "[ok" not in broken.stdout and "ccmemory config" in broken.stdout
    assert "[ok  ] database" in cli(home, "doctor", "--verbose").stdout
