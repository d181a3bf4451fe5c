"""What makes two checkouts one project: a portable identity from what git gives every clone.

A project's identity is the same on every clone of a repository, on every machine:

* ``git:<sha>`` — the root commit reached from ``HEAD`` by first parents. Every clone of a
  repository, every worktree, every fork (which shares the history) and every machine
  computes the same one. All roots reachable from ``HEAD`` are kept too, so a checkout of
  another branch whose first-parent line ends elsewhere (an imported history) still matches.
* ``remote:<host/path>`` — a shallow clone, whose oldest commits are cut off (its "roots" are
  only where the cut is), is known by its normalised ``origin`` URL until it is deepened.
* ``path:<real path>`` — a directory outside git, or a repository with no commit yet; it is
  upgraded to ``git:`` once the repository has one.

A monorepo is one project (the repository's top level), a submodule is its own. The paths
where a project has been seen are its aliases (``project_aliases``); an alias, once stored,
answers the hook path's question with one indexed read, so git runs only on the first sight
of a checkout (and when a path-identified or shallow checkout may have changed).

The repository is untrusted (docs/security.md, "Identity from git"): git runs from the absolute
``PATH`` only, on a ``.git`` that belongs to the checkout and holds no FIFO, device or symbolic
link where git looks for ``HEAD`` (:func:`git_dirs`), with settings no config file can override
(:data:`SAFE_CONFIG` and :data:`NO_HOOKS`: no transport, no file-system monitor, pager or hook), every ``GIT_*``
variable of the environment dropped, and a time limit; when it fails the identity is the path,
marked ``unread`` so the caller does not ask again at once. Standard library only; ``subprocess``
is imported on first use.
"""

from __future__ import annotations

import os
import stat

from .safe_files import under

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Sequence

GIT_TIMEOUT_SECONDS = 10
#: Largest commit object read to check that its content hashes to its id (a real commit is a few KB).
MAX_COMMIT_BYTES = 1024 * 1024
#: Largest ``.git`` file, ``HEAD``, ``commondir``, ``config`` (and the other small files of a git dir) read.
MAX_GIT_FILE_BYTES = 256 * 1024
#: Largest ``packed-refs`` read (a repository with many tags has a large one).
MAX_PACKED_REFS_BYTES = 16 * 1024 * 1024
#: Settings given on git's command line, which outrank every config file (the repository's, its includes, the
#: user's): no program of the repository's choosing runs while git reads it. No transport at all (a partial clone
#: missing a commit would fetch it lazily from its promisor remote, through the repository's ``core.sshCommand``
#: or a remote helper), no file-system monitor, no pager. Every git command ccmemory starts takes these (the
#: knowledge pre-commit hook's too, :mod:`ccmemory.knowledge.githook`).
SAFE_CONFIG = ("-c", "protocol.allow=never", "-c", "core.fsmonitor=false", "-c", "core.pager=cat")
#: No hooks either: for every command but the one asking git where the hooks are (``ccmemory init``).
NO_HOOKS = ("-c", "core.hooksPath=/dev/null")
#: Identity kinds and how portable each is: a checkout's identity is upgraded along this line, never down.
PORTABILITY = {"path": 0, "remote": 1, "git": 2}


def portability(key: str | None) -> int:
    """How portable an identity key (``git:…``, ``remote:…``, ``path:…``) is; none counts as ``path``."""
    return PORTABILITY.get(str(key or "").split(":", 1)[0], 0)


