"""Issue 23: reading a project's identity from git runs nothing of the repository, never hangs, never borrows.

Each repository below is a trap: a config naming a planted program (``core.fsmonitor``, a pager,
``core.sshCommand`` reached through a partial clone's lazy fetch, ``core.hooksPath``, all of them
again through ``include.path``), a ``.git`` file or folder leading to a FIFO, ``/dev/zero``, a huge
file or another repository of the disk, FIFOs where git looks for ``HEAD``, and ``GIT_*`` variables
in the environment. Each is opened by a real SessionStart hook process (which identifies the project
before it answers) under a timeout that only guards the test run. Afterwards: the planted program
never ran, the hook answered, and the identity is the repository's own or, where git cannot be
read safely, the path; a trap never makes the directory another repository's project. Git runs
through a wrapper on ``PATH`` that counts its starts: a checkout git cannot read is not retried at
every hook.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from testing.cli import spawn
from testing.git_repos import GIT, commit, git, new_repo, root_commit
from testing.hooks import rows, run_hook

pytestmark = pytest.mark.skipif(os.name == "nt" or GIT is None, reason="POSIX FIFOs and git")


class Trap:
    """A folder of planted programs that record it when they run, and a ``git`` wrapper that counts starts."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.markers = base / "markers"
        self.markers.mkdir()
        self.program = base / "planted" / "evil"
        self.program.parent.mkdir()
        self.program.write_text(f'#!/bin/sh\necho "$0 $*" >> {self.markers / "ran"}\nsleep 30\n')
        self.program.chmod(0o755)
        self.hooks = base / "planted" / "hooks"
        self.hooks.mkdir()
        for hook in ("post-checkout", "post-index-change", "reference-transaction", "pre-auto-gc", "fsmonitor-watchman"):
            (self.hooks / hook).write_text(self.program.read_text())
            (self.hooks / hook).chmod(0o755)
        self.bin = base / "bin"
        self.bin.mkdir()
        (self.bin / "git").write_text(f'#!/bin/sh\necho "$*" >> {base / "git-starts"}\nexec {GIT} "$@"\n')
        (self.bin / "git").chmod(0o755)

    def ran(self) -> list[str]:
        return sorted(path.name for path in self.markers.iterdir())

    def git_starts(self) -> int:
        log = self.base / "git-starts"
        return len(log.read_text().splitlines()) if log.exists() else 0

    def hook(self, home: Path, cwd: Path, **env: str) -> dict[str, object]:
        """A real SessionStart in ``cwd``; the alias and identity it recorded for ``cwd``'s location."""
        payload = {"session_id": f"s-{cwd.name}", "cwd": str(cwd), "hook_event_name": "SessionStart",
                   "source": "startup", "transcript_path": str(self.base / "t.jsonl"), "permission_mode": "default"}
        done = run_hook("session_start", payload, home, cwd=self.base,
                        PATH=f"{self.bin}{os.pathsep}{os.environ['PATH']}", **env)
        assert done.returncode == 0, done.stderr
        found = rows(home, "SELECT a.kind, a.marker, a.project_id, p.identity FROM project_aliases a "
                           "JOIN projects p ON p.id = a.project_id WHERE a.path = ?", (str(cwd),))
        assert len(found) == 1, rows(home, "SELECT * FROM project_aliases")
        return found[0]


@pytest.fixture
def trap(tmp_path: Path) -> Trap:
    return Trap(tmp_path)


def configure(repo: Path, text: str) -> None:
    with open(repo / ".git" / "config", "a") as handle:
        handle.write(text)


def fifo(path: Path) -> None:
    if path.exists() or path.is_symlink():
        path.unlink()
    os.mkfifo(path)


def lazy_fetch_repo(repo: Path, config: str) -> Path:
    """A partial clone whose root commit is missing: reading the history makes git fetch it from its promisor
    remote, through whatever ``config`` (the repository's own) says."""
    new_repo(repo, commits=2)
    root = root_commit(repo)
    (repo / ".git" / "objects" / root[:2] / root[2:]).unlink()
    configure(repo, "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tpartialClone = origin\n"
                    f"[remote \"origin\"]\n\turl = ssh://attacker.example/x\n\tpromisor = true\n{config}")
    return repo


