"""mypy passes on the core and the entry scripts at the strictness pyproject.toml sets ([tool.mypy])."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                    reason="mypy is not installed: pip install -e '.[test]' brings it")
def test_mypy_finds_nothing() -> None:
    # The files checked and the flags are pyproject.toml's; no cache, so a stale one can never hide an error.
    result = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", "/dev/null"], cwd=REPO,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