def git_dirs(top: str) -> tuple[str, str] | None:
    """(git dir, common dir) of the checkout at ``top``, or None when it has no ``.git`` that is its own.

    A worktree's or submodule's ``.git`` is a file naming its git dir; a worktree's git dir names
    the repository's common dir in ``commondir``. A directory that is not a clone (an unpacked
    archive) can hold a ``.git`` file, a symbolic link or a ``commondir`` naming another
    repository of the disk, so a ``.git`` outside ``top`` counts only when git's own link back
    says it belongs to ``top``: a worktree's ``gitdir`` file, a submodule's ``core.worktree``.
    Everything git reads to resolve ``HEAD`` must be a plain file or folder (no FIFO, device or
    symbolic link), so git is never started on a repository that would hang it or borrow another's refs.
    """
    dot_git = os.path.join(top, ".git")
    if os.path.isdir(dot_git):
        if os.path.islink(dot_git) and not under(os.path.realpath(dot_git), top):
            return None
        git_dir = common_dir = dot_git
        if os.path.lexists(os.path.join(git_dir, "commondir")):  # only a worktree's git dir names another
            return None
    else:
        text = _read_small(dot_git)
        if text is None or not text.startswith("gitdir:"):
            return None
        git_dir = os.path.realpath(os.path.join(top, text[len("gitdir:"):].strip()))
        if not os.path.isdir(git_dir):
            return None
        common = _read_small(os.path.join(git_dir, "commondir"))
        if common is not None:
            common_dir = os.path.realpath(os.path.join(git_dir, common.strip()))
            back = _read_small(os.path.join(git_dir, "gitdir")) or ""
            if os.path.dirname(git_dir) != os.path.join(common_dir, "worktrees") or \
                    os.path.realpath(os.path.join(git_dir, back.strip())) != os.path.realpath(dot_git):
                return None
        else:
            common_dir = git_dir
            worktree = _config_value(_read_small(os.path.join(git_dir, "config")) or "", "core", "worktree")
            if worktree is None or os.path.realpath(os.path.join(git_dir, worktree)) != os.path.realpath(top):
                return None
    return (git_dir, common_dir) if _plain(git_dir, common_dir) else None


#: Files of a git dir that grow with the repository (refs, shallow boundaries, the commit graph): no size limit.
_UNBOUNDED = ("packed-refs", "shallow", "commit-graph")


def _plain(git_dir: str, common_dir: str) -> bool:
    """Whether what git reads to resolve ``HEAD`` are regular files and folders, none a symbolic link, the
    small files within :data:`MAX_GIT_FILE_BYTES`."""
    wanted = [(os.path.join(git_dir, "HEAD"), stat.S_ISREG, True),
              (os.path.join(git_dir, "config.worktree"), stat.S_ISREG, False)]
    wanted += [(os.path.join(common_dir, name), check, required) for name, check, required in (
        ("config", stat.S_ISREG, False), ("packed-refs", stat.S_ISREG, False), ("shallow", stat.S_ISREG, False),
        ("refs", stat.S_ISDIR, True), ("objects", stat.S_ISDIR, True), ("info/grafts", stat.S_ISREG, False),
        ("objects/info/alternates", stat.S_ISREG, False), ("objects/info/commit-graph", stat.S_ISREG, False))]
    for path, check, required in wanted:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            if required:
                return False
            continue
        if not check(mode) or (stat.S_ISREG(mode) and os.path.getsize(path) > MAX_GIT_FILE_BYTES
                               and not path.endswith(_UNBOUNDED)):
            return False
    return not _borrows_objects(common_dir)


def _borrows_objects(common_dir: str) -> bool:
    """Whether the repository reads objects from another store (``objects/info/alternates``, not empty).

    An unpacked archive's ``.git`` of plain files can name another repository of the disk there and a ``HEAD``
    of that repository's commit: git then reads the genuine commit, which hashes to its id. So a repository
    that borrows has path identity, as does a clone made with ``--shared`` or ``--reference`` (rare: CI caches).
    """
    try:
        return os.path.getsize(os.path.join(common_dir, "objects", "info", "alternates")) > 0
    except OSError:
        return False


def _config_value(text: str, section: str, name: str) -> str | None:
    """The value of ``name`` in ``[section]`` of git config text (plain values only, the last one wins)."""
    current, found = "", None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            current = line[1:].split("]", 1)[0].strip().lower()
        elif current == section and "=" in line and line.split("=", 1)[0].strip().lower() == name:
            found = line.split("=", 1)[1].strip().strip('"')
    return found


def has_commit(top: str) -> bool:
    """Whether ``HEAD`` of the checkout at ``top`` names a commit (no subprocess)."""
    found = git_dirs(top)
    return found is not None and _has_commit(*found)


def _has_commit(git_dir: str, common_dir: str) -> bool:
    if os.path.isdir(os.path.join(common_dir, "reftable")):  # refs in binary tables (git 2.45+): git tells
        return True
    head = (_read_small(os.path.join(git_dir, "HEAD")) or "").strip()
    if not head.startswith("ref:"):
        return len(head) >= 40
    ref = head[len("ref:"):].strip()
    if not ref.startswith("refs/") or ".." in ref.split("/"):
        return False
    for folder in (common_dir, git_dir):
        path = os.path.join(folder, ref)
        if os.path.lexists(path):
            return os.path.isfile(path) and not os.path.islink(path)
    packed = _read_small(os.path.join(common_dir, "packed-refs"), MAX_PACKED_REFS_BYTES) or ""
    return any(line.endswith(" " + ref) for line in packed.splitlines())


