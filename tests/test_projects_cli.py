"""``ccmemory projects``: the list, merge, split, undo and history, through the real CLI over real git repositories.

Sessions are made by the real hooks with Claude Code's transcript layout (``projects/<folder named
after the working directory>/<session>.jsonl``), which is how a split finds the sessions that ran
at a location. Tests that read the store with the standard library run the CLI as a process
(``spawn``); the others in this process (``invoke``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ccmemory import transcript

from testing.cli import invoke, on_terminal, spawn
from testing.env import isolated_env
from testing.hooks import bash_call, common, rows, run_hook, write_transcript

#: Every table a project's rows live in, with the column that orders them.
TABLES = {"projects": "id", "project_aliases": "path", "project_roots": "root", "sessions": "id",
          "memories": "seq", "documents": "id", "memory_files": "id", "memory_file_log": "id"}


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=isolated_env(None), check=True, capture_output=True, timeout=60)


def new_repo(path: Path, message: str = "root") -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q")
    git(path, "commit", "-q", "--allow-empty", "-m", message)
    return path.resolve()


def clone(source: Path, path: Path) -> Path:
    git(source.parent, "clone", "-q", str(source), str(path))
    return path.resolve()


def session(home: Path, claude: Path, cwd: Path, session_id: str, command: str) -> None:
    """A session at ``cwd`` as the hooks see it: SessionStart (which keeps the transcript path) and one Bash call."""
    transcript_path = claude / "projects" / transcript.folder_name(str(cwd)) / f"{session_id}.jsonl"
    transcript_path.parent.mkdir(parents=True, exist_ok=True)
    write_transcript(transcript_path, [f"run {command}"])
    for name, payload in (("session_start", common(session_id, cwd, "SessionStart", source="startup")),
                          ("post_tool_use", bash_call(session_id, cwd, command, f"{command}: ok", f"t-{session_id}"))):
        payload["transcript_path"] = str(transcript_path)
        assert run_hook(name, payload, home, cwd=cwd).returncode == 0


def listed(home: Path, cwd: Path) -> list[dict[str, Any]]:
    done = spawn(home, cwd, "projects", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def dump(home: Path) -> dict[str, list[dict[str, Any]]]:
    return {table: rows(home, f"SELECT * FROM {table} ORDER BY {key}") for table, key in TABLES.items()}


def project_of(home: Path, session_id: str) -> int:
    return rows(home, "SELECT project_id FROM sessions WHERE id = ?", (session_id,))[0]["project_id"]


def test_clones_are_one_project_listed_with_every_path_and_a_gone_one_marked(home: Path, tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    first = new_repo(tmp_path / "app")
    second = clone(first, tmp_path / "app-clone")
    plain = tmp_path / "notes"
    plain.mkdir()
    session(home, claude, first, "s-first", "make test")
    session(home, claude, second, "s-second", "make lint")
    session(home, claude, plain.resolve(), "s-plain", "ls")

    found = json.loads(invoke(home, first, "projects", "--json").stdout)
    assert len(found) == 2
    repo = next(p for p in found if p["identity"].startswith("git:"))
    assert [a["path"] for a in repo["aliases"]] == [str(first), str(second)]
    assert all(a["exists"] and a["kind"] == "git" and not a["pinned"] for a in repo["aliases"])
    assert (repo["sessions"], repo["documents"], repo["memory_files"]) == (2, 0, 0) and repo["memories"] >= 2
    assert repo["last_activity"] >= repo["created_at"]
    other = next(p for p in found if p is not repo)
    assert other["identity"] == f"path:{plain.resolve()}" and other["sessions"] == 1

    second.rename(tmp_path / "moved-away")
    text = invoke(home, first, "projects")
    assert text.returncode == 0
    assert f"{second}  (git, no longer exists)" in text.stdout and f"{first}  (git)" in text.stdout
    moved = [a for p in json.loads(invoke(home, first, "projects", "--json").stdout) for a in p["aliases"]
             if a["path"] == str(second)]
    assert moved and moved[0]["exists"] is False


@pytest.mark.usefixtures("idle_embedder")  # the rows compared include whether each memory waits for a vector
def test_a_merge_and_its_undo_restore_every_row_and_a_split_undoes_a_merge(home: Path, tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    api = new_repo(tmp_path / "api")
    web = new_repo(tmp_path / "web", "another history")
    session(home, claude, api, "s-api", "pytest")
    session(home, claude, web, "s-web", "npm test")
    assert spawn(home, web, "docs", "ingest", "--text", "The web app renders with htmx.", "--title", "web").returncode == 0
    before = dump(home)
    keep, other = project_of(home, "s-api"), project_of(home, "s-web")

    preview = spawn(home, api, "projects", "merge", str(api), str(web), "--dry-run", "--json")
    assert preview.returncode == 0, preview.stderr
    counts = json.loads(preview.stdout)["counts"]
    assert counts["sessions"] == 1 and counts["documents"] == 1 and counts["project_aliases"] == 1
    assert dump(home) == before
    refused = spawn(home, api, "projects", "merge", str(keep), str(web))
    assert refused.returncode == 2 and "--yes" in refused.stderr and dump(home) == before

    merged = spawn(home, api, "projects", "merge", str(keep), str(web), "--yes", "--json")
    assert merged.returncode == 0, merged.stderr
    assert json.loads(merged.stdout)["counts"] == counts
    (project,) = listed(home, api)
    assert project["id"] == keep and project["sessions"] == 2 and project["documents"] == 1
    assert {a["path"]: a["pinned"] for a in project["aliases"]} == {str(api): False, str(web): True}
    assert project_of(home, "s-web") == keep
    history = json.loads(spawn(home, api, "projects", "merges", "--json").stdout)
    assert history[0]["kind"] == "merge" and history[0]["from_id"] == other and history[0]["counts"] == counts
    assert "merged by " in history[0]["reason"] and history[0]["undone_at"] is None

    undone = spawn(home, api, "projects", "undo")
    assert undone.returncode == 0 and f"Undid merge {history[0]['id']}" in undone.stdout
    after = dump(home)
    for alias in after["project_aliases"]:
        alias["pinned"] = 0  # undo pins the paths it gives back: the user chose where they belong
    assert after == before
    nothing = spawn(home, api, "projects", "undo")
    assert nothing.returncode == 1 and "No merge to undo" in nothing.stderr

    assert spawn(home, api, "projects", "merge", str(keep), str(web), "--yes").returncode == 0
    split = spawn(home, api, "projects", "split", str(web), "--json")
    assert split.returncode == 0, split.stderr
    result = json.loads(split.stdout)
    assert result["undid"] is not None and result["project"]["id"] == other and result["from_id"] == keep
    after = dump(home)
    for alias in after["project_aliases"]:
        alias["pinned"] = 0
    assert after == before
    assert spawn(home, api, "projects", "undo", str(result["id"])).returncode == 0
    (project,) = listed(home, api)
    assert project["id"] == keep and project["sessions"] == 2 and project_of(home, "s-web") == keep


@pytest.mark.usefixtures("idle_embedder")  # the rows compared include whether each memory waits for a vector
def test_a_fork_is_split_off_with_its_sessions_and_the_undo_puts_it_back(home: Path, tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    app = new_repo(tmp_path / "app")
    fork = clone(app, tmp_path / "app-fork")
    git(fork, "commit", "-q", "--allow-empty", "-m", "the fork's own work")
    (fork / "sub").mkdir()
    session(home, claude, app, "s-app-1", "pytest -x")
    session(home, claude, app, "s-app-2", "ruff check")
    session(home, claude, fork, "s-fork", "make fork")
    session(home, claude, fork / "sub", "s-fork-sub", "make sub")  # a directory below the fork: still the fork
    (project,) = listed(home, app)  # a fork shares the history: the same project by rule
    assert {a["path"] for a in project["aliases"]} == {str(app), str(fork)}
    before = dump(home)
    fork_memories = {m["id"] for m in before["memories"] if m["session_id"] in ("s-fork", "s-fork-sub")}
    assert fork_memories

    done = spawn(home, fork / "sub", "projects", "split", str(fork / "sub"))  # any directory inside names the location
    assert done.returncode == 0, done.stderr
    assert f"{fork} now has project" in done.stdout and "2 sessions" in done.stdout
    found = {p["path"]: p for p in listed(home, app)}
    assert set(found) == {str(app), str(fork)}
    split_off, original = found[str(fork)], found[str(app)]
    assert split_off["sessions"] == 2 and original["sessions"] == 2 and split_off["identity"] == f"path:{fork}"
    assert split_off["aliases"] == [{**split_off["aliases"][0], "path": str(fork), "pinned": True}]
    assert original["identity"] == project["identity"]
    assert {m["id"] for m in rows(home, "SELECT id FROM memories WHERE project_id = ?", (split_off["id"],))} \
        == fork_memories

    session(home, claude, fork, "s-fork-later", "make again")  # the pinned path stays with its own project
    assert project_of(home, "s-fork-later") == split_off["id"]
    history = json.loads(spawn(home, app, "projects", "merges", "--json").stdout)
    assert history[0]["kind"] == "split" and history[0]["path"] == str(fork)
    assert history[0]["counts"] == {"project_aliases": 1, "sessions": 2, "memories": len(fork_memories)}

    undone = spawn(home, app, "projects", "undo", "--json")
    assert undone.returncode == 0 and json.loads(undone.stdout)["kind"] == "split"
    (merged_back,) = listed(home, app)
    assert merged_back["id"] == project["id"] and merged_back["sessions"] == 5
    after = dump(home)
    later = [m for m in after["memories"] if m["session_id"] == "s-fork-later"]
    assert later and all(m["project_id"] == project["id"] for m in later)
    after["memories"] = [m for m in after["memories"] if m["session_id"] != "s-fork-later"]
    after["sessions"] = [s for s in after["sessions"] if s["id"] != "s-fork-later"]
    assert after == before


def test_bad_input_is_named_with_what_to_do(home: Path, tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    app = new_repo(tmp_path / "app")
    session(home, claude, app, "s-app", "pytest")
    stranger = tmp_path / "never-seen"
    stranger.mkdir()
    cases = [
        (("projects", "merge", str(app), str(app), "--yes"), 2, "cannot be merged into itself"),
        (("projects", "merge", str(app), "999", "--yes"), 1, "No project with id 999"),
        (("projects", "merge", str(app), str(stranger), "--dry-run"), 1, "No project is known at"),
        (("projects", "split", str(app)), 2, "only path of project"),
        (("projects", "split", str(stranger)), 1, "No project has been seen at"),
        (("projects", "undo"), 1, "No merge to undo"),
        (("projects", "undo", "42"), 1, "No merge to undo with id 42"),
    ]
    for args, code, message in cases:
        done = invoke(home, app, *args)
        assert (done.returncode, message in done.stderr) == (code, True), (args, done.stderr)
    assert invoke(home, app, "projects", "merges").stdout.strip() == "No merges or splits yet."


def test_merge_asks_at_a_terminal_and_does_nothing_unless_told_yes(home: Path, tmp_path: Path) -> None:
    folders = [tmp_path / "drafts", tmp_path / "drafts-old"]
    for folder in folders:
        folder.mkdir()
        assert invoke(home, folder, "add", f"Notes kept in {folder.name}").returncode == 0
    code, output = on_terminal(home, folders[0], "projects", "merge", str(folders[0]), str(folders[1]),
                               answer="n", wait_for=b"Merge?")
    assert code == 0 and "It moves 1 memories, 1 paths" in output and "Nothing changed." in output
    assert len(json.loads(invoke(home, folders[0], "projects", "--json").stdout)) == 2
    code, output = on_terminal(home, folders[0], "projects", "merge", str(folders[0]), str(folders[1]),
                               answer="y", wait_for=b"Merge?")
    assert code == 0 and "Merged project" in output
    (project,) = json.loads(invoke(home, folders[0], "projects", "--json").stdout)
    assert project["memories"] == 2 and [a["pinned"] for a in project["aliases"]] == [False, True]
