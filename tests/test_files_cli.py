"""``ccmemory files list|show|edit|rm|mv|log`` as a user runs them, on a real store."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from testing.cli import invoke


def cli(home: Path, project: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return invoke(home, None, "files", *args, "--project", str(project), stdin=stdin)


def test_the_files_commands_round_trip(home: Path, project_dir: Path) -> None:
    assert cli(home, project_dir, "list").stdout.startswith("No memory files yet.")
    saved = cli(home, project_dir, "edit", "notes.md", stdin="# Notes\nuse uv\n")
    assert (saved.returncode, saved.stdout) == (0, "Saved /memories/notes.md\n")
    cli(home, project_dir, "edit", "/memories/user/prefs.md", stdin="tabs\n")
    listing = cli(home, project_dir, "list").stdout.splitlines()
    assert [line.split()[-1] for line in listing] == ["/memories/notes.md", "/memories/user/prefs.md"]
    assert cli(home, project_dir, "list", "--scope", "user", "--json").stdout.count('"path"') == 1
    assert cli(home, project_dir, "show", "notes.md").stdout == "# Notes\nuse uv\n"
    assert cli(home, project_dir, "show", "notes.md", "--numbered").stdout == (
        "Here's the content of /memories/notes.md with line numbers:\n     1\t# Notes\n     2\tuse uv\n")
    assert json.loads(cli(home, project_dir, "show", "notes.md", "--json").stdout)["version"] == 1
    assert cli(home, project_dir, "show", "/memories").stdout.startswith("Here're the files and directories")
    assert cli(home, project_dir, "mv", "notes.md", "user/notes.md").stdout == \
        "Successfully renamed /memories/notes.md to /memories/user/notes.md\n"
    assert cli(home, project_dir, "rm", "user/notes.md").stdout == "Successfully deleted /memories/user/notes.md\n"
    log = cli(home, project_dir, "log").stdout.splitlines()
    assert [line.split()[3] for line in log] == ["delete", "rename", "view", "view", "write", "write"]
    assert all(" cli " in line and " ok " in line for line in log)


def test_errors_exit_1_when_refused_and_2_when_the_input_is_wrong(home: Path, project_dir: Path) -> None:
    missing = cli(home, project_dir, "rm", "ghost.md")
    assert (missing.returncode, missing.stderr) == (1, "Error: The path /memories/ghost.md does not exist\n")
    assert cli(home, project_dir, "show", "ghost.md").returncode == 1
    hostile = cli(home, project_dir, "edit", "../../etc/passwd.md", stdin="x")
    assert hostile.returncode == 2 and "is not allowed: '.' and '..' segments are not allowed" in hostile.stderr
    assert cli(home, project_dir, "edit", "notes.txt", stdin="x").stderr == \
        "Error: Only Markdown files are stored: /memories/notes.txt must end in .md.\n"
    cli(home, project_dir, "edit", "a.md", stdin="a")
    cli(home, project_dir, "edit", "b.md", stdin="b")
    taken = cli(home, project_dir, "mv", "a.md", "b.md")
    assert (taken.returncode, taken.stderr) == (1, "Error: The destination /memories/b.md already exists\n")
    big = cli(home, project_dir, "edit", "big.md", stdin="x" * 200_000)
    assert big.returncode == 2 and "would be 200,000 bytes" in big.stderr
