"""The git pre-commit hook: re-index the knowledge when a commit changes it, and never block the commit.

``install`` adds a marked block to the repository's ``pre-commit`` hook (the
folder git really uses, ``core.hooksPath`` included). An existing shell hook
keeps all its lines; the block goes right after its first line, so an ``exit``
at its end cannot skip it, and ends in ``|| true``, so it cannot fail the
commit. A hook in another language is left alone with a message saying what to add.

The repository is untrusted, and an unpacked archive (unlike a clone) brings its own ``.git``:
its ``hooks/pre-commit`` may be a link to ``~/.profile``, its ``config`` may set ``core.hooksPath``
to a folder on the user's PATH. So the hook is written only as a regular file (never through a
link) in a folder inside the checkout or its own git dir (:func:`ccmemory.identity.git_dirs`),
unless the folder is named by ``core.hooksPath`` of the user's own (global or system) git config.

Git runs the hook in the repository, whose files must never run: the block starts the
interpreter that installed it by absolute path with ``-E -P`` (no ``PYTHON*`` variable, no
current directory on ``sys.path``) and puts the folder holding that ccmemory package first
on ``sys.path`` itself (:func:`ccmemory.isolation.isolated_module_command`); the fallback
``ccmemory`` on PATH is used only when PATH finds it at an absolute path.

The block runs ``ccmemory git-hook pre-commit`` (:func:`run_pre_commit`): it
returns at once when no staged file is under the knowledge directory,
takes ``.claude/memory/index.lock`` (shared with ``ccmemory index``) so two runs
never index at once, indexes at most :data:`HOOK_MAX_ENTRIES` entries (a changed file with more
is left for ``ccmemory index``, with a warning) and embeds them (more than :data:`HOOK_EMBED_ENTRIES`:
the detached embedding worker does), prints one line, and on any failure
writes the details to ``.claude/memory/errors.log`` and still exits 0. When
another run holds the lock the hook does not wait: it asks that run for one
more round (:func:`ccmemory.locks.in_rounds`), which indexes this commit's changes.
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Callable

from .. import isolation, safe_files
from ..identity import NO_HOOKS, SAFE_CONFIG, git_dirs
from ..errors import ValidationError
from ..safe_files import UnsafeFileError, open_text_for_writing
from .. import locks
from .settings import ProjectSettings

BEGIN = "# >>> ccmemory pre-commit (re-indexes .claude/knowledge; never blocks the commit) >>>"
END = "# <<< ccmemory pre-commit <<<"
_SHELLS = ("sh", "bash", "dash", "zsh", "ksh", "ash")
GIT_TIMEOUT_SECONDS = 10
#: Largest pre-commit hook ``install`` reads to add its block to.
MAX_HOOK_BYTES = 1024 * 1024
#: Most warnings of an indexing run the hook prints; errors.log has them all.
SHOWN_PROBLEMS = 5
#: Most entries one run of the hook creates. Storing an entry takes about a millisecond, so a commit waits a second
#: or two for them at most (20,000 flood sections held one for 69 s), and a real file of up to a thousand sections is
#: still indexed with its commit. A changed file with more is left as it was, and the hook says to run
#: ``ccmemory index``; reading it stops at this many entries too.
HOOK_MAX_ENTRIES = 1_000
#: Most new entries the hook embeds itself (a second or so with the built-in model; a thousand took five). More are
#: left to the detached embedding worker: found by keywords at once, by meaning moments later.
HOOK_EMBED_ENTRIES = 100


@dataclass
class HookResult:
    action: str  # installed, added, skipped, unsupported, no-git
    path: str
    message: str


def _git(root: str, *args: str) -> subprocess.CompletedProcess[str] | None:
    """Git on the repository at ``root`` with :data:`ccmemory.identity.SAFE_CONFIG`: the repository may be a
    hostile clone, and its config must not run a program (``core.fsmonitor``, a pager) in the user's commit.

    The environment is kept: in a pre-commit hook git's ``GIT_INDEX_FILE`` names the index being committed.
    """
    git = isolation.find_program("git")  # never a ./git of the repository
    if git is None:
        return None
    try:
        return subprocess.run([git, *SAFE_CONFIG, *args], cwd=root, capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None


def hooks_dir(root: str) -> str | None:
    """The folder git runs hooks from for this repository, or None outside a git repository."""
    found = _git(root, "rev-parse", "--git-path", "hooks")
    if found is None or found.returncode != 0:
        return None
    return os.path.normpath(os.path.join(root, found.stdout.strip()))


def hooks_base(root: str, folder: str) -> str | None:
    """The folder ``install`` may write the hook inside: the repository's own (checkout or git dir) holding
    ``folder``; "" when the user's own git config names ``folder`` (anywhere); None when neither.

    Where ``core.hooksPath`` comes from is git's answer (``--show-scope``): a ``local`` or ``worktree``
    value is the repository's, so it is held to the repository like the default ``.git/hooks``.
    """
    scopes = _git(root, "config", "--show-scope", "--get-all", "core.hooksPath")
    lines = scopes.stdout.splitlines() if scopes is not None and scopes.returncode == 0 else []
    if lines and lines[-1].split("\t", 1)[0] in ("global", "system", "command"):
        return ""
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None or top.returncode != 0:
        return None
    checkout = os.path.realpath(top.stdout.strip())
    dirs = git_dirs(checkout)
    real = os.path.realpath(folder)
    for base in (checkout, *(os.path.realpath(path) for path in dirs or ())):
        if safe_files.under(real, base):
            return base
    return None


def block(python: str | None = None) -> str:
    """The lines added to the hook: this interpreter's ccmemory, else one on PATH, else a note.

    Neither can pick up a file of the repository, the hook's current directory (see the module).
    """
    python = os.path.abspath(python or sys.executable)
    source = isolation.package_parent()
    command = isolation.isolated_module_command('"$ccmemory_python"', '"$ccmemory_source"', "ccmemory", "git-hook",
                                                "pre-commit", flags=("-E", "-P"))
    code = command.index("-c") + 1
    command[code] = shlex.quote(command[code])
    return "\n".join([
        BEGIN,
        f"ccmemory_python={shlex.quote(python)}",
        f"ccmemory_source={shlex.quote(source)}",
        'ccmemory_path=$(command -v ccmemory 2>/dev/null)',
        'if [ -x "$ccmemory_python" ] && [ -d "$ccmemory_source/ccmemory" ]; then',
        f"  {' '.join(command)} || true",
        'elif [ "${ccmemory_path#/}" != "$ccmemory_path" ]; then',
        '  "$ccmemory_path" git-hook pre-commit || true',
        "else",
        '  echo "ccmemory: not found; .claude/knowledge was not re-indexed (the commit goes on)" >&2',
        "fi",
        END,
        "",
    ])


def _is_shell_script(text: str) -> bool:
    first = text.split("\n", 1)[0]
    if not first.startswith("#!"):
        return True  # git runs a hook without a shebang with sh
    words = first[2:].strip().split()
    if not words:
        return True
    program = os.path.basename(words[1] if os.path.basename(words[0]) == "env" and len(words) > 1 else words[0])
    return program in _SHELLS


def install(root: str, python: str | None = None) -> HookResult:
    """Install or add the ccmemory block to the repository's pre-commit hook.

    The hook's folder is the one git names (``core.hooksPath`` included), held to the repository
    unless the user's own git config names it (:func:`hooks_base`); the hook is read bounded, as a
    regular file only, and written never through a link.
    """
    folder = hooks_dir(root)
    if folder is None:
        reason = "Git is not installed" if _git(root, "--version") is None else "Not a git repo"
        return HookResult("no-git", "", f"{reason}. Git hooks will not be installed.")
    path = os.path.join(folder, "pre-commit")
    shown = os.path.relpath(path, root)
    base = hooks_base(root, folder)
    if base is None:
        return HookResult("unsupported", shown,
                          f"Could not write {shown}: the hooks folder {folder} is outside this repository and its "
                          ".git (a link, or core.hooksPath in the repository's own config); hook not installed. "
                          "Set core.hooksPath in your global git config to use a shared hooks folder.")
    within = base or None
    lines = block(python)
    try:
        existing = (safe_files.read_regular(path, MAX_HOOK_BYTES, root=within, follow=within is None).decode(
            "utf-8", "replace") if os.path.lexists(path) else None)
        if existing is not None and BEGIN in existing:
            return HookResult("skipped", shown, f"Skipping existing: {shown} (already runs ccmemory)")
        if existing is not None and not _is_shell_script(existing):
            return HookResult("unsupported", shown,
                              f"{shown} is not a shell script, so it was left alone. To re-index knowledge on "
                              f"commit, make it run: {shlex.quote(python or sys.executable)} -E -P -m ccmemory "
                              "git-hook pre-commit (its exit status can be ignored)")
        if within is None:
            os.makedirs(folder, exist_ok=True)
        else:
            safe_files.make_dirs(folder, within)
        if existing is None:
            text, action = "#!/bin/sh\n" + lines, "installed"
        else:
            head, _, rest = existing.partition("\n")
            text = f"{head}\n{lines}{rest}" if head.startswith("#!") else lines + existing
            action = "added"
        fd = safe_files.open_fd(path, write=True, root=within, flags=os.O_CREAT | os.O_TRUNC)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            os.fchmod(handle.fileno(), os.fstat(handle.fileno()).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    except UnsafeFileError as exc:
        return HookResult("unsupported", shown, f"Could not write {shown}: {exc.reason}; hook not installed")
    except (OSError, ValidationError) as exc:
        return HookResult("unsupported", shown, f"Could not write {shown}: {getattr(exc, 'strerror', None) or exc}; "
                                                "hook not installed")
    verb = "Installed" if action == "installed" else "Added ccmemory to the existing"
    return HookResult(action, shown, f"{verb} git pre-commit hook: {shown}")


def staged_files(root: str) -> list[str] | None:
    """Paths (relative to the repository top) staged for the commit; None when git cannot say."""
    found = _git(root, *NO_HOOKS, "diff", "--cached", "--no-ext-diff", "--no-textconv", "--name-only", "-z")
    if found is None or found.returncode != 0:
        return None
    return [name for name in found.stdout.split("\0") if name]


def touches(paths: list[str], root: str, folder: str) -> bool:
    """Whether any of ``paths`` (relative to ``root``) lies under ``folder``."""
    prefix = os.path.relpath(folder, root).replace(os.sep, "/").rstrip("/") + "/"
    return any(path.replace(os.sep, "/").startswith(prefix) for path in paths)


def index_lock(settings: ProjectSettings) -> str:
    """The lock every indexing run of the project takes: the hook's and ``ccmemory index``."""
    return os.path.join(settings.writable_memory_dir(), "index.lock")


