"""The run-wide guard: a test that writes into the user's real home fails the whole run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent

PLANTED = '''
import os
from pathlib import Path


def test_planted():
    target = Path(os.environ["PLANT_TARGET"])
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("ERROR summary: transcript not read\\n")


def test_home_is_not_the_real_one():
    assert os.path.expanduser("~") != os.environ["REAL_HOME_FOR_TEST"]
'''


def run_pytest(tmp_path: Path, body: str, target: Path) -> subprocess.CompletedProcess[str]:
    """Our conftest as a plugin (it imports ``testing``, at the repository root) over one planted test file,
    with ``tmp_path/real-home`` as the "real" home."""
    (tmp_path / "planted").mkdir()
    (tmp_path / "planted" / "test_planted.py").write_text(body)
    real_home = tmp_path / "real-home"
    real_home.mkdir()
    env = {**os.environ, "HOME": str(real_home), "PLANT_TARGET": str(target), "REAL_HOME_FOR_TEST": str(real_home),
           "PYTHONPATH": os.pathsep.join([str(TESTS_DIR), str(TESTS_DIR.parent), os.environ.get("PYTHONPATH", "")])}
    env.pop("XDG_DATA_HOME", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path / "planted"), str(tmp_path / "planted")],
                          cwd=tmp_path / "planted", env=env, capture_output=True, text=True, timeout=300)


def test_a_write_into_the_real_data_dir_fails_the_run(tmp_path: Path) -> None:
    target = tmp_path / "real-home" / ".local" / "share" / "ccmemory" / "logs" / "hooks.log"
    result = run_pytest(tmp_path, PLANTED, target)
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, result.stdout + result.stderr
    assert "2 passed" in result.stdout
    assert "into the user's real home" in result.stdout
    assert str(target) in result.stdout


def test_a_run_that_writes_only_its_own_files_passes(tmp_path: Path) -> None:
    result = run_pytest(tmp_path, PLANTED, tmp_path / "planted" / "own-file.txt")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "into the user's real home" not in result.stdout


def test_this_run_has_a_throwaway_home() -> None:
    home = Path(os.path.expanduser("~"))
    assert home.name == "home" and home.parent.name.startswith("ccmemory-test-run-")