def is_shallow(top: str) -> bool:
    """Whether the checkout at ``top`` is a shallow clone (its oldest commits are missing)."""
    found = git_dirs(top)
    return found is not None and _is_shallow(found[1])


def _is_shallow(common_dir: str) -> bool:
    return os.path.isfile(os.path.join(common_dir, "shallow"))


def marker(root: str) -> str:
    """What says the checkout at ``root`` is still the one its alias was made for: its ``.git``'s device and
    inode, and the inode and change time of the file git writes when a repository is made (``.git/config``;
    a worktree's or submodule's ``.git`` file itself).

    Another repository cloned where a deleted one was, or ``git init`` in a plain directory, changes
    it, even when the file system gives the new ``.git`` the inode the old one had (ext4 does, at
    once): a change time cannot be set back. Commits, branches and pulls do not change it; ``git
    config`` and ``git remote`` do, and cost one more reading of the repository.
    """
    dot_git = os.path.join(root, ".git")
    try:
        found = os.stat(dot_git)
    except OSError:
        return "none"
    try:
        made = os.stat(os.path.join(dot_git, "config")) if stat.S_ISDIR(found.st_mode) else found
    except OSError:
        return f"{found.st_dev}:{found.st_ino}"
    return f"{found.st_dev}:{found.st_ino}:{made.st_ino}:{made.st_ctime_ns}"


def normalise_remote(url: str) -> str | None:
    """``host/path`` of a git remote URL: scheme, user, password, port, ``.git`` and case of the host dropped.

    ``git@github.com:Org/App.git``, ``https://token@github.com/Org/App`` and
    ``ssh://git@github.com:22/Org/App.git/`` all give ``github.com/Org/App``. A local path
    gives None: it names a directory of one machine, not a repository everyone shares.
    """
    url = url.strip()
    if not url:
        return None
    if "://" in url:
        rest = url.split("://", 1)[1]
        host, _, path = rest.partition("/")
    elif ":" in url and not url.startswith(("/", ".", "~")) and "/" not in url.split(":", 1)[0]:
        host, _, path = url.partition(":")
    else:
        return None
    host = host.rsplit("@", 1)[-1].split(":", 1)[0].lower()
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")].rstrip("/")
    if not host or not path or host in ("localhost", "127.0.0.1"):
        return None
    return f"{host}/{path}"


def origin_url(top: str) -> str | None:
    """The normalised URL of the ``origin`` remote (else the first remote) in the repository's config."""
    found = git_dirs(top)
    return None if found is None else _origin_url(found[1])


def _origin_url(common_dir: str) -> str | None:
    text = _read_small(os.path.join(common_dir, "config")) or ""
    section = ""
    urls: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line
        elif section.startswith('[remote "') and line.replace(" ", "").startswith("url="):
            name = section[len('[remote "'):].split('"', 1)[0]
            urls.setdefault(name, line.split("=", 1)[1].strip())
    url = urls.get("origin") or next(iter(urls.values()), None)
    return normalise_remote(url) if url else None


def identify(top: str) -> dict[str, Any]:
    """The identity of the checkout at ``top``: ``kind``, ``key``, ``roots`` and ``remote``.

    ``key`` is ``<kind>:<value>``; ``roots`` (git only) are every root commit reachable from
    ``HEAD``; ``remote`` is the normalised origin URL, a hint shown to the user and the identity
    of a shallow clone. ``unread`` is set when the repository has a commit but git could not
    read its history (another user's repository git refuses, a damaged one, the time limit).
    """
    path_identity: dict[str, Any] = {"kind": "path", "key": f"path:{top}", "roots": [], "remote": None}
    found = git_dirs(top)  # once: it checks a dozen paths of the repository
    if found is None:
        return path_identity
    remote = _origin_url(found[1])
    path_identity["remote"] = remote
    if _is_shallow(found[1]):
        if not remote:
            return path_identity
        head = _git(top, "rev-parse", "--verify", "HEAD^{commit}")
        if not head or not genuine_commits(top, head):  # a history cut off, and HEAD not even its own
            return {**path_identity, "unread": True}
        return {"kind": "remote", "key": f"remote:{remote}", "roots": [], "remote": remote, "head": head[0]}
    if not _has_commit(*found):
        return path_identity
    first = _git(top, "rev-list", "--first-parent", "--max-parents=0", "HEAD")
    canonical = first[-1] if first else None
    every = _git(top, "rev-list", "--max-parents=0", "HEAD") if canonical else None
    genuine = genuine_commits(top, sorted(set(every or []) | {canonical})) if canonical else set()
    if canonical not in genuine:  # git refused the repository (another user's, damaged), ran out of time, or
        return {**path_identity, "unread": True}  # its root is not the commit it names
    return {"kind": "git", "key": f"git:{canonical}", "roots": sorted(genuine), "remote": remote}


