"""The MCP launcher (scripts/mcp_launcher.py) run as Claude Code runs it: a subprocess of python3.

Each test uses a scratch plugin root holding the real launcher and the real ccmemory source,
a stub SDK server module that reports which interpreter ran it, and a requirements.lock whose
one locked requirement is a wheel built on the spot, with its sha256. Builds are real venv + pip runs without an index
(``PIP_NO_INDEX``): installing uv from PyPI fails there, which exercises the fallback to pip,
and no network is needed. The real build from PyPI (uv installed into the venv) runs in
``tests/e2e/test_real_install.py``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from testing.env import launcher_env

REPO_ROOT = Path(__file__).resolve().parents[1]
STUB_SERVER = """\
import json, sys
import ccmemory, stubdep
print(json.dumps({"prefix": sys.prefix, "ccmemory": ccmemory.__file__, "stubdep": stubdep.VALUE}))
"""
STUB_SERVER_NO_DEPS = """\
import json, sys
import ccmemory
print(json.dumps({"prefix": sys.prefix, "ccmemory": ccmemory.__file__}))
"""


def build_wheel(directory: Path, value: str, package: str = "stubdep") -> Path:
    wheel = directory / f"{package}-1.0-py3-none-any.whl"
    info = f"{package}-1.0.dist-info"
    files = {
        f"{package}/__init__.py": f"VALUE = {value!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, content in {**files, f"{info}/RECORD": record}.items():
            archive.writestr(name, content)
    return wheel


def write_lock(root: Path, wheel: Path, lock: str = "requirements.lock", package: str = "stubdep") -> None:
    """One of the plugin's locks: the stub wheel by URL, with the sha256 of its file."""
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest() if wheel.exists() else "0" * 64
    (root / lock).write_text(f"{package} @ {wheel.as_uri()} \\\n    --hash=sha256:{digest}\n")


@pytest.fixture
def plugin_root(tmp_path: Path) -> Path:
    root = tmp_path / "plugin"
    for relative in ("scripts/mcp_launcher.py", ".claude-plugin/plugin.json"):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO_ROOT / relative, root / relative)
    shutil.copytree(REPO_ROOT / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    (root / "src/ccmemory/mcp/server.py").write_text(STUB_SERVER)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    write_lock(root, build_wheel(wheels, "from-wheel"))
    write_lock(root, build_wheel(wheels, "team-wheel", "stubteam"), "requirements-team.lock", "stubteam")
    return root


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


def launch(root: Path, data: Path, *args: str, **extra_env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(root / "scripts/mcp_launcher.py"), *args],
        env=launcher_env(data, **extra_env), capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )


class Session:
    """The launcher as one session's MCP server: raw JSON-RPC lines over its stdin and stdout."""

    def __init__(self, root: Path, data: Path, cwd: Path, **extra_env: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(root / "scripts/mcp_launcher.py")], env=launcher_env(data, **extra_env), cwd=cwd,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.ids = iter(range(1, 10**6))
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "claude-code", "version": "2.1.330"}})
        self.notify("notifications/initialized")

    def notify(self, method: str) -> None:
        assert self.process.stdin
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}) + "\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict | None = None) -> dict:
        assert self.process.stdin and self.process.stdout
        request_id = next(self.ids)
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                                             "params": params or {}}) + "\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        assert answer["id"] == request_id, answer
        return answer

    def call(self, tool: str, **arguments: object) -> str:
        answer = self.request("tools/call", {"name": tool, "arguments": arguments})
        return answer["result"]["content"][0]["text"]

    def close(self) -> str:
        """End the session as Claude Code does (stdin closed); the server's stderr."""
        assert self.process.stdin and self.process.stderr
        self.process.stdin.close()
        self.process.wait(timeout=30)
        return self.process.stderr.read()


def wait_for_build(home: Path) -> Path:
    deadline = time.monotonic() + 300
    while True:
        ready = [venv for venv in runtimes(home) if (venv / "ccmemory-ready.json").exists()]
        if ready:
            return ready[0]
        failed = list(home.glob("venv-*.failed"))
        assert not failed, failed[0].read_text()
        assert time.monotonic() < deadline, (home / "logs/runtime-install.log").read_text()
        time.sleep(0.2)


def served(result: subprocess.CompletedProcess) -> dict:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def runtimes(home: Path) -> list[Path]:
    """The environments under a runtime home."""
    return sorted(p for p in home.glob("venv-*") if p.is_dir())


def runtime_home(data: Path) -> Path:
    """Where the launcher builds outside Claude Code: ``runtime/`` in ccmemory's data dir."""
    return data / "runtime"