def holder_text(holder: dict[str, object]) -> str:
    """``pid 123, started 2026-01-02T10:00:00, ccmemory index``: who holds a lock, as far as it says."""
    parts = [f"pid {holder.get('pid') or 'unknown'}"]
    if holder.get("started"):
        parts.append(f"started {holder['started']}")
    if holder.get("command"):
        parts.append(f"ccmemory {holder['command']}")
    return ", ".join(parts)


def log_error(settings: ProjectSettings, message: str) -> str:
    """Append a timestamped entry to ``.claude/memory/errors.log``; returns its path."""
    path = os.path.join(settings.writable_memory_dir(), "errors.log")
    with open_text_for_writing(path, append=True) as handle:
        handle.write(f"[{time.strftime('%Y-%m-%dT%H:%M:%S%z')}] pre-commit: {message.rstrip()}\n")
    return path


def report_problems(settings: ProjectSettings, problems: list[str], say: Callable[[str], None]) -> None:
    """Show the first warnings of an indexing run in the terminal and log them all to ``errors.log``
    (all of them in the terminal when the log cannot be written)."""
    try:
        where = os.path.relpath(log_error(settings, "\n".join(problems)), settings.root)
    except (OSError, UnsafeFileError) as exc:
        say(f"ccmemory: could not write the error log: {exc}")
        where = ""
    shown = problems if not where else problems[:SHOWN_PROBLEMS]
    for problem in shown:
        say(f"ccmemory: warning: {problem}")
    more = f" ({len(problems) - len(shown)} more)" if len(problems) > len(shown) else ""
    details = f"; details in {where}" if where else ""
    say(f"ccmemory: indexed with {len(problems)} warning(s){more}{details}. The commit goes on.")


