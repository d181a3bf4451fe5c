"""No file of the project is ever imported or executed by ccmemory unless the user opted in (issue 19, item 1).

The hostile repository (``testing.hostile``) records any of its files that runs. Every entry point of
ccmemory runs with it as the current directory, as Claude Code, the user's shell and git start them,
with a relative ``PYTHONPATH`` (``.``) and an empty ``PATH`` entry (the current directory), as a
project's ``.claude/settings.json`` ``env`` or a careless shell profile gives them. No marker may
appear, and each entry point still does its job. (The ``python3`` that Claude Code's PATH gives the hook
commands is Claude Code's choice, not ours: :func:`hook_command`.)
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
from mcp.client.stdio import StdioServerParameters

from testing.hooks import HOOK_PYTHON, bash_call, common, rows, wait_for_background_captures, write_config
from testing.env import isolated_env
from testing.hostile import Hostile, make_hostile, marker_code
from testing.cli import on_terminal
from testing.knowledge import AUTH, write_files
from testing.mcp import RunningServer, connected
from testing.repo import REPO_ROOT
from testing.runtime import fake_ready_runtime

BIN = REPO_ROOT / "bin" / "ccmemory"
GIT = shutil.which("git")
#: Absolute paths that are the current directory of whichever process reads them (Linux).
HERE = ["/proc/self/cwd", "/dev/fd/../cwd", "/proc/thread-self/cwd"] if os.path.isdir("/proc/self/cwd") else []

pytestmark = pytest.mark.skipif(os.name == "nt" or GIT is None, reason="POSIX shells and git")


@pytest.fixture
def hostile(tmp_path: Path) -> Hostile:
    return make_hostile(tmp_path / "hostile", tmp_path / "markers")


@pytest.fixture
def plugin_data(tmp_path: Path) -> tuple[Path, Path]:
    """Claude Code's data folder of the plugin (in ``<tmp>/claude-config``) holding a ready runtime;
    (folder, log of the runtime's uses)."""
    folder, log = tmp_path / "claude-config" / "plugins" / "data" / "ccmemory-inline", tmp_path / "runtime-uses.log"
    fake_ready_runtime(folder, log)
    return folder, log


def uses(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def wait_until(condition, timeout: float = 180) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def plugin_command(template: str) -> str:
    return template.replace("${CLAUDE_PLUGIN_ROOT}", str(REPO_ROOT))


def launcher_command(*args: str) -> list[str]:
    """The launcher as ``.mcp.json`` starts it (with this interpreter for ``python3``)."""
    server = json.loads((REPO_ROOT / ".mcp.json").read_text())["mcpServers"]["memory"]
    return [sys.executable, *map(plugin_command, server["args"]), *args]


def hook_command(event: str) -> str:
    """The command ``hooks.json`` gives ``event``, with its ``python3`` (and ``python`` fallback) by absolute path.

    Which ``python3`` a hook command starts is Claude Code's choice, made with its own PATH (docs/security.md,
    "Not covered"): through a relative entry it is the repository's ``python3`` (``testing.hostile.PROGRAMS``), as
    it would be for any bare command. What these tests show is everything after that choice: the hook, and what
    it starts, in the repository's environment.
    """
    hooks = json.loads((REPO_ROOT / "hooks.json").read_text())["hooks"]
    first, _, fallback = plugin_command(hooks[event][0]["hooks"][0]["command"]).partition(" || ")
    assert first.startswith("python3 ") and fallback.startswith("python "), (first, fallback)
    python = shlex.quote(HOOK_PYTHON)
    return f"{python} {first.removeprefix('python3 ')} || {python} {fallback.removeprefix('python ')}"


def run_plugin_hook(event: str, payload: dict, home: Path, cwd: Path, env: dict[str, str]) -> None:
    """A hook as Claude Code runs it: the command of ``hooks.json`` by the shell, the payload on stdin."""
    done = subprocess.run(["sh", "-c", hook_command(event)], input=json.dumps(payload).encode(), cwd=cwd, env=env,
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    wait_for_background_captures(home)


@contextmanager
def launcher_server(env: dict[str, str], cwd: Path) -> Iterator[RunningServer]:
    """The MCP server as Claude Code starts it (``.mcp.json``, in the project), over stdio."""
    command = launcher_command()
    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(cwd))
    with connected(params, Path(env["CCMEMORY_HOME"]), cwd, timeout=90) as running:
        yield running


def test_the_mcp_server_started_by_the_launcher_runs_nothing_of_the_project(hostile, plugin_data, tmp_path):
    folder, log = plugin_data
    env = hostile.env(tmp_path / "data", CLAUDE_PLUGIN_DATA=str(folder), CLAUDE_PLUGIN_ROOT=str(REPO_ROOT),
                      CLAUDE_PROJECT_DIR=str(hostile.root))
    with launcher_server(env, hostile.root) as server:
        added = server.call("memory_add", {"content": "Releases are cut from the main branch on Tuesdays"})
        assert not added.is_error, added.text
        found = server.call("memory_search", {"query": "Tuesdays releases"})
        assert not found.is_error and "Tuesdays" in found.text, found.text
    # the repository's mcp/ package neither ran nor hid the SDK's mcp.server; the server ran with -P
    assert uses(log) == ["-P -m ccmemory.mcp.server"]
    assert hostile.ran() == []


def test_the_launchers_embedding_pass_runs_nothing_of_the_project(hostile, plugin_data, tmp_path):
    folder, log = plugin_data
    env = hostile.env(tmp_path / "data", CLAUDE_PLUGIN_DATA=str(folder))
    done = subprocess.run(launcher_command("--embed"), cwd=hostile.root, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert uses(log) == ["-P -m ccmemory.embedding_worker"]
    assert hostile.ran() == []


def test_the_hooks_and_the_embedding_pass_session_end_starts_run_nothing_of_the_project(hostile, plugin_data,
                                                                                       tmp_path):
    folder, log = plugin_data
    home = tmp_path / "data"
    env = hostile.env(home, CLAUDE_PLUGIN_DATA=str(folder), CLAUDE_PLUGIN_ROOT=str(REPO_ROOT),
                      CLAUDE_PROJECT_DIR=str(hostile.root))
    run_plugin_hook("SessionStart", common("s1", hostile.root, "SessionStart", source="startup"), home,
                    hostile.root, env)
    run_plugin_hook("PostToolUse", bash_call("s1", hostile.root, "pytest -q", "3 passed", "t1"), home,
                    hostile.root, env)
    run_plugin_hook("SessionEnd", common("s1", hostile.root, "SessionEnd", reason="other"), home, hostile.root, env)
    # SessionEnd started the launcher's --embed in its own session: wait for it to embed what was captured
    assert wait_until(lambda: "-P -m ccmemory.embedding_worker" in uses(log)), uses(log)

    def embedded() -> list[int]:
        return [row["needs_embedding"] for row in rows(home, "SELECT needs_embedding FROM memories")]

    assert wait_until(lambda: set(embedded()) == {0}), embedded()
    assert wait_until(lambda: not (home / "embedder.lock").exists())
    assert uses(log) == ["-P -m ccmemory.embedding_worker"]
    assert hostile.ran() == []


@pytest.mark.skipif(not HERE, reason="/proc/self/cwd is Linux's")
@pytest.mark.parametrize("here", HERE)
def test_absolute_paths_that_lead_to_the_current_directory_count_as_relative(hostile, plugin_data, tmp_path, here):
    """``/proc/self/cwd`` on PYTHONPATH and PATH is the repository, as ``.`` and an empty entry are."""
    folder, log = plugin_data
    home = tmp_path / "data"
    env = hostile.env(home, CLAUDE_PLUGIN_DATA=str(folder), CLAUDE_PLUGIN_ROOT=str(REPO_ROOT),
                      CLAUDE_PROJECT_DIR=str(hostile.root), CLAUDE_CONFIG_DIR=str(tmp_path / "claude-config"))
    env.update(PYTHONPATH=here, PATH=here + os.pathsep + os.environ["PATH"], PYTHONHOME=f"{here}/py")
    run_plugin_hook("SessionStart", common("s1", hostile.root, "SessionStart", source="startup"), home,
                    hostile.root, env)  # finds git for the project's identity
    with launcher_server(env, hostile.root) as server:
        found = server.call("memory_search", {"query": "anything"})
        assert not found.is_error, found.text
    done = cli(hostile, env, "search", "anything", "--mode", "keyword")
    assert done.returncode == 0, done.stderr
    assert uses(log) == ["-P -m ccmemory.mcp.server", "-P -m ccmemory search anything --mode keyword"]
    assert hostile.ran() == []


def test_bin_ccmemory_runs_nothing_of_the_project(hostile, plugin_data, tmp_path):
    _, log = plugin_data
    env = hostile.env(tmp_path / "data", CLAUDE_CONFIG_DIR=str(tmp_path / "claude-config"))
    helped = subprocess.run([str(BIN), "--help"], cwd=hostile.root, env=env, capture_output=True, text=True,
                            timeout=120)
    assert helped.returncode == 0 and "search" in helped.stdout, helped.stderr
    found = subprocess.run([str(BIN), "search", "anything", "--mode", "keyword"], cwd=hostile.root, env=env,
                           capture_output=True, text=True, timeout=120)
    assert found.returncode == 0, found.stderr
    assert uses(log) == ["-P -m ccmemory --help", "-P -m ccmemory search anything --mode keyword"]
    assert hostile.ran() == []


@pytest.mark.parametrize("value", ["bin/python", "./bin/python", *[f"{here}/bin/python" for here in HERE]])
def test_a_relative_interpreter_override_is_refused(hostile, tmp_path, value):
    env = hostile.env(tmp_path / "data", CCMEMORY_PYTHON=value)
    for command in (launcher_command(), [str(BIN), "--version"]):
        done = subprocess.run(command, cwd=hostile.root, env=env, capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 1, done.stdout + done.stderr
        assert f"CCMEMORY_PYTHON is '{value}', a relative path" in done.stderr
        assert "Set CCMEMORY_PYTHON to an absolute path" in done.stderr
    assert hostile.ran() == []


def plugin_cli_env(hostile: Hostile, tmp_path: Path) -> dict[str, str]:
    """The shell of Claude's Bash tool in the repository, whose ``ccmemory`` is the plugin's ``bin/ccmemory``."""
    home = tmp_path / "data"
    return hostile.env(home, CLAUDE_CONFIG_DIR=str(tmp_path / "claude-config"))


def cli(hostile: Hostile, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN), *args], cwd=hostile.root, env=env, capture_output=True, text=True, timeout=180,
                          stdin=subprocess.DEVNULL)


def test_init_and_a_real_commit_through_the_installed_hook_run_nothing_of_the_project(hostile, plugin_data,
                                                                                     tmp_path):
    env = plugin_cli_env(hostile, tmp_path)
    done = cli(hostile, env, "init")
    assert done.returncode == 0, done.stdout + done.stderr
    hook = (hostile.root / ".git" / "hooks" / "pre-commit").read_text()
    assert '"$ccmemory_python" -E -P -c ' in hook and "ccmemory git-hook pre-commit || true" in hook
    write_files(hostile.root / ".claude" / "knowledge", {"architecture/auth.md": AUTH})
    for args in (["add", "-A"], ["commit", "-q", "-m", "knowledge"]):
        step = subprocess.run([GIT, *args], cwd=hostile.root, env=env, capture_output=True, text=True, timeout=300)
        assert step.returncode == 0, step.stdout + step.stderr
    # the hook indexed the committed knowledge: it ran, on ccmemory's own code
    found = cli(hostile, env, "search", "RS256", "--mode", "keyword")
    assert "architecture/auth.md" in found.stdout, found.stdout + found.stderr
    assert hostile.ran() == []


def analysis_json(hostile: Hostile, env: dict[str, str], *args: str) -> dict:
    done = cli(hostile, env, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_project_analyzers_run_only_after_the_user_allowed_them_at_a_terminal(hostile, plugin_data, tmp_path):
    env = plugin_cli_env(hostile, tmp_path)
    home = Path(env["CCMEMORY_HOME"])
    deep = analysis_json(hostile, env, "analyze", "--deep")
    assert deep["deep"]["analyzers"]["Python"] == "heuristic" and deep["deep"]["skipped_analyzers"] == ["python.py"]
    assert any("ccmemory analyze --deep --trust-analyzers" in problem for problem in deep["problems"])
    discovered = analysis_json(hostile, env, "discover")
    assert discovered["analysis"]["deep"]["skipped_analyzers"] == ["python.py"]
    assert any("--trust-analyzers" in problem for problem in discovered["problems"])
    # Claude's Bash tool, a skill or a script has no terminal: it cannot allow them
    refused = cli(hostile, env, "analyze", "--deep", "--trust-analyzers")
    assert refused.returncode == 2 and "confirm at a terminal" in refused.stderr
    code, said = on_terminal(home, hostile.root, "analyze", "--deep", "--trust-analyzers", answer="n",
                             wait_for=b"[y/N]", program=[str(BIN)], **env)
    assert code == 1 and "Not allowed" in said
    assert hostile.ran() == []

    code, said = on_terminal(home, hostile.root, "analyze", "--deep", "--trust-analyzers", answer="y",
                             wait_for=b"[y/N]", program=[str(BIN)], **env)
    assert code == 0 and "python.py" in said and "Allowed" in said, said
    assert hostile.ran() == ["analyzer"]  # allowed, and only the analyzer ran
    allowed = analysis_json(hostile, env, "discover")
    assert allowed["analysis"]["deep"]["analyzers"]["Python"] == "custom:python.py"
    assert (home / "trusted-analyzers.json").exists()  # the opt-in lives in the user's data dir...
    assert not [path for path in hostile.root.rglob("*trusted*")]  # ...never in the repository

    runs = len((hostile.markers / "analyzer").read_text().splitlines())
    (hostile.root / ".claude" / "analyzers" / "_helper.py").write_text(marker_code(hostile.markers, "helper"))
    changed = analysis_json(hostile, env, "analyze", "--deep")  # a file added next to the allowed ones
    assert changed["deep"]["skipped_analyzers"] == ["python.py"]
    assert any("changed since you allowed them" in problem for problem in changed["problems"])
    with open(hostile.root / ".claude" / "analyzers" / "python.py", "a") as handle:
        handle.write("# changed after the opt-in\n")
    assert analysis_json(hostile, env, "discover")["analysis"]["deep"]["skipped_analyzers"] == ["python.py"]
    assert len((hostile.markers / "analyzer").read_text().splitlines()) == runs  # neither ran again
    assert hostile.ran() == ["analyzer"]


@pytest.mark.parametrize("here", ["", *[f"{here}/" for here in HERE]])
@pytest.mark.parametrize("variable", ["CLAUDE_CONFIG_DIR", "XDG_DATA_HOME"])
def test_a_runtime_planted_through_a_relative_folder_variable_is_never_run(hostile, tmp_path, variable, here):
    """A relative CLAUDE_CONFIG_DIR or XDG_DATA_HOME would resolve in the repository, where a ready-looking
    runtime (venv-<key>: its key is predictable) claims to be this plugin's: bin/ccmemory must not run it."""
    planted = {"CLAUDE_CONFIG_DIR": "cfg/plugins/data/ccmemory-ccmemory", "XDG_DATA_HOME": "xdg/ccmemory/runtime"}
    python = fake_ready_runtime(hostile.root / planted[variable], tmp_path / "planted.log")
    python.write_text(f"#!/bin/sh\necho $$ >> {hostile.markers / 'planted-runtime'}\n")
    legit_log, home = tmp_path / "runtime-uses.log", tmp_path / "data"
    if variable == "CLAUDE_CONFIG_DIR":  # the legit runtime: the launcher's fallback in the data dir
        legit = fake_ready_runtime(home / "runtime", legit_log)
        env = hostile.env(home)
    else:  # the legit runtime: in Claude Code's folder; no CCMEMORY_HOME, so the data dir follows XDG_DATA_HOME
        legit = fake_ready_runtime(tmp_path / "claude-config" / "plugins" / "data" / "ccmemory-market", legit_log)
        env = hostile.env(home, CLAUDE_CONFIG_DIR=str(tmp_path / "claude-config"))
        env.pop("CCMEMORY_HOME")
    (legit.parent.parent / "ccmemory-ready.json").write_text(json.dumps({"plugin_root": "/another/install"}))
    env[variable] = here + planted[variable].split("/")[0]
    done = cli(hostile, env, "--version")
    assert done.returncode == 0 and "ccmemory" in done.stdout, done.stdout + done.stderr
    assert uses(legit_log) == ["-P -m ccmemory --version"]
    assert hostile.ran() == []
    assert not (hostile.root / "xdg" / "ccmemory" / "ccmemory.db").exists()


def test_the_model_summary_worker_the_stop_hook_starts_runs_nothing_of_the_project(hostile, tmp_path):
    home = tmp_path / "data"
    claude = tmp_path / "fake-claude"
    claude.write_text("#!/bin/sh\ncat > /dev/null\n"
                      "echo '{\"type\": \"result\", \"is_error\": false, \"result\": \"- Ran the tests\"}'\n")
    claude.chmod(0o755)
    write_config(home, {"summary": {"mode": "claude", "claude_command": str(claude)}})
    env = hostile.env(home, CLAUDE_PROJECT_DIR=str(hostile.root))
    run_plugin_hook("PostToolUse", bash_call("s2", hostile.root, "pytest -q", "3 passed", "t1"), home,
                    hostile.root, env)
    stop = common("s2", hostile.root, "Stop", stop_hook_active=False, last_assistant_message="Done.")
    run_plugin_hook("Stop", stop, home, hostile.root, env)

    def summary() -> str:
        found = rows(home, "SELECT content FROM memories WHERE session_id = 's2' AND source = 'summary'")
        return found[0]["content"] if found else ""

    assert wait_until(lambda: summary().startswith("Session summary (model-written)"), 60), summary()
    assert hostile.ran() == []


@pytest.mark.parametrize("home", [".", "", *HERE])
def test_a_home_that_leads_into_the_project_is_not_the_users(hostile, tmp_path, home):
    """``HOME=.`` (or ``/proc/self/cwd``) in a project's settings would make a ``config.json`` of the repository
    the user's own trusted configuration: the data dir and ``~/.claude`` come from the account's home instead."""
    import pwd

    env = isolated_env(None, HOME=home)
    for name in ("XDG_DATA_HOME", "CLAUDE_CONFIG_DIR"):
        env.pop(name, None)
    show = "from ccmemory import paths; print(paths.data_dir()); print(paths.claude_config_dir())"
    done = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(REPO_ROOT / 'src')!r}); "
                           + show], cwd=hostile.root, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    account = pwd.getpwuid(os.getuid()).pw_dir if home != "" else "/"
    for folder in done.stdout.splitlines():
        assert os.path.isabs(folder) and folder.startswith(account), folder
        assert not os.path.realpath(folder).startswith(str(hostile.root.resolve())), folder


@pytest.mark.parametrize("home", [".", *HERE])
def test_a_tilde_setting_never_follows_a_home_that_leads_into_the_project(hostile, plugin_data, tmp_path, home):
    """``embedding.path = "~/model"`` in the user's config, with ``HOME=.`` from a project's settings: ``~`` is the
    account's home (``ccmemory.paths.expand_user``), so the repository's ``model/`` folder is never loaded."""
    import pwd

    (hostile.root / "model").mkdir()
    (hostile.root / "model" / "model.onnx").write_bytes(b"planted by the repository")
    (hostile.root / "model" / "tokenizer.json").write_text("{}")
    env = {**plugin_cli_env(hostile, tmp_path), "HOME": home}
    write_config(Path(env["CCMEMORY_HOME"]), {"embedding": {"path": "~/model"}})
    done = cli(hostile, env, "doctor")
    said = done.stdout + done.stderr
    account = pwd.getpwuid(os.getuid()).pw_dir
    assert f"embedding.path {os.path.join(account, 'model')!r} is not a folder" in said, said
    assert str(hostile.root) not in said and hostile.ran() == []