# --- configs naming a program ----------------------------------------------------------------------------------

CONFIG_TRAPS: dict[str, Callable[[Trap], str]] = {
    "fsmonitor": lambda trap: f"[core]\n\tfsmonitor = {trap.program}\n",
    "pager": lambda trap: f"[core]\n\tpager = {trap.program}\n[pager]\n\trev-list = {trap.program}\n",
    "hooks path": lambda trap: f"[core]\n\thooksPath = {trap.hooks}\n",
    "ssh and helpers": lambda trap: f"[core]\n\tsshCommand = {trap.program}\n\taskPass = {trap.program}\n"
                                    f"[credential]\n\thelper = !{trap.program}\n[gc]\n\tauto = 1\n",
}


@pytest.mark.parametrize("name", sorted(CONFIG_TRAPS))
def test_a_config_naming_a_program_runs_nothing_and_the_identity_is_read(home, trap, tmp_path, name):
    repo = new_repo(tmp_path / "repo")
    configure(repo, CONFIG_TRAPS[name](trap))
    assert trap.hook(home, repo)["identity"] == f"git:{root_commit(repo)}"
    assert trap.ran() == []


def test_an_included_config_file_is_no_way_around(home, trap, tmp_path):
    repo = new_repo(tmp_path / "repo")
    included = tmp_path / "included.conf"
    included.write_text("".join(make(trap) for make in CONFIG_TRAPS.values()))
    configure(repo, f"[include]\n\tpath = {included}\n[includeIf \"gitdir:{repo}/\"]\n\tpath = {included}\n")
    assert trap.hook(home, repo)["identity"] == f"git:{root_commit(repo)}"
    assert trap.ran() == []


@pytest.mark.parametrize("how", ["own config", "included"])
def test_a_lazy_fetch_never_runs_the_repositorys_ssh_command_and_is_not_retried_at_every_hook(home, trap, tmp_path,
                                                                                              how):
    setting = f"[core]\n\tsshCommand = {trap.program}\n[protocol]\n\tallow = always\n"
    if how == "included":
        (tmp_path / "included.conf").write_text(setting)
        setting = f"[include]\n\tpath = {tmp_path / 'included.conf'}\n"
    repo = lazy_fetch_repo(tmp_path / "partial", setting)
    first = trap.hook(home, repo)
    assert first["kind"] == "path" and first["identity"] == f"path:{repo}"
    assert trap.ran() == []
    starts = trap.git_starts()
    assert starts >= 1  # git was asked once, and could not read the history without a fetch
    again = trap.hook(home, repo)
    assert again["project_id"] == first["project_id"]
    assert trap.git_starts() == starts  # not asked again at the next hook


# --- .git leading somewhere else ---------------------------------------------------------------------------------

def plain_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "unpacked"
    folder.mkdir()
    (folder / "README.md").write_text("an archive, not a clone\n")
    return folder


def dot_git_file(target: str) -> Callable[[Path, Path], None]:
    return lambda folder, _: (folder / ".git").write_text(f"gitdir: {target}\n")


def dot_git_fifo_target(folder: Path, base: Path) -> None:
    os.mkfifo(base / "gitdir-fifo")
    (folder / ".git").write_text(f"gitdir: {base / 'gitdir-fifo'}\n")


def dot_git_huge(folder: Path, _: Path) -> None:
    with open(folder / ".git", "wb") as handle:
        handle.write(b"gitdir: ")
        handle.truncate(1 << 30)  # sparse: a gigabyte that takes no disk


DOT_GIT_TRAPS: dict[str, Callable[[Path, Path], None]] = {
    "gitdir is a FIFO": dot_git_fifo_target,
    "gitdir is /dev/zero": dot_git_file("/dev/zero"),
    ".git is a huge file": dot_git_huge,
    ".git is a FIFO": lambda folder, _: os.mkfifo(folder / ".git"),
    ".git is /dev/zero": lambda folder, _: (folder / ".git").symlink_to("/dev/zero"),
}


