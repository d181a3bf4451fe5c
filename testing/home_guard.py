"""The test run never touches the user's real home: a throwaway HOME for the whole run, and a check.

``pytest_configure`` (conftest) points ``HOME`` at a directory of the run's own and clears the XDG
variables, so ccmemory's default data directory, Claude Code's ``~/.claude`` and every other
per-user file land there unless a test chooses its own. Only the prefixes where the real clients
were installed (``tests/e2e/install_claude.sh``, ``tests/install_inspector.sh``) keep pointing at
the real home, read-only for the tests.

Because a test (or code under test) can still name a real path directly, the places ccmemory
writes for a user are fingerprinted before the run and compared after it: anything that appeared
or changed there fails the run, naming the path.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The per-user places ccmemory or Claude Code write to, relative to the real home.
WATCHED = (".local/share/ccmemory", ".claude", ".claude.json", "Library/Application Support/ccmemory")
#: Where the real clients live; found through the real home even once HOME is replaced.
CLIENT_PREFIXES = {
    "CCMEMORY_CLAUDE_PREFIX": ".cache/ccmemory-test",
    "CCMEMORY_INSPECTOR_PREFIX": ".cache/ccmemory-test/inspector",
}
#: A large tree is not walked to its end; what was seen is compared.
MAX_ENTRIES = 20_000


def watched_paths(real_home: Path) -> list[Path]:
    """The watched places under ``real_home``, plus ``$XDG_DATA_HOME/ccmemory`` when that is set."""
    paths = [real_home / name for name in WATCHED]
    xdg = os.environ.get("XDG_DATA_HOME")
    if xdg and os.path.isabs(xdg):
        paths.append(Path(xdg) / "ccmemory")
    return paths


def fingerprint(paths: list[Path]) -> dict[str, tuple[int, int]]:
    """``{path: (size, mtime_ns)}`` for every file, folder and link under ``paths`` (links not followed)."""
    seen: dict[str, tuple[int, int]] = {}
    for top in paths:
        stack = [top]
        while stack and len(seen) < MAX_ENTRIES:
            path = stack.pop()
            try:
                info = path.lstat()
            except OSError:
                continue
            seen[str(path)] = (info.st_size, info.st_mtime_ns)
            if path.is_dir() and not path.is_symlink():
                try:
                    stack.extend(path.iterdir())
                except OSError:
                    continue
    return seen


def changes(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    """What appeared, changed or went away, one line each."""
    lines = [f"appeared: {path}" for path in sorted(after.keys() - before.keys())]
    lines += [f"changed: {path}" for path in sorted(after.keys() & before.keys()) if after[path] != before[path]]
    lines += [f"removed: {path}" for path in sorted(before.keys() - after.keys())]
    return lines


def isolate(run_dir: Path) -> tuple[Path, dict[str, tuple[int, int]]]:
    """Point HOME at ``run_dir/home`` for this process and its children; return the real home and its fingerprint."""
    real_home = Path(os.path.expanduser("~"))
    snapshot = fingerprint(watched_paths(real_home))
    for variable, relative in CLIENT_PREFIXES.items():
        os.environ.setdefault(variable, str(real_home / relative))
    home = run_dir / "home"
    home.mkdir(parents=True, exist_ok=True)
    os.environ["HOME"] = str(home)
    for variable in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "CLAUDE_CONFIG_DIR"):
        os.environ.pop(variable, None)
    return real_home, snapshot
