"""A ready MCP runtime where ``scripts/mcp_launcher.py`` would build it, without a minute of pip.

The environment is the launcher's own ``venv-<key>`` folder with its ready marker;
its ``python`` is a small script that logs each use and runs this test interpreter
(which has every dependency). Tests then see which processes ran on that runtime.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType

from testing.repo import REPO_ROOT


def load_launcher(plugin_root: Path = REPO_ROOT) -> ModuleType:
    spec = importlib.util.spec_from_file_location("launcher_under_test", plugin_root / "scripts" / "mcp_launcher.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fake_ready_runtime(plugin_data: Path, log: Path, plugin_root: Path = REPO_ROOT) -> Path:
    """Create the ready runtime the launcher looks for under ``plugin_data``; returns its python."""
    launcher = load_launcher(plugin_root)
    previous = os.environ.get("CLAUDE_PLUGIN_DATA")
    os.environ["CLAUDE_PLUGIN_DATA"] = str(plugin_data)
    try:
        venv = launcher.runtime_dir()
    finally:
        if previous is None:
            os.environ.pop("CLAUDE_PLUGIN_DATA")
        else:
            os.environ["CLAUDE_PLUGIN_DATA"] = previous
    python = launcher.venv_python(venv)
    python.parent.mkdir(parents=True, exist_ok=True)
    python.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    (venv / launcher.READY_FILE).write_text(json.dumps({"plugin_root": str(plugin_root)}))
    return python