@pytest.mark.parametrize("name", sorted(DOT_GIT_TRAPS))
def test_a_dot_git_leading_to_a_special_file_is_a_plain_directory(home, trap, tmp_path, name):
    folder = plain_dir(tmp_path)
    DOT_GIT_TRAPS[name](folder, tmp_path)
    assert trap.hook(home, folder)["identity"] == f"path:{folder}"
    assert trap.git_starts() == 0


BORROWING: dict[str, Callable[[Path, Path], None]] = {
    "gitdir file naming its .git": lambda folder, victim: (folder / ".git").write_text(f"gitdir: {victim}/.git\n"),
    ".git symlink to its .git": lambda folder, victim: (folder / ".git").symlink_to(victim / ".git"),
    "commondir in a .git folder": lambda folder, victim: (
        (folder / ".git" / "refs").mkdir(parents=True), (folder / ".git" / "objects").mkdir(),
        (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n"),
        (folder / ".git" / "commondir").write_text(f"{victim}/.git\n")),
    "worktree git dir without its link back": lambda folder, victim: (
        (folder / "fake-wt").mkdir(), (folder / "fake-wt" / "HEAD").write_text("ref: refs/heads/main\n"),
        (folder / "fake-wt" / "commondir").write_text(f"{victim}/.git\n"),
        (folder / "fake-wt" / "gitdir").write_text(f"{folder}/.git\n"),
        (folder / ".git").write_text("gitdir: fake-wt\n")),
    "refs and objects borrowed": lambda folder, victim: (
        (folder / ".git").mkdir(), (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n"),
        (folder / ".git" / "refs").symlink_to(victim / ".git" / "refs"),
        (folder / ".git" / "objects").symlink_to(victim / ".git" / "objects")),
    "packed-refs borrowed, alternates": lambda folder, victim: (
        git(victim, "pack-refs", "--all"), (folder / ".git" / "refs").mkdir(parents=True),
        (folder / ".git" / "objects" / "info").mkdir(parents=True),
        (folder / ".git" / "objects" / "info" / "alternates").write_text(f"{victim}/.git/objects\n"),
        (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n"),
        (folder / ".git" / "packed-refs").symlink_to(victim / ".git" / "packed-refs")),
    "alternates and a HEAD naming its root, plain files only": lambda folder, victim: (
        (folder / ".git" / "refs").mkdir(parents=True), (folder / ".git" / "objects" / "info").mkdir(parents=True),
        (folder / ".git" / "objects" / "info" / "alternates").write_text(
            os.path.relpath(victim / ".git" / "objects", folder / ".git" / "objects") + "\n"),
        (folder / ".git" / "HEAD").write_text(root_commit(victim) + "\n")),
}


@pytest.mark.parametrize("name", sorted(BORROWING))
def test_a_directory_cannot_take_another_repositorys_identity_through_its_dot_git(home, trap, tmp_path, name):
    victim = new_repo(tmp_path / "private-work")
    owned = trap.hook(home, victim)
    folder = plain_dir(tmp_path)
    BORROWING[name](folder, victim)
    seen = trap.hook(home, folder)
    assert seen["project_id"] != owned["project_id"]
    assert seen["identity"] == f"path:{folder}"


def _commit_naming(repo: Path, parent: str) -> str:
    """A commit object of ``repo``'s own tree whose parent is ``parent`` (an id ``repo`` does not hold)."""
    tree = git(repo, "rev-parse", "HEAD^{tree}")
    body = f"tree {tree}\nparent {parent}\nauthor a <a@a> 1700000000 +0000\ncommitter a <a@a> 1700000000 +0000\n\nx\n"
    done = subprocess.run([GIT or "git", "hash-object", "-t", "commit", "-w", "--stdin", "--literally"], cwd=repo,
                          input=body, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _replace_ref(folder: Path, victim_root: str) -> None:
    """Only the victim's root id is known: a commit whose parent it is, and a replace ref giving that id an object."""
    own = git(folder, "rev-parse", "HEAD")
    (folder / ".git" / "refs" / "heads" / "main").write_text(_commit_naming(folder, victim_root) + "\n")
    (folder / ".git" / "refs" / "replace").mkdir()
    (folder / ".git" / "refs" / "replace" / victim_root).write_text(own + "\n")


def _forged_object(folder: Path, victim_root: str) -> None:
    """Only the victim's root id is known: the repository's own root commit copied under that id as a loose object,
    and the branch pointing at it (git does not check an object's content against its name when it reads it)."""
    own = git(folder, "rev-parse", "HEAD")
    loose = folder / ".git" / "objects" / victim_root[:2] / victim_root[2:]
    loose.parent.mkdir(exist_ok=True)
    loose.write_bytes((folder / ".git" / "objects" / own[:2] / own[2:]).read_bytes())
    (folder / ".git" / "refs" / "heads" / "main").write_text(victim_root + "\n")


def _graft(folder: Path, victim_root: str) -> None:
    """Only the victim's root id is known: a graft making it the parent of the repository's commit, and a forged
    object under that id."""
    own = git(folder, "rev-parse", "HEAD")
    _forged_object(folder, victim_root)
    (folder / ".git" / "refs" / "heads" / "main").write_text(own + "\n")
    (folder / ".git" / "info").mkdir(exist_ok=True)
    (folder / ".git" / "info" / "grafts").write_text(f"{own} {victim_root}\n")


NAMING_A_ROOT = {"replace ref": _replace_ref, "forged loose object": _forged_object, "graft": _graft}


@pytest.mark.parametrize("name", sorted(NAMING_A_ROOT))
def test_a_repository_knowing_only_another_ones_root_id_does_not_become_its_project(home, trap, tmp_path, name):
    victim = new_repo(tmp_path / "private-app")
    owned = trap.hook(home, victim)
    folder = new_repo(tmp_path / "innocent-tool", commits=1)
    own_root = root_commit(folder)
    NAMING_A_ROOT[name](folder, root_commit(victim))
    assert root_commit(victim) in git(folder, "rev-list", "--max-parents=0", "HEAD").split()  # git is fooled
    seen = trap.hook(home, folder)
    assert seen["project_id"] != owned["project_id"]
    assert seen["identity"] in (f"path:{folder}", f"git:{own_root}")  # its own root when it still reaches one
    assert trap.ran() == []


def test_a_hand_made_shallow_clone_naming_a_remote_does_not_join_its_project(home, trap, tmp_path):
    victim = new_repo(tmp_path / "internal-app")
    git(victim, "remote", "add", "origin", "git@github.com:acme/internal-app.git")
    owned = trap.hook(home, victim)
    forged = plain_dir(tmp_path)  # a tarball: no history at all, a few files that look like a shallow clone
    for folder in ("refs/heads", "objects"):
        (forged / ".git" / folder).mkdir(parents=True)
    (forged / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (forged / ".git" / "refs" / "heads" / "main").write_text(git(victim, "rev-parse", "HEAD") + "\n")
    (forged / ".git" / "shallow").write_text(git(victim, "rev-parse", "HEAD") + "\n")
    (forged / ".git" / "config").write_text('[remote "origin"]\n\turl = https://github.com/acme/internal-app\n')
    assert trap.hook(home, forged)["project_id"] != owned["project_id"]
    own = new_repo(tmp_path / "bug-repro", commits=1)  # a real shallow-looking repository with its own commit
    (own / ".git" / "shallow").write_text(git(own, "rev-parse", "HEAD") + "\n")
    git(own, "remote", "add", "origin", "https://github.com/acme/internal-app")
    seen = trap.hook(home, own)
    assert seen["project_id"] != owned["project_id"]
    assert seen["identity"] == "remote:github.com/acme/internal-app"  # its own project, known by the remote


def test_real_worktrees_and_submodules_keep_their_identity(home, trap, tmp_path):
    """The link-back rule lets git's own layouts through."""
    repo = new_repo(tmp_path / "repo")
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(worktree))
    library = new_repo(tmp_path / "library")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "vendor/library")
    commit(repo, "after-submodule.txt")
    assert trap.hook(home, worktree)["project_id"] == trap.hook(home, repo)["project_id"]
    sub = trap.hook(home, repo / "vendor" / "library")
    assert sub["identity"] == f"git:{root_commit(library)}"


# --- FIFOs and devices where git resolves HEAD ------------------------------------------------------------------

SPECIAL_FILES: dict[str, Callable[[Path], None]] = {
    "HEAD is a FIFO": lambda repo: fifo(repo / ".git" / "HEAD"),
    "config is a FIFO": lambda repo: fifo(repo / ".git" / "config"),
    "config is /dev/zero": lambda repo: ((repo / ".git" / "config").unlink(),
                                         (repo / ".git" / "config").symlink_to("/dev/zero")),
    "shallow is a FIFO": lambda repo: fifo(repo / ".git" / "shallow"),
    "packed-refs is a FIFO": lambda repo: fifo(repo / ".git" / "packed-refs"),
    "the branch is a FIFO": lambda repo: fifo(repo / ".git" / "refs" / "heads" / "main"),
    "alternates is a FIFO": lambda repo: fifo(repo / ".git" / "objects" / "info" / "alternates"),
    "grafts is a FIFO": lambda repo: fifo(repo / ".git" / "info" / "grafts"),
    "commit-graph is a FIFO": lambda repo: fifo(repo / ".git" / "objects" / "info" / "commit-graph"),
}


@pytest.mark.parametrize("name", sorted(SPECIAL_FILES))
def test_a_fifo_or_device_where_git_looks_is_never_opened(home, trap, tmp_path, name):
    repo = new_repo(tmp_path / "repo")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    SPECIAL_FILES[name](repo)
    assert trap.hook(home, repo)["identity"] == f"path:{repo}"
    assert trap.git_starts() == 0


def test_an_included_config_that_is_a_fifo_is_bounded_by_the_time_limit(home, trap, tmp_path):
    """git reads includes itself; the time limit ends it, the identity is the path, and the next hook waits not."""
    repo = new_repo(tmp_path / "repo")
    os.mkfifo(tmp_path / "include-fifo")
    configure(repo, f"[include]\n\tpath = {tmp_path / 'include-fifo'}\n")
    first = trap.hook(home, repo)
    assert first["identity"] == f"path:{repo}" and " unread " in str(first["marker"])
    starts = trap.git_starts()
    trap.hook(home, repo)
    assert trap.git_starts() == starts


# --- the environment ------------------------------------------------------------------------------------------

def test_git_variables_in_the_environment_change_nothing(home, trap, tmp_path):
    repo = new_repo(tmp_path / "repo")
    other = new_repo(tmp_path / "other")
    evil_config = tmp_path / "evil.gitconfig"
    evil_config.write_text(f"[core]\n\tfsmonitor = {trap.program}\n\tpager = {trap.program}\n")
    seen = trap.hook(home, repo, GIT_DIR=str(other / ".git"), GIT_WORK_TREE=str(other),
                     GIT_COMMON_DIR=str(other / ".git"), GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="core.fsmonitor",
                     GIT_CONFIG_VALUE_0=str(trap.program), GIT_CONFIG_GLOBAL=str(evil_config),
                     GIT_CONFIG_SYSTEM=str(evil_config), GIT_CONFIG_PARAMETERS=f"'core.pager'='{trap.program}'",
                     GIT_EXTERNAL_DIFF=str(trap.program), GIT_SSH_COMMAND=str(trap.program),
                     GIT_ALLOW_PROTOCOL="ext:file:ssh")
    assert seen["identity"] == f"git:{root_commit(repo)}"
    assert trap.ran() == []


def test_a_repository_of_another_user_keeps_path_identity_without_git_at_every_hook(home, trap, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("giving a repository to another user needs root")
    repo = new_repo(tmp_path / "theirs")
    for folder, names, files in os.walk(repo):
        for name in [folder, *(os.path.join(folder, entry) for entry in names + files)]:
            os.lchown(name, 65534, 65534)
    first = trap.hook(home, repo)
    assert first["identity"] == f"path:{repo}"  # git refuses it (safe.directory): its config is not read
    starts = trap.git_starts()
    trap.hook(home, repo)
    assert trap.git_starts() == starts
    assert trap.ran() == []
    assert stat.S_ISDIR(os.lstat(repo / ".git").st_mode)



def test_the_knowledge_pre_commit_hook_runs_nothing_the_repositorys_config_names(home, trap, tmp_path):
    """``ccmemory git-hook pre-commit`` runs in the user's commit, in a repository that may be a hostile clone:
    the git it starts to see what is staged takes the same safe settings as the identity's."""
    repo = new_repo(tmp_path / "repo")
    (repo / ".claude" / "knowledge" / "architecture").mkdir(parents=True)
    (repo / ".claude" / "knowledge" / "architecture" / "auth.md").write_text(
        "# Auth\n### Token validation\nJWT tokens are checked by the auth middleware.\n")
    git(repo, "add", "-A")
    configure(repo, CONFIG_TRAPS["fsmonitor"](trap) + f"[diff]\n\texternal = {trap.program}\n")
    done = spawn(home, repo, "git-hook", "pre-commit")
    assert done.returncode == 0 and "Indexed 1 file(s)" in done.stdout + done.stderr, done.stdout + done.stderr
    assert trap.ran() == []


# --- the pre-commit hook `ccmemory init` installs ------------------------------------------------------------------

def test_init_never_writes_the_hook_through_a_link_out_of_the_repository(home, tmp_path):
    """An unpacked archive brings its own ``.git``: a ``hooks/pre-commit`` linked to the user's ``~/.profile``
    is refused, and the file it points to is untouched."""
    repo = new_repo(tmp_path / "repo")
    profile = tmp_path / "user" / ".profile"
    profile.parent.mkdir()
    profile.write_text("export PATH=$HOME/bin:$PATH\n")
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.unlink(missing_ok=True)
    hook.symlink_to(profile)
    done = spawn(home, repo, "init", "--yes", HOME=str(profile.parent))
    assert done.returncode == 0, done.stderr
    assert "Could not write .git/hooks/pre-commit: it is a symbolic link; hook not installed" in done.stderr
    assert profile.read_text() == "export PATH=$HOME/bin:$PATH\n"
    assert os.stat(profile).st_mode & 0o111 == 0


def test_init_keeps_a_hooks_path_of_the_repositorys_own_config_inside_it(home, tmp_path):
    """``core.hooksPath`` in the repository's ``.git/config`` naming a folder outside (one on the user's PATH):
    no executable is planted there; a hooks folder inside the checkout is still used."""
    repo = new_repo(tmp_path / "repo")
    planted = tmp_path / "user" / "bin"
    planted.mkdir(parents=True)
    configure(repo, f"[core]\n\thooksPath = {planted}\n")
    done = spawn(home, repo, "init", "--yes", HOME=str(planted.parent))
    assert done.returncode == 0, done.stderr
    assert "is outside this repository and its .git" in done.stderr and "hook not installed" in done.stderr
    assert list(planted.iterdir()) == []
    git(repo, "config", "core.hooksPath", ".githooks")
    done = spawn(home, repo, "init", "--yes", HOME=str(planted.parent))
    assert "Installed git pre-commit hook: .githooks/pre-commit" in done.stdout, done.stdout + done.stderr


def test_init_honours_a_hooks_folder_the_users_own_git_config_names(home, tmp_path):
    """The user's global ``core.hooksPath`` is theirs: the hook goes there, wherever it is."""
    repo = new_repo(tmp_path / "repo")
    user = tmp_path / "user"
    shared = user / "git-hooks"
    shared.mkdir(parents=True)
    (user / ".gitconfig").write_text(f"[core]\n\thooksPath = {shared}\n")
    done = spawn(home, repo, "init", "--yes", HOME=str(user))
    assert done.returncode == 0, done.stderr
    assert "ccmemory pre-commit" in (shared / "pre-commit").read_text(), done.stdout + done.stderr
