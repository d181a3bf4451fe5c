"""Which project a checkout is, with real git repositories: moved, cloned, worktrees, forks, monorepos, shallow.

The rules (``ccmemory.identity``, ``ccmemory.projects``): every clone, worktree, moved checkout and
fork of one repository is one project; a monorepo's subdirectory is its repository's project; a
repository with no commit has path identity until its first commit, then keeps its project with a
``git:`` identity; a shallow clone is known by its remote until deepened; a directory outside git
has path identity; a location whose repository was replaced by another one is a new project, the
old one keeping its rows. The last test runs the three entry points (a real hook process, the real
MCP server over stdio, the CLI as a process) from different checkouts of one repository and shows
they agree on the project.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ccmemory import identity, memories, projects
from ccmemory.db import Database
from testing.cli import spawn
from testing.git_repos import GIT, commit, git, new_repo, root_commit
from testing.hooks import assert_quiet_success, bash_call, rows, run_hook
from testing.mcp import running_server

pytestmark = pytest.mark.skipif(GIT is None, reason="needs git")
REMOTE = "https://example.com/Org/App.git"


def kinds(db: Database, project: int) -> dict[str, str]:
    return {row["path"]: row["kind"] for row in db.rows("SELECT path, kind FROM project_aliases WHERE project_id = ?",
                                                          (project,))}


def remember(db: Database, project: int, text: str) -> str:
    return memories.add(db, project_id=project, content=text).id


def test_a_moved_checkout_keeps_its_project_and_memories(db, tmp_path):
    first = new_repo(tmp_path / "first")
    project = projects.project_id(db, first)
    memory = remember(db, project, "moved checkouts keep their memory")
    moved = tmp_path / "elsewhere" / "renamed"
    moved.parent.mkdir()
    first.rename(moved)
    assert projects.project_id(db, moved) == project
    assert projects.project_id(db, first, create=False) == project  # the old location, gone, still names it
    assert memories.get(db, memory, project_id=project).content == "moved checkouts keep their memory"
    assert projects.get(db, project)["identity"] == f"git:{root_commit(moved)}"
    assert kinds(db, project) == {str(first): "git", str(moved): "git"}


def test_a_second_clone_and_a_fork_with_extra_commits_are_the_same_project(db, tmp_path):
    origin = new_repo(tmp_path / "origin")
    clone, fork = tmp_path / "clone", tmp_path / "fork"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    git(tmp_path, "clone", "-q", str(origin), str(fork))
    commit(fork, "fork-only.txt")
    git(fork, "checkout", "-q", "-b", "feature")
    commit(fork, "feature.txt")
    project = projects.project_id(db, origin)
    assert projects.project_id(db, clone) == project
    assert projects.project_id(db, fork) == project
    assert set(kinds(db, project)) == {str(origin), str(clone), str(fork)}
    assert db.scalar("SELECT COUNT(*) FROM projects") == 1


def test_worktrees_and_their_subdirectories_are_the_repository(db, tmp_path):
    repo = new_repo(tmp_path / "repo")
    worktree = tmp_path / "repo-feature"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(worktree))
    commit(worktree, "src/feature.py")
    assert (worktree / ".git").is_file()
    project = projects.project_id(db, repo)
    assert projects.project_id(db, worktree / "src") == project
    assert projects.project_root(worktree / "src") == str(worktree)
    assert kinds(db, project) == {str(repo): "git", str(worktree): "git"}


def test_a_monorepo_subdirectory_is_the_monorepo(db, tmp_path):
    repo = new_repo(tmp_path / "mono")
    for service in ("services/api", "services/web"):
        commit(repo, f"{service}/main.py")
    project = projects.project_id(db, repo / "services" / "api")
    assert projects.project_id(db, repo / "services" / "web") == project
    assert projects.project_id(db, repo) == project
    assert kinds(db, project) == {str(repo): "git"}  # one location: the top level


def test_a_repository_without_commits_keeps_its_memories_when_it_gets_one(db, tmp_path):
    repo = tmp_path / "young"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    project = projects.project_id(db, repo)
    assert projects.get(db, project)["identity"] == f"path:{repo}"
    memory = remember(db, project, "written before the first commit")
    commit(repo, "README.md")
    assert projects.project_id(db, repo) == project
    assert projects.get(db, project)["identity"] == f"git:{root_commit(repo)}"
    assert kinds(db, project) == {str(repo): "git"}
    assert memories.get(db, memory, project_id=project).content == "written before the first commit"
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    assert projects.project_id(db, clone) == project


def test_directories_outside_git_have_path_identity_and_are_upgraded_by_git_init(db, tmp_path):
    plain, twin = tmp_path / "a" / "app", tmp_path / "b" / "app"
    plain.mkdir(parents=True)
    twin.mkdir(parents=True)
    project = projects.project_id(db, plain)
    assert projects.project_id(db, twin) != project  # same name, another directory: another project
    assert projects.get(db, project)["identity"] == f"path:{plain}"
    memory = remember(db, project, "notes from before git")
    git(plain, "init", "-q", "-b", "main")
    commit(plain, "first.txt")
    assert projects.project_id(db, plain) == project
    assert projects.get(db, project)["identity"] == f"git:{root_commit(plain)}"
    assert memories.get(db, memory, project_id=project).project_id == project


def test_a_shallow_clone_is_known_by_its_remote_until_deepened(db, tmp_path):
    origin = new_repo(tmp_path / "origin", commits=3)
    git(origin, "remote", "add", "origin", REMOTE)
    project = projects.project_id(db, origin)
    assert projects.get(db, project)["remote"] == "example.com/Org/App"
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", str(shallow))
    assert identity.is_shallow(str(shallow))
    git(shallow, "remote", "set-url", "origin", REMOTE)
    assert identity.identify(str(shallow))["key"] == "remote:example.com/Org/App"
    assert projects.project_id(db, shallow) == project
    assert kinds(db, project)[str(shallow)] == "remote"
    git(shallow, "fetch", "-q", "--unshallow", f"file://{origin}")
    assert not identity.is_shallow(str(shallow))
    assert projects.project_id(db, shallow) == project
    assert kinds(db, project)[str(shallow)] == "git"


def test_a_shallow_clone_seen_first_joins_the_repository_once_deepened(db, tmp_path):
    origin = new_repo(tmp_path / "origin", commits=3)
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", str(shallow))
    early = projects.project_id(db, shallow)  # a local origin names no shared repository: path identity
    assert projects.get(db, early)["identity"] == f"path:{shallow}"
    memory = remember(db, early, "captured in the shallow clone")
    project = projects.project_id(db, origin)
    assert project != early  # nothing ties them yet: the clone's history is cut
    git(shallow, "fetch", "-q", "--unshallow")
    assert projects.project_id(db, shallow) == project  # deepened: the same root, merged into the repository
    assert memories.get(db, memory, project_id=project).content == "captured in the shallow clone"
    assert db.scalar("SELECT COUNT(*) FROM projects") == 1
    assert db.scalar("SELECT COUNT(*) FROM project_merges WHERE into_id = ? AND from_id = ?", (project, early)) == 1


def test_a_location_whose_repository_is_replaced_is_a_new_project(db, tmp_path):
    place = new_repo(tmp_path / "place")
    first = projects.project_id(db, place)
    memory = remember(db, first, "belongs to the first repository")
    shutil.rmtree(place)
    other = new_repo(tmp_path / "other", commits=1)
    git(tmp_path, "clone", "-q", str(other), str(place))
    second = projects.project_id(db, place)
    assert second != first
    assert projects.project_id(db, other) == second
    assert memories.get(db, memory, project_id=first).content == "belongs to the first repository"
    assert projects.get(db, second)["path"] == str(place)
    assert projects.get(db, first)["path"] != str(place)  # gave up the path, kept its rows



def test_a_repository_replacing_another_in_the_same_git_folder_is_a_new_project(db, tmp_path):
    """The file system may give a new ``.git`` the inode of the one just deleted (ext4 does at once after
    ``rm -rf`` and ``git clone``); here the ``.git`` folder itself is kept and refilled, so its inode is surely
    the same, and the other repository is still told apart."""
    place = new_repo(tmp_path / "place")
    first = projects.project_id(db, place)
    inode = (place / ".git").stat().st_ino
    other = new_repo(tmp_path / "other", commits=1)
    for entry in (place / ".git").iterdir():
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    shutil.copytree(other / ".git", place / ".git", dirs_exist_ok=True)
    assert (place / ".git").stat().st_ino == inode
    second = projects.project_id(db, place)
    assert second != first
    assert projects.get(db, second)["identity"] == f"git:{root_commit(other)}"
    git(place, "config", "user.name", "Someone")  # its config changes: read again, the same project
    assert projects.project_id(db, place) == second

# -- the three entry points agree --------------------------------------------------------------------------------

@pytest.fixture
def checkouts(tmp_path: Path) -> dict[str, Path]:
    """One repository in five places: the original, a second clone, a worktree, a fork with its own commit, a
    monorepo subdirectory of the original; plus the original's later location after a move."""
    original = new_repo(tmp_path / "original")
    commit(original, "services/api/main.py")
    clone, fork, worktree = tmp_path / "clone", tmp_path / "fork", tmp_path / "worktree"
    git(tmp_path, "clone", "-q", str(original), str(clone))
    git(tmp_path, "clone", "-q", str(original), str(fork))
    commit(fork, "fork.txt")
    git(original, "worktree", "add", "-q", "-b", "wt", str(worktree))
    return {"original": original, "clone": clone, "fork": fork, "worktree": worktree,
            "subdirectory": clone / "services" / "api"}


