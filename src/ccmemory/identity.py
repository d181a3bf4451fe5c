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

Git runs from the absolute ``PATH`` only, with the repository's config unable to start a
program (``core.fsmonitor``, a pager) and every ``GIT_*`` variable dropped, bounded in time.
Standard library only; ``subprocess`` is imported on first use.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GIT_TIMEOUT_SECONDS = 10
#: Largest ``.git`` file, ``HEAD``, ``commondir`` or ``config`` read.
MAX_GIT_FILE_BYTES = 256 * 1024
#: Identity kinds and how portable each is: a checkout's identity is upgraded along this line, never down.
PORTABILITY = {"path": 0, "remote": 1, "git": 2}


def portability(key: str | None) -> int:
    """How portable an identity key (``git:…``, ``remote:…``, ``path:…``) is; none counts as ``path``."""
    return PORTABILITY.get(str(key or "").split(":", 1)[0], 0)


def git_dirs(top: str) -> tuple[str, str] | None:
    """(git dir, common dir) of the checkout at ``top``, or None when it has no readable ``.git``.

    A worktree's or submodule's ``.git`` is a file naming its git dir; a worktree's git dir names
    the repository's common dir in ``commondir``.
    """
    dot_git = os.path.join(top, ".git")
    if os.path.isdir(dot_git):
        git_dir = dot_git
    else:
        text = _read_small(dot_git)
        if text is None or not text.startswith("gitdir:"):
            return None
        git_dir = os.path.normpath(os.path.join(top, text[len("gitdir:"):].strip()))
        if not os.path.isdir(git_dir):
            return None
    common = _read_small(os.path.join(git_dir, "commondir"))
    common_dir = os.path.normpath(os.path.join(git_dir, common.strip())) if common else git_dir
    return git_dir, common_dir


def has_commit(top: str) -> bool:
    """Whether ``HEAD`` of the checkout at ``top`` names a commit (no subprocess)."""
    found = git_dirs(top)
    if found is None:
        return False
    git_dir, common_dir = found
    head = (_read_small(os.path.join(git_dir, "HEAD")) or "").strip()
    if not head.startswith("ref:"):
        return len(head) >= 40
    ref = head[len("ref:"):].strip()
    if not ref.startswith("refs/") or ".." in ref.split("/"):
        return False
    if os.path.isfile(os.path.join(common_dir, ref)) or os.path.isfile(os.path.join(git_dir, ref)):
        return True
    packed = _read_small(os.path.join(common_dir, "packed-refs")) or ""
    return any(line.endswith(" " + ref) for line in packed.splitlines())


def is_shallow(top: str) -> bool:
    """Whether the checkout at ``top`` is a shallow clone (its oldest commits are missing)."""
    found = git_dirs(top)
    return found is not None and os.path.isfile(os.path.join(found[1], "shallow"))


def marker(root: str) -> str:
    """What says the checkout at ``root`` is still the one its alias was made for: its ``.git``'s device and inode.

    Another repository cloned where a deleted one was, or ``git init`` in a plain directory,
    changes it; commits, branches and pulls do not.
    """
    try:
        found = os.stat(os.path.join(root, ".git"))
    except OSError:
        return "none"
    return f"{found.st_dev}:{found.st_ino}"


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
    if found is None:
        return None
    text = _read_small(os.path.join(found[1], "config")) or ""
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
    of a shallow clone.
    """
    path_identity: dict[str, Any] = {"kind": "path", "key": f"path:{top}", "roots": [], "remote": None}
    if git_dirs(top) is None:
        return path_identity
    remote = origin_url(top)
    path_identity["remote"] = remote
    if is_shallow(top):
        return {"kind": "remote", "key": f"remote:{remote}", "roots": [], "remote": remote} if remote else path_identity
    if not has_commit(top):
        return path_identity
    first = _git(top, "rev-list", "--first-parent", "--max-parents=0", "HEAD")
    every = _git(top, "rev-list", "--max-parents=0", "HEAD")
    if not first:
        return path_identity
    canonical = first[-1]
    roots = sorted(set(every or []) | {canonical})
    return {"kind": "git", "key": f"git:{canonical}", "roots": roots, "remote": remote}


def _git(top: str, *args: str) -> list[str] | None:
    """The output lines of one read-only git command in ``top``, or None when git is missing or fails."""
    import subprocess

    from . import isolation

    git = isolation.find_program("git")
    if git is None:
        return None
    env = {name: value for name, value in isolation.child_env().items() if not name.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")
    command = [git, "-c", "core.fsmonitor=false", "-c", "core.pager=cat", "--no-pager", "-C", top, *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=GIT_TIMEOUT_SECONDS, env=env,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    return [line for line in lines if len(line) in (40, 64) and all(c in "0123456789abcdef" for c in line)]


def _read_small(path: str) -> str | None:
    """The text of a small regular file (None when missing, not a regular file, or too large)."""
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > MAX_GIT_FILE_BYTES:
            return None
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(MAX_GIT_FILE_BYTES)
    except OSError:
        return None