def test_override_interpreter_runs_the_plugin_source_without_building(plugin_root: Path, data: Path) -> None:
    (plugin_root / "src/ccmemory/mcp/server.py").write_text(STUB_SERVER_NO_DEPS)
    report = served(launch(plugin_root, data, CCMEMORY_PYTHON=sys.executable))
    assert report["prefix"] == sys.prefix
    assert report["ccmemory"] == str(plugin_root / "src/ccmemory/__init__.py")
    assert not runtime_home(data).exists()


def test_override_pointing_nowhere_says_what_to_fix(plugin_root: Path, data: Path) -> None:
    result = launch(plugin_root, data, CCMEMORY_PYTHON=str(data / "no-such-python"))
    assert result.returncode == 1
    assert "check CCMEMORY_PYTHON" in result.stderr


def test_first_start_serves_the_tools_at_once_and_builds_in_the_background(
    plugin_root: Path, data: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    session = Session(plugin_root, data, project)
    tools = [tool["name"] for tool in session.request("tools/list")["result"]["tools"]]
    assert {"memory_search", "memory_add", "memory_get", "docmem_create"} <= set(tools)
    assert "Memory created" in session.call("memory_add", content="The deploy script lives in ops/deploy.sh")
    found = session.call("memory_search", query="deploy script")
    assert "ops/deploy.sh" in found
    assert "still being installed" in found and "keyword matches only" in found
    venv = wait_for_build(runtime_home(data))
    assert "Traceback" not in session.close()
    marker = json.loads((venv / "ccmemory-ready.json").read_text())
    assert marker["plugin_version"] == "0.1.0"
    assert marker["installer"] == "pip"
    assert sorted(p.name for p in project.iterdir()) == [".git"]
    if sys.platform != "win32":
        log = runtime_home(data) / "logs" / "runtime-install.log"
        assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(log.stat().st_mode) == 0o600

    report = served(launch(plugin_root, data))
    assert Path(report["prefix"]) == venv
    assert report["stubdep"] == "from-wheel"
    assert report["ccmemory"] == str(plugin_root / "src/ccmemory/__init__.py")


def test_changed_dependencies_build_a_new_environment_and_drop_the_old(
    plugin_root: Path, data: Path, tmp_path: Path
) -> None:
    assert launch(plugin_root, data, "--install").returncode == 0
    [old] = runtimes(runtime_home(data))
    newer = tmp_path / "newer"
    newer.mkdir()
    write_lock(plugin_root, build_wheel(newer, "from-newer-wheel"))

    assert launch(plugin_root, data, "--install").returncode == 0
    report = served(launch(plugin_root, data))
    [venv] = runtimes(runtime_home(data))
    assert venv != old
    assert Path(report["prefix"]) == venv
    assert report["stubdep"] == "from-newer-wheel"


def test_explicit_install_prepares_the_environment_in_the_foreground(plugin_root: Path, data: Path) -> None:
    result = launch(plugin_root, data, "--install")
    assert result.returncode == 0, result.stderr
    [venv] = runtimes(runtime_home(data))
    assert f"dependencies ready in {venv}" in result.stdout
    assert "installing with pip instead" in result.stdout
    assert (venv / "ccmemory-ready.json").is_file()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_the_environment_and_its_log_are_private(plugin_root: Path, data: Path) -> None:
    assert launch(plugin_root, data, "--install").returncode == 0
    home = runtime_home(data)
    [venv] = runtimes(home)
    for directory in (data, home, venv):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory


def test_a_failing_build_is_reported_by_every_search_with_the_retry_command(
    plugin_root: Path, data: Path, tmp_path: Path
) -> None:
    write_lock(plugin_root, data.parent / "missing" / "stubdep-1.0-py3-none-any.whl")
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    session = Session(plugin_root, data, project)
    home = runtime_home(data)
    deadline = time.monotonic() + 300
    while not list(home.glob("venv-*.failed")) or list(home.glob("venv-*.lock")):
        assert time.monotonic() < deadline, (home / "logs/runtime-install.log").read_text()
        time.sleep(0.2)
    found = session.call("memory_search", query="anything")
    session.close()
    assert "installing the plugin's search runtime failed" in found
    assert "--install" in found
    result = launch(plugin_root, data, "--install")
    assert result.returncode == 1
    assert "pip install failed" in result.stderr


def test_inside_claude_code_the_environment_lives_in_the_plugin_data_dir(
    plugin_root: Path, data: Path, tmp_path: Path
) -> None:
    plugin_data = tmp_path / "plugin-data"
    assert launch(plugin_root, data, "--install", CLAUDE_PLUGIN_DATA=str(plugin_data)).returncode == 0
    report = served(launch(plugin_root, data, CLAUDE_PLUGIN_DATA=str(plugin_data)))
    [venv] = runtimes(plugin_data)
    assert Path(report["prefix"]) == venv
    assert not runtime_home(data).exists()


def test_an_unsubstituted_plugin_data_placeholder_never_builds_in_the_project(
    plugin_root: Path, data: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    result = subprocess.run(
        [sys.executable, str(plugin_root / "scripts/mcp_launcher.py"), "--install"], cwd=project,
        env=launcher_env(data, CLAUDE_PLUGIN_DATA="${CLAUDE_PLUGIN_DATA}"), capture_output=True, text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert list(project.iterdir()) == []
    assert runtimes(runtime_home(data))


STUB_TEAM_SERVER = """\
import json, sys
import ccmemory, stubdep
try:
    import stubteam
    team = stubteam.VALUE
except ImportError:
    team = None
print(json.dumps({"prefix": sys.prefix, "stubdep": stubdep.VALUE, "team": team}))
"""
SYNC_URL = "postgresql://alice@db.invalid:5432/ccmemory"


def team_installed(venv: Path) -> bool:
    return (venv / "ccmemory-team.json").is_file()


def test_without_a_team_server_the_team_lock_is_never_installed(plugin_root: Path, data: Path) -> None:
    (plugin_root / "src/ccmemory/mcp/server.py").write_text(STUB_TEAM_SERVER)
    assert launch(plugin_root, data, "--install").returncode == 0
    report = served(launch(plugin_root, data))
    [venv] = runtimes(runtime_home(data))
    assert report["team"] is None and not team_installed(venv)


def test_a_build_with_a_team_server_configured_installs_the_team_lock_too(plugin_root: Path, data: Path) -> None:
    (plugin_root / "src/ccmemory/mcp/server.py").write_text(STUB_TEAM_SERVER)
    result = launch(plugin_root, data, "--install", CCMEMORY_SYNC_URL=SYNC_URL)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "installing requirements-team.lock" in result.stdout
    report = served(launch(plugin_root, data))
    assert report["team"] == "team-wheel" and report["stubdep"] == "from-wheel"


def test_naming_a_server_later_adds_the_team_lock_to_the_same_environment(plugin_root: Path, data: Path) -> None:
    (plugin_root / "src/ccmemory/mcp/server.py").write_text(STUB_TEAM_SERVER)
    assert launch(plugin_root, data, "--install").returncode == 0
    [venv] = runtimes(runtime_home(data))
    config = data / "config.json"
    config.write_text(json.dumps({"sync": {"url": SYNC_URL}}))
    config.chmod(0o600)
    # The server starts at once (the team lock is missing); a detached --install-team adds it meanwhile.
    first = served(launch(plugin_root, data))
    assert Path(first["prefix"]) == venv
    deadline = time.monotonic() + 300
    while not team_installed(venv):
        assert time.monotonic() < deadline, (runtime_home(data) / "logs/runtime-install.log").read_text()
        time.sleep(0.2)
    assert served(launch(plugin_root, data))["team"] == "team-wheel"
    assert runtimes(runtime_home(data)) == [venv]  # the runtime's key is unchanged: nothing rebuilt


def test_a_background_sync_installs_the_team_lock_before_its_round(plugin_root: Path, data: Path) -> None:
    assert launch(plugin_root, data, "--install").returncode == 0
    [venv] = runtimes(runtime_home(data))
    launch(plugin_root, data, "--sync", CCMEMORY_SYNC_URL=SYNC_URL)  # the stub runtime has no ccmemory CLI deps
    assert team_installed(venv)
    marker = json.loads((venv / "ccmemory-team.json").read_text())
    assert marker["installer"] == "pip"
    assert launch(plugin_root, data, "--install-team", CCMEMORY_SYNC_URL=SYNC_URL).returncode == 0


def test_a_team_lock_that_fails_to_install_leaves_the_server_running(plugin_root: Path, data: Path) -> None:
    (plugin_root / "src/ccmemory/mcp/server.py").write_text(STUB_TEAM_SERVER)
    write_lock(plugin_root, data.parent / "missing" / "stubteam-1.0-py3-none-any.whl", "requirements-team.lock",
               "stubteam")
    result = launch(plugin_root, data, "--install", CCMEMORY_SYNC_URL=SYNC_URL)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "installing team memory's dependencies failed" in result.stdout
    assert launch(plugin_root, data, "--install-team", CCMEMORY_SYNC_URL=SYNC_URL).returncode == 1
    report = served(launch(plugin_root, data))
    assert report["team"] is None and report["stubdep"] == "from-wheel"