def mcp_search(home: Path, project_dir: Path, query: str) -> str:
    with running_server(home, project_dir, CLAUDE_CODE_SESSION_ID="agree-mcp") as server:
        answer = server.call("memory_search", {"query": query, "mode": "keyword"})
        added = server.call("memory_add", {"content": f"added through MCP in {project_dir.name}: kumquat"})
    assert not answer.is_error and not added.is_error, (answer.text, added.text)
    return answer.text


def cli_search(home: Path, cwd: Path, query: str) -> list[str]:
    """The hits of ``ccmemory search`` run as a process in ``cwd``, as JSON text per hit."""
    done = spawn(home, cwd, "search", query, "--mode", "keyword", "--json", "--limit", "20")
    assert done.returncode == 0, done.stderr
    return [json.dumps(hit) for hit in json.loads(done.stdout)]


def test_hooks_mcp_and_cli_agree_on_the_project_from_every_checkout(home, checkouts, tmp_path):
    source = checkouts["original"]
    hook = run_hook("post_tool_use", bash_call("agree-hook", source, "make zanzibar", "zanzibar built ok\n", "tu-1"),
                    home, cwd=source)
    assert_quiet_success(hook)
    captured = rows(home, "SELECT project_id FROM memories WHERE content LIKE '%zanzibar%'")
    assert len(captured) == 1
    project = captured[0]["project_id"]
    for name in ("clone", "worktree", "fork", "subdirectory"):
        place = checkouts[name]
        assert any("zanzibar" in hit for hit in cli_search(home, place, "zanzibar")), name
        assert "zanzibar" in mcp_search(home, place, "zanzibar"), name
        start = run_hook("session_start", {"session_id": f"agree-{name}", "cwd": str(place),
                                           "hook_event_name": "SessionStart", "source": "startup"}, home, cwd=place)
        assert start.returncode == 0, start.stderr
    moved = tmp_path / "moved-original"
    checkouts["original"].rename(moved)
    assert any("kumquat" in hit for hit in cli_search(home, moved, "kumquat"))
    assert rows(home, "SELECT DISTINCT project_id FROM memories") == [{"project_id": project}]
    assert rows(home, "SELECT DISTINCT project_id FROM sessions") == [{"project_id": project}]
    assert rows(home, "SELECT COUNT(*) AS n FROM projects") == [{"n": 1}]
    aliases = {row["path"] for row in rows(home, "SELECT path FROM project_aliases")}
    assert aliases == {str(checkouts[name]) for name in ("original", "clone", "worktree", "fork")} | {str(moved)}


def test_a_non_git_directory_is_its_own_project_for_every_entry_point(home, tmp_path):
    plain, other = tmp_path / "plain", tmp_path / "other"
    plain.mkdir()
    other.mkdir()
    hook = run_hook("post_tool_use", bash_call("plain-hook", plain, "make quokka", "quokka ok\n", "tu-1"), home, cwd=plain)
    assert_quiet_success(hook)
    assert any("quokka" in hit for hit in cli_search(home, plain, "quokka"))
    assert "quokka" in mcp_search(home, plain, "quokka")
    assert cli_search(home, other, "quokka") == []
    assert mcp_search(home, other, "quokka").startswith("No memories found")
