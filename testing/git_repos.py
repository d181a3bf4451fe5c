"""Real git repositories in a test's folder, made with the ``git`` command as a user would."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from testing.env import isolated_env

GIT = shutil.which("git")


def git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd`` (the test run's throwaway HOME, a commit author); its output, stripped."""
    done = subprocess.run([GIT or "git", *args], cwd=cwd, env=isolated_env(None), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


def commit(repo: Path, name: str, text: str = "") -> str:
    """Commit one file (by default a text naming the repository, so two repositories never share a commit);
    returns the commit id."""
    (repo / name).parent.mkdir(parents=True, exist_ok=True)
    (repo / name).write_text(text or f"{name} of {repo.name}\n")
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"add {name}")
    return git(repo, "rev-parse", "HEAD")


def new_repo(path: Path, commits: int = 2) -> Path:
    """A repository at ``path`` with ``commits`` commits on ``main``."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for number in range(commits):
        commit(path, f"file{number}.txt")
    return path


def root_commit(repo: Path) -> str:
    return git(repo, "rev-list", "--max-parents=0", "HEAD")