def genuine_commits(top: str, ids: Sequence[str]) -> set[str]:
    """The ids among ``ids`` whose object in the checkout at ``top`` is a commit whose content hashes to its id.

    Git does not check an object's name against its content when it reads it: a loose object file or a
    pack written by hand may hold any commit under the name of another repository's root, and ``rev-list``
    would print that name. Hashing the content (:data:`MAX_COMMIT_BYTES` at most) is what makes an identity
    need the commit itself, not only its id.
    """
    import hashlib

    listed = _run(top, "cat-file", "--batch-check", feed="".join(f"{commit}\n" for commit in ids).encode())
    headers = [_commit_header(line) for line in (listed or b"").decode("ascii", "replace").splitlines()]
    small = [found[0] for found in headers if found and found[1] <= MAX_COMMIT_BYTES and found[0] in ids]
    read = _run(top, "cat-file", "--batch", feed="".join(f"{commit}\n" for commit in small).encode()) if small else None
    genuine: set[str] = set()
    position = 0
    while read and position < len(read):
        end = read.find(b"\n", position)
        header = _commit_header(read[position:end].decode("ascii", "replace")) if end >= 0 else None
        if header is None:
            break
        commit, size = header
        content = read[end + 1:end + 1 + size]
        algorithm = hashlib.sha256 if len(commit) == 64 else hashlib.sha1
        if len(content) == size and algorithm(b"commit %d\0" % size + content).hexdigest() == commit:
            genuine.add(commit)
        position = end + 1 + size + 1
    return genuine


def _commit_header(line: str) -> tuple[str, int] | None:
    """``(id, size)`` of a ``git cat-file --batch`` header line naming a commit (``<id> commit <size>``), else None."""
    parts = line.split(" ")
    if len(parts) != 3 or parts[1] != "commit" or not parts[2].isdigit():
        return None
    return parts[0], int(parts[2])


def holds_commit(top: str, commit: str) -> bool:
    """Whether the checkout at ``top`` holds the commit ``commit`` itself (its content hashing to its id)."""
    return git_dirs(top) is not None and commit in genuine_commits(top, [commit])


def _git(top: str, *args: str) -> list[str] | None:
    """The object ids a read-only git command in ``top`` prints, or None when git is missing or fails."""
    out = _run(top, *args)
    if out is None:
        return None
    lines = [line.strip() for line in out.decode("ascii", "replace").splitlines() if line.strip()]
    return [line for line in lines if len(line) in (40, 64) and all(c in "0123456789abcdef" for c in line)]


def _run(top: str, *args: str, feed: bytes = b"") -> bytes | None:
    """The output of one read-only git command in ``top`` (``feed`` on its input), or None when git is missing
    or fails.

    Replace refs and grafts are off (``--no-replace-objects``, ``GIT_GRAFT_FILE``): with them a repository
    could show one commit under another's id.
    """
    import subprocess

    from . import isolation

    git = isolation.find_program("git")
    if git is None:
        return None
    env = {name: value for name, value in isolation.child_env().items() if not name.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", GIT_NO_LAZY_FETCH="1",
               GIT_CEILING_DIRECTORIES=os.path.dirname(top), GIT_GRAFT_FILE=os.devnull)
    command = [git, *SAFE_CONFIG, *NO_HOOKS, "--no-pager", "--no-replace-objects", "-C", top, *args]
    try:
        done = subprocess.run(command, input=feed, capture_output=True, timeout=GIT_TIMEOUT_SECONDS, env=env)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _read_small(path: str, limit: int = MAX_GIT_FILE_BYTES) -> str | None:
    """The text of a small regular file (None when missing, not a regular file, or larger than ``limit``)."""
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > limit:
            return None
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(limit)
    except OSError:
        return None
