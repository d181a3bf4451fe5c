"""requirements.lock: the MCP runtime's dependencies, each pinned with the sha256 of its files.

The launcher installs exactly this file with ``--require-hashes`` (tests/test_plugin_launcher.py
shows a changed lock builds a new environment); here: the lock is complete for pyproject's ranges
and every entry carries hashes. Regenerate it with the command in docs/install.md ("Runtime lock").
"""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from testing.runtime import load_launcher

ROOT = Path(__file__).resolve().parents[1]
ENTRY = re.compile(r"^(?P<name>[A-Za-z0-9._-]+)==(?P<version>[^\s;\\]+)(?P<marker>\s*;[^\\]*)?\s*\\$")


def locked(lock: str = "requirements.lock") -> dict[str, list[tuple[str, list[str]]]]:
    """Canonical name -> [(version, hashes)]: one entry per marker (numpy may differ by Python version)."""
    entries: dict[str, list[tuple[str, list[str]]]] = {}
    hashes: list[str] | None = None
    for line in (ROOT / lock).read_text().splitlines():
        match = ENTRY.match(line)
        if match:
            hashes = []
            entries.setdefault(canonicalize_name(match["name"]), []).append((match["version"], hashes))
        elif line.strip().startswith("--hash=sha256:"):
            assert hashes is not None
            hashes.append(line.strip().removeprefix("--hash=sha256:").rstrip(" \\"))
        elif line.strip() and not line.lstrip().startswith("#"):
            raise AssertionError(f"unexpected line in {lock}: {line!r}")
    return entries


def test_every_dependency_of_pyproject_is_locked_within_its_range():
    entries = locked()
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for text in dependencies:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in entries, f"{name} is not in requirements.lock: regenerate it"
        for version, _ in entries[name]:
            assert requirement.specifier.contains(version, prereleases=True), (name, version)


def test_every_locked_package_carries_the_sha256_of_its_files():
    entries = locked()
    assert len(entries) > len(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])
    for name, versions in entries.items():
        for version, hashes in versions:
            assert hashes, f"{name}=={version} has no hash"
            assert all(re.fullmatch(r"[0-9a-f]{64}", digest) for digest in hashes), name
    # One lock for every platform: packages with native code carry a file per platform.
    assert all(len(hashes) >= 3 for name in ("onnxruntime", "apsw") for _, hashes in entries[name])


def test_the_team_lock_adds_the_team_extra_to_the_runtime_lock_without_changing_a_version():
    """requirements-team.lock: what the launcher installs on a machine that names a team server (docs/install.md)."""
    runtime, team = locked(), locked("requirements-team.lock")
    for text in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["team"]:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in team and name not in runtime, name
        for version, hashes in team[name]:
            assert requirement.specifier.contains(version, prereleases=True) and hashes, (name, version)
    for name, versions in runtime.items():
        assert [version for version, _ in team[name]] == [version for version, _ in versions], name
    assert all(hashes for versions in team.values() for _, hashes in versions)


def test_the_runtime_key_follows_the_lock_and_nothing_else(tmp_path, monkeypatch):
    root = tmp_path / "plugin"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "mcp_launcher.py", root / "scripts")
    shutil.copy(ROOT / "requirements.lock", root)
    shutil.copy(ROOT / "pyproject.toml", root)
    (root / "src").symlink_to(ROOT / "src")
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(tmp_path / "data"))
    first = load_launcher(root).runtime_dir()
    (root / "pyproject.toml").write_text((root / "pyproject.toml").read_text().replace('"click>=8.1"', '"click>=8"'))
    assert load_launcher(root).runtime_dir() == first
    (root / "requirements.lock").write_text((root / "requirements.lock").read_text() + "\n# regenerated\n")
    changed = load_launcher(root).runtime_dir()
    assert changed != first and changed.parent == first.parent and changed.name.startswith("venv-")
