"""Where this checkout's entry points are: the tests run the real ones, never a copy."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
#: The package source: a child process that must import this checkout's ccmemory gets it on PYTHONPATH.
SOURCE = REPO_ROOT / "src"
#: ``hooks/run.py``, the command of ``hooks.json``.
HOOKS = REPO_ROOT / "hooks"
#: The plugin's ``ccmemory`` shim for Claude's Bash tool.
BIN = REPO_ROOT / "bin" / "ccmemory"
