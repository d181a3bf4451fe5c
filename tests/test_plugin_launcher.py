"""The MCP launcher (scripts/mcp_launcher.py) run as Claude Code runs it: a subprocess of python3.

Each test uses a scratch plugin root holding the real launcher and ccmemory.paths, a stub
server module that reports which interpreter ran it, and a pyproject whose dependency is a
wheel built on the spot, so real venv + pip builds run without any network.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

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


def build_wheel(directory: Path, value: str) -> Path:
    wheel = directory / "stubdep-1.0-py3-none-any.whl"
    files = {
        "stubdep/__init__.py": f"VALUE = {value!r}\n",
        "stubdep-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: stubdep\nVersion: 1.0\n",
        "stubdep-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in [*files, "stubdep-1.0.dist-info/RECORD"])
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, content in {**files, "stubdep-1.0.dist-info/RECORD": record}.items():
            archive.writestr(name, content)
    return wheel


def write_pyproject(root: Path, dependencies: list[str]) -> None:
    deps = ", ".join(json.dumps(d) for d in dependencies)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "ccmemory"\nversion = "0.1.0"\ndependencies = [{deps}]\n'
    )


@pytest.fixture
def plugin_root(tmp_path: Path) -> Path:
    root = tmp_path / "plugin"
    for relative in ("scripts/mcp_launcher.py", ".claude-plugin/plugin.json",
                     "src/ccmemory/__init__.py", "src/ccmemory/paths.py"):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO_ROOT / relative, root / relative)
    (root / "src/ccmemory/mcp").mkdir()
    (root / "src/ccmemory/mcp/__init__.py").write_text("")
    (root / "src/ccmemory/mcp/server.py").write_text(STUB_SERVER)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    write_pyproject(root, [f"stubdep @ {build_wheel(wheels, 'from-wheel').as_uri()}"])
    return root


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


def launch(root: Path, data: Path, *args: str, **extra_env: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in {"CCMEMORY_PYTHON", "CLAUDE_PLUGIN_DATA", "MCP_TIMEOUT", "PYTHONPATH"}}
    env.update({"CCMEMORY_HOME": str(data), "CCMEMORY_INSTALL_WAIT": "300", **extra_env})
    return subprocess.run(
        [sys.executable, str(root / "scripts/mcp_launcher.py"), *args],
        env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )


def served(result: subprocess.CompletedProcess) -> dict:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def runtimes(data: Path) -> list[Path]:
    return sorted(p for p in data.glob("venv-*") if p.is_dir())


def test_override_interpreter_runs_the_plugin_source_without_building(plugin_root: Path, data: Path) -> None:
    (plugin_root / "src/ccmemory/mcp/server.py").write_text(STUB_SERVER_NO_DEPS)
    report = served(launch(plugin_root, data, CCMEMORY_PYTHON=sys.executable))
    assert report["prefix"] == sys.prefix
    assert report["ccmemory"] == str(plugin_root / "src/ccmemory/__init__.py")
    assert runtimes(data) == []


def test_override_pointing_nowhere_says_what_to_fix(plugin_root: Path, data: Path) -> None:
    result = launch(plugin_root, data, CCMEMORY_PYTHON=str(data / "no-such-python"))
    assert result.returncode == 1
    assert "check CCMEMORY_PYTHON" in result.stderr


def test_first_start_builds_the_environment_and_later_starts_reuse_it(plugin_root: Path, data: Path) -> None:
    report = served(launch(plugin_root, data))
    [venv] = runtimes(data)
    assert Path(report["prefix"]) == venv
    assert report["stubdep"] == "from-wheel"
    assert report["ccmemory"] == str(plugin_root / "src/ccmemory/__init__.py")
    marker = venv / "ccmemory-ready.json"
    stamp = marker.stat().st_mtime_ns
    assert json.loads(marker.read_text())["plugin_version"] == "0.1.0"

    again = served(launch(plugin_root, data))
    assert Path(again["prefix"]) == venv
    assert marker.stat().st_mtime_ns == stamp


def test_changed_dependencies_build_a_new_environment_and_drop_the_old(
    plugin_root: Path, data: Path, tmp_path: Path
) -> None:
    served(launch(plugin_root, data))
    [old] = runtimes(data)
    newer = tmp_path / "newer"
    newer.mkdir()
    write_pyproject(plugin_root, [f"stubdep @ {build_wheel(newer, 'from-newer-wheel').as_uri()}"])

    report = served(launch(plugin_root, data))
    [venv] = runtimes(data)
    assert venv != old
    assert Path(report["prefix"]) == venv
    assert report["stubdep"] == "from-newer-wheel"


def test_explicit_install_prepares_the_environment_in_the_foreground(plugin_root: Path, data: Path) -> None:
    result = launch(plugin_root, data, "--install")
    assert result.returncode == 0, result.stderr
    [venv] = runtimes(data)
    assert f"dependencies ready in {venv}" in result.stdout
    assert (venv / "ccmemory-ready.json").is_file()


def test_a_start_that_cannot_wait_fails_clearly_while_the_build_finishes_in_background(
    plugin_root: Path, data: Path
) -> None:
    result = launch(plugin_root, data, CCMEMORY_INSTALL_WAIT="0")
    assert result.returncode == 1
    assert "still installing the Python dependencies" in result.stderr
    assert "/mcp" in result.stderr

    deadline = time.monotonic() + 300
    while not any((venv / "ccmemory-ready.json").exists() for venv in runtimes(data)):
        assert time.monotonic() < deadline, (data / "logs/runtime-install.log").read_text()
        time.sleep(0.2)
    assert served(launch(plugin_root, data))["stubdep"] == "from-wheel"


def test_a_failing_install_reports_the_log_and_the_retry_command(plugin_root: Path, data: Path) -> None:
    missing = (data.parent / "missing" / "stubdep-1.0-py3-none-any.whl").as_uri()
    write_pyproject(plugin_root, [f"stubdep @ {missing}"])
    result = launch(plugin_root, data)
    assert result.returncode == 1
    assert "failed" in result.stderr
    assert "runtime-install.log" in result.stderr
    assert "--install" in result.stderr
    assert list(data.glob("venv-*.lock")) == []


def test_inside_claude_code_the_environment_lives_in_the_plugin_data_dir(
    plugin_root: Path, data: Path, tmp_path: Path
) -> None:
    plugin_data = tmp_path / "plugin-data"
    report = served(launch(plugin_root, data, CLAUDE_PLUGIN_DATA=str(plugin_data)))
    [venv] = runtimes(plugin_data)
    assert Path(report["prefix"]) == venv
    assert runtimes(data) == []