def refresh_structure(settings: ProjectSettings, say: Callable[[str], None]) -> None:
    """A quick analysis into the structure cache, with a hint when the structure changed a lot."""
    from .. import analysis

    result = analysis.run(settings)
    for problem in result["problems"]:
        if problem not in settings.problems:
            say(f"ccmemory: warning: {problem}")
    suggestion = analysis.save_cache(settings, result)
    if suggestion:
        say(f"ccmemory: {suggestion}")


def run_pre_commit(settings: ProjectSettings, index: Callable[[], list[str]], say: Callable[[str], None]) -> int:
    """The hook's work; ``index()`` runs the indexer and returns its problems. Always 0.

    Knowledge staged: index it (under the lock, once more for each run that found
    it busy meanwhile). Anything else staged: refresh the structure cache.
    Nothing relevant staged: return at once.
    """
    try:
        staged = staged_files(settings.root)
        knowledge_changed = staged is None or touches(staged, settings.root, settings.knowledge_dir)
        claude = os.path.join(settings.root, ".claude")
        source_changed = staged is None or any(not touches([path], settings.root, claude) for path in staged)
        if source_changed:
            refresh_structure(settings, say)
        if not knowledge_changed or not os.path.isdir(settings.knowledge_dir):
            return 0
        try:
            rounds = locks.in_rounds(index_lock(settings), index, ask_holder=True, command="git-hook pre-commit")
        except locks.Busy as busy:
            say(f"ccmemory: another indexing run ({holder_text(busy.holder)}) is busy; skipped this time: "
                "that run will index once more when it ends, so this commit's knowledge changes are not lost")
            return 0
        problems = list(dict.fromkeys(problem for found in rounds for problem in found))
        if problems:
            report_problems(settings, problems, say)
    except UnsafeFileError as exc:  # .claude/memory or the knowledge resolves outside the project: nothing written
        say(f"ccmemory: {exc}. Knowledge not indexed; the commit goes on.")
    except Exception as exc:  # the commit must go on whatever happened
        try:
            where = os.path.relpath(log_error(settings, "".join(traceback.format_exception(exc))), settings.root)
        except Exception:  # the log itself cannot be written (read-only, a symlink): say it all here
            where = "stderr"
            say("".join(traceback.format_exception(exc)))
        say(f"ccmemory: knowledge indexing failed ({exc}); details in {where}. The commit goes on.")
    return 0
