"""The git pre-commit hook and `ccmemory index` under load and interruption (seed 001: F4 edge cases, F4.1c,
F5.2, F5's Ctrl+C edge case), on fixture repositories with real `git commit`s and the real CLI as subprocesses.

A run that must be caught part way (Ctrl+C, or holding the index lock while a commit runs) is watched
through its progress bar on a pseudo-terminal, never timed: it is signalled once the bar shows files done,
on a tree big enough that the rest takes far longer than sending a signal. The embedding model is a tiny
real ONNX model, so thousands of entries embed in moments.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from ccmemory import db as database
from ccmemory import embedding_worker, locks
from ccmemory.knowledge import githook
from testing.cli import spawn as ccmemory
from testing.env import isolated_env
from testing.knowledge import AUTH, git, GOTCHAS, make_repo, write_files
from testing.models import tiny_model

BULK_FILES = 4000
WAIT_SECONDS = 240


# --- fixtures -------------------------------------------------------------------------------------------------

@pytest.fixture
def fast_home(tmp_path: Path) -> Path:
    """A CCMEMORY_HOME whose embedding model is a tiny real ONNX model (the built-in one is slow for thousands)."""
    pytest.importorskip("onnx")
    home = tmp_path / "home"
    home.mkdir()
    model = tiny_model(tmp_path / "tiny-model", 8)
    (home / "config.json").write_text(json.dumps({"embedding": {"path": str(model)}}))
    return home


def bulk(count: int) -> dict[str, str]:
    """``count`` small knowledge files under ``bulk/``, one section each."""
    return {f"bulk/note-{number:05d}.md": f"# Note {number}\n### Service {number}\n"
            f"Service {number} keeps its cache warm between deploys.\n" for number in range(count)}


def committed_project(tmp_path: Path, home: Path) -> Path:
    """A git repository set up by `ccmemory init` (hook installed) with a first commit, knowledge indexed."""
    repo = tmp_path / "repo"
    repo.mkdir()
    assert git(home, repo, "init", "-q").returncode == 0
    write_files(repo, {"src/index.ts": "export function greet(name: string): string { return name }\n",
                       "package.json": json.dumps({"name": "demo-app", "main": "src/index.ts"})})
    done = ccmemory(home, repo, "init")
    assert done.returncode == 0, done.stderr
    write_files(repo / ".claude" / "knowledge", {"architecture/auth.md": AUTH})
    commit(home, repo, "setup", ".")
    return repo


def commit(home: Path, repo: Path, message: str, *paths: str) -> subprocess.CompletedProcess[str]:
    """Stage ``paths`` and run a real `git commit` (its pre-commit hook included); it must succeed."""
    assert git(home, repo, "add", "--", *paths).returncode == 0
    done = git(home, repo, "commit", "-q", "-m", message)
    assert done.returncode == 0, f"git commit {message!r} failed:\n{done.stdout}\n{done.stderr}"
    assert message in git(home, repo, "log", "-1", "--format=%s").stdout
    return done


def query(home: Path, sql: str, params: tuple = ()) -> list[dict]:
    db = database.connect(home / "ccmemory.db")
    try:
        return db.rows(sql, params)
    finally:
        db.close()


def entry_refs(home: Path) -> list[str]:
    """``file#anchor`` of every live knowledge entry, duplicates kept (so a double index shows)."""
    rows = query(home, "SELECT metadata FROM memories WHERE source = 'knowledge' AND is_deleted = 0")
    refs = [json.loads(row["metadata"])["knowledge"] for row in rows]
    return sorted(f"{info['file']}#{info['anchor']}" for info in refs)


def files_indexed(home: Path) -> int:
    return query(home, "SELECT COUNT(*) AS n FROM knowledge_files")[0]["n"]


def index_lock(repo: Path) -> Path:
    return repo / ".claude" / "memory" / "index.lock"


class Terminal:
    """The CLI on a pseudo-terminal (the progress bar shows only on one), its output read as it comes."""

    def __init__(self, home: Path, root: Path, *args: str) -> None:
        self.leader, follower = pty.openpty()
        self.process = subprocess.Popen([sys.executable, "-m", "ccmemory", *args], cwd=root, env=isolated_env(home),
                                        stdin=follower, stdout=follower, stderr=follower, close_fds=True)
        os.close(follower)
        self.output = b""

    @property
    def text(self) -> str:
        return self.output.decode(errors="replace")

    def _read(self) -> bool:
        """Read what is there (waiting up to half a second); False once the terminal is closed."""
        ready, _, _ = select.select([self.leader], [], [], 0.5)
        if not ready:
            return True
        try:
            chunk = os.read(self.leader, 65536)
        except OSError:  # EIO: every writer has closed the terminal
            return False
        self.output += chunk
        return bool(chunk)

    def wait_for(self, seen: Callable[[str], bool], what: str) -> None:
        deadline = time.monotonic() + WAIT_SECONDS
        while not seen(self.text):
            assert self.process.poll() is None or self._read(), f"exited before {what}:\n{self.text[-3000:]}"
            assert time.monotonic() < deadline, f"no {what} after {WAIT_SECONDS}s:\n{self.text[-3000:]}"
            self._read()

    def finish(self) -> tuple[int, str]:
        """Read to the end and wait for the process; (exit code, everything it printed)."""
        deadline = time.monotonic() + WAIT_SECONDS
        while self._read():
            if time.monotonic() > deadline:
                self.process.kill()
                break
        code = self.process.wait(timeout=WAIT_SECONDS)
        os.close(self.leader)
        return code, self.text


def percent_done(text: str) -> int:
    """The highest percentage the file progress bar has shown so far."""
    shown = re.findall(r"Indexing knowledge .*?(\d+)%", text)
    return max((int(value) for value in shown), default=0)


def some_files_done(text: str) -> bool:
    return 2 <= percent_done(text) < 100


# --- F4 edge: concurrent runs, one lock --------------------------------------------------------------------------

def test_a_commit_while_an_index_holds_the_lock_is_not_blocked_and_its_changes_are_indexed_once(tmp_path, fast_home):
    home = fast_home
    repo = committed_project(tmp_path, home)
    knowledge = repo / ".claude" / "knowledge"
    write_files(knowledge, bulk(BULK_FILES))  # not committed: only the manual index reads them

    # A manual index runs; it is stopped while it holds the lock, already past architecture/ (files go in order).
    holder = Terminal(home, repo, "index")
    holder.wait_for(some_files_done, "progress")
    holder.process.send_signal(signal.SIGSTOP)
    try:
        held = locks.read(str(index_lock(repo))) or {}
        assert held.get("pid") == holder.process.pid and held.get("command") == "index", held

        # Two commits change files the holder has already read; neither waits for it, neither indexes.
        (knowledge / "architecture" / "auth.md").write_text(AUTH + "### Sessions\nSessions expire after a day.\n")
        first = commit(home, repo, "auth sessions", ".claude/knowledge/architecture/auth.md")
        write_files(knowledge, {"architecture/billing.md": "# Billing\n### Retries\nInvoices retry three times.\n"})
        second = commit(home, repo, "billing", ".claude/knowledge/architecture/billing.md")
        for done in (first, second):
            assert f"another indexing run (pid {holder.process.pid}" in done.stderr, done.stderr
            assert "ccmemory index) is busy; skipped this time" in done.stderr
            assert "this commit's knowledge changes are not lost" in done.stderr
            assert "ccmemory: Indexed" not in done.stderr  # the hook did not index alongside the holder
        assert Path(locks.request_path(str(index_lock(repo)))).exists()

        # A second manual index is refused with who holds the lock and what to do (exit 1: nothing done).
        refused = ccmemory(home, repo, "index")
        assert refused.returncode == 1, refused.stderr
        assert f"Another index of this project is running (pid {holder.process.pid}, started " in refused.stderr
        assert "Wait for it to finish, then run `ccmemory index` again" in refused.stderr
        assert "Traceback" not in refused.stderr
    finally:
        holder.process.send_signal(signal.SIGCONT)
    code, output = holder.finish()

    # The holder indexed once more for the commits: their sections are in, each exactly once.
    assert code == 0, output
    assert "Indexed 2 times: the knowledge changed while indexing" in output
    refs = entry_refs(home)
    assert len(refs) == len(set(refs)), "an entry was indexed twice"
    assert [ref for ref in refs if ref.startswith("architecture/")] == [
        "architecture/auth.md#refresh", "architecture/auth.md#sessions", "architecture/auth.md#token-validation",
        "architecture/billing.md#retries"]
    assert len([ref for ref in refs if ref.startswith("bulk/")]) == BULK_FILES
    assert sum(row["entries"] for row in query(home, "SELECT entries FROM knowledge_files")) == len(refs)
    assert not index_lock(repo).exists() and not Path(locks.request_path(str(index_lock(repo)))).exists()
    again = ccmemory(home, repo, "index", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["files_indexed"] == 0  # nothing was left over for later


def test_a_dry_run_does_not_need_the_lock(tmp_path, home):
    repo = tmp_path / "repo"
    make_repo(repo, {"gotchas.md": GOTCHAS})
    with locks.held(str(index_lock(repo)), command="index"):
        dry = ccmemory(home, repo, "index", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "Would index: gotchas.md (2 entries)" in dry.stdout


def test_a_lock_whose_process_has_ended_is_taken_over_by_the_next_commit(tmp_path, fast_home):
    home = fast_home
    repo = committed_project(tmp_path, home)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=60)
    index_lock(repo).write_text(json.dumps({"pid": gone.pid, "started": "2026-01-01T00:00:00",
                                            "started_epoch": time.time(), "command": "index"}))
    (repo / ".claude" / "knowledge" / "gotchas.md").write_text(GOTCHAS)
    done = commit(home, repo, "gotchas", ".claude/knowledge/gotchas.md")
    assert "ccmemory: Indexed 1 file(s)" in done.stderr and "busy" not in done.stderr
    assert "gotchas.md#cron-runs-in-server-time" in entry_refs(home)
    assert not index_lock(repo).exists()


@pytest.mark.parametrize("started", ["1e300", "NaN", '"1e300"', "1" + "0" * 400])
def test_an_index_lock_the_repository_committed_is_taken_over_by_ccmemory_index(tmp_path, home, started):
    """pid 1 is always alive: with a start that never ages (far future, NaN, text, too large) the lock would stop
    every index of the project for good; such a record is stale, and `ccmemory index` indexes."""
    repo = tmp_path / "repo"
    make_repo(repo, {"gotchas.md": GOTCHAS})
    index_lock(repo).parent.mkdir(parents=True)
    index_lock(repo).write_text(f'{{"pid": 1, "started": "forever", "started_epoch": {started}, "command": "index"}}')
    done = ccmemory(home, repo, "index", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["files_indexed"] == 1 and "Another index" not in done.stderr
    assert "gotchas.md#cron-runs-in-server-time" in entry_refs(home)
    assert not index_lock(repo).exists()


# --- locks.held: stale locks, and a holder that was taken over ----------------------------------------------------

def _write_lock(path: Path, **holder: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(holder))


def test_stale_locks_are_taken_over_and_a_live_one_is_busy(tmp_path):
    path = tmp_path / "memory" / "index.lock"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=60)
    live = os.getppid()  # pytest's parent: alive, and not this process
    stale = {
        "dead pid": {"pid": gone.pid, "started_epoch": time.time()},
        "too old": {"pid": live, "started_epoch": time.time() - locks.STALE_SECONDS - 1},
        "unreadable": "{not json",
        # a record a repository committed: a live pid and a start that never ages
        "far future": {"pid": live, "started_epoch": 1e300},
        "future beyond the skew": {"pid": live, "started_epoch": time.time() + locks.MAX_CLOCK_SKEW_SECONDS + 60},
        "NaN": f'{{"pid": {live}, "started_epoch": NaN}}',
        "infinite": f'{{"pid": {live}, "started_epoch": Infinity}}',
        "too large for a float": f'{{"pid": {live}, "started_epoch": 1{"0" * 400}}}',
        "text": {"pid": live, "started_epoch": "1e300"},
        "true": {"pid": live, "started_epoch": True},
        "no start": {"pid": live},
    }
    for why, holder in stale.items():
        if isinstance(holder, str):
            path.write_text(holder)
        else:
            _write_lock(path, **holder)
        with locks.held(str(path), command="test"):
            mine = locks.read(str(path)) or {}
            assert mine.get("pid") == os.getpid() and mine.get("command") == "test", why
        assert not path.exists(), why

    for started in (time.time() - locks.STALE_SECONDS + 60, time.time() + locks.MAX_CLOCK_SKEW_SECONDS - 60):
        _write_lock(path, pid=live, started="2026-01-01T10:00:00", started_epoch=started)
        with pytest.raises(locks.Busy) as busy:
            with locks.held(str(path)):
                pass
        assert busy.value.holder["pid"] == live and busy.value.holder["started"] == "2026-01-01T10:00:00"
        assert path.exists()  # a live holder's lock is left alone, a start a little ahead (a clock set back) too


def test_a_holder_that_was_taken_over_leaves_its_successors_lock_alone(tmp_path):
    path = tmp_path / "memory" / "index.lock"
    with locks.held(str(path), command="slow"):
        locks.update(str(path), started_epoch=time.time() - locks.STALE_SECONDS - 1)  # it ran far too long
        successor = locks.held(str(path), command="next")
        successor.__enter__()
    assert (locks.read(str(path)) or {}).get("command") == "next"  # still the successor's
    successor.__exit__(None, None, None)
    assert not path.exists()


def test_in_rounds_runs_once_more_for_each_request_and_a_busy_caller_asks(tmp_path):
    path = str(tmp_path / "memory" / "index.lock")
    asked: list[str] = []

    def work() -> int:
        if len(asked) < 2:  # a commit comes in during each of the first two rounds
            with pytest.raises(locks.Busy):
                locks.in_rounds(path, lambda: 0, ask_holder=True)
            asked.append("asked")
        return len(asked)

    assert locks.in_rounds(path, work) == [1, 2, 2]
    assert not os.path.exists(path) and not os.path.exists(locks.request_path(path))
    with locks.held(path):
        with pytest.raises(locks.Busy):
            locks.in_rounds(path, lambda: 0)  # without ask_holder: refused, nothing asked
    assert not os.path.exists(locks.request_path(path))


# --- F4 edge: a large commit gets the quick analysis only -------------------------------------------------------

def test_a_commit_of_over_100_files_gets_the_quick_analysis_only_and_the_discover_hint(tmp_path, fast_home):
    home = fast_home
    repo = committed_project(tmp_path, home)
    cache = repo / ".claude" / "memory" / "meta.json"
    files_before = json.loads(cache.read_text())["structure"]["files"]
    sources = {f"src/feature_{number:03d}.ts": f"export function feature{number}(): number {{ return {number} }}\n"
               for number in range(120)}
    write_files(repo, sources)
    (repo / ".claude" / "knowledge" / "gotchas.md").write_text(GOTCHAS)
    done = commit(home, repo, "120 features", "src", ".claude/knowledge/gotchas.md")
    assert len(git(home, repo, "show", "--name-only", "--format=", "HEAD").stdout.split()) == 121
    assert "Significant changes detected. Run 'ccmemory discover' for full analysis" in done.stderr
    assert "ccmemory: Indexed 1 file(s)" in done.stderr
    # quick: the structure cache has the new file tree; no deep analysis (exports, patterns) and no discoveries
    saved = json.loads(cache.read_text())
    assert set(saved) == {"analyzed_at", "structure"}
    assert saved["structure"]["files"] == files_before + 120
    assert "deep" not in saved["structure"] and "exports" not in json.dumps(saved)
    assert query(home, "SELECT COUNT(*) AS n FROM memories WHERE source = 'discovery'")[0]["n"] == 0
    assert not (repo / ".claude" / "memory" / "discover.lock").exists()


# --- F4.1c: indexing that completes with warnings ---------------------------------------------------------------

def test_indexing_warnings_are_shown_and_logged_and_the_commit_goes_on(tmp_path, fast_home):
    home = fast_home
    repo = committed_project(tmp_path, home)
    write_files(repo / ".claude" / "knowledge", {"domain/empty.md": "", "domain/orders.md":
                                                 "# Orders\n### Refunds\nRefunds go back to the original card.\n"})
    done = commit(home, repo, "orders", ".claude/knowledge/domain")
    assert "ccmemory: warning: Empty file: domain/empty.md" in done.stderr
    assert "ccmemory: indexed with 1 warning(s); details in .claude/memory/errors.log" in done.stderr
    log = (repo / ".claude" / "memory" / "errors.log").read_text()
    assert "pre-commit: Empty file: domain/empty.md" in log
    assert "domain/orders.md#refunds" in entry_refs(home)
    assert git(home, repo, "status", "--porcelain").stdout.strip() == ""


# --- a section flood (red team, hole B): the commit is not held up ----------------------------------------------

def test_a_commit_of_a_file_with_more_entries_than_the_hook_takes_goes_on_and_ccmemory_index_takes_it(tmp_path,
                                                                                                     fast_home):
    """20,000 one-line sections held a commit 69 s in the hook. A file with more entries than the hook creates in one
    run is left for `ccmemory index` (read only that far), with a warning that says so; the commit goes on."""
    home = fast_home
    repo = committed_project(tmp_path, home)
    count = githook.HOOK_MAX_ENTRIES + 500
    write_files(repo / ".claude" / "knowledge", {
        "flood.md": "".join(f"### s{number}\nw{number} x\n" for number in range(count)),
        "domain/orders.md": "# Orders\n### Refunds\nRefunds go back to the original card.\n"})
    done = commit(home, repo, "flood", ".claude/knowledge")
    assert "ccmemory: warning: flood.md: not indexed this time: it has more than the " in done.stderr
    assert "Run `ccmemory index` to index it" in done.stderr and "The commit goes on." in done.stderr
    assert "pre-commit: flood.md: not indexed this time" in (repo / ".claude" / "memory" / "errors.log").read_text()
    refs = entry_refs(home)
    assert "domain/orders.md#refunds" in refs and not [ref for ref in refs if ref.startswith("flood.md")]

    index = ccmemory(home, repo, "index", "--json")
    assert index.returncode == 0, index.stderr
    assert json.loads(index.stdout)["entries_created"] == count
    assert len([ref for ref in entry_refs(home) if ref.startswith("flood.md")]) == count


def test_a_commit_of_many_new_entries_leaves_their_vectors_to_the_embedding_worker(tmp_path, fast_home):
    home = fast_home
    repo = committed_project(tmp_path, home)
    count = githook.HOOK_EMBED_ENTRIES + 50
    write_files(repo / ".claude" / "knowledge", {
        "services.md": "".join(f"### Service {number}\nService {number} keeps its cache warm.\n" for number in range(count))})
    done = commit(home, repo, "services", ".claude/knowledge/services.md")
    assert f"{count} entries created" in done.stderr and "warning" not in done.stderr
    assert len([ref for ref in entry_refs(home) if ref.startswith("services.md")]) == count  # found by keywords now
    waiting = "SELECT COUNT(*) AS n FROM memories WHERE source = 'knowledge' AND needs_embedding = 1"
    log = home / "logs" / embedding_worker.LOG_FILE
    deadline = time.monotonic() + WAIT_SECONDS
    while query(home, waiting)[0]["n"] or "Embedded" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, f"{query(home, waiting)[0]['n']} entries still wait for the worker's vectors"
        time.sleep(0.2)


# --- F5 edge: Ctrl+C during `ccmemory index` ---------------------------------------------------------------------

def test_ctrl_c_during_index_keeps_what_was_indexed_and_the_next_run_does_the_rest(tmp_path, fast_home):
    home = fast_home
    repo = tmp_path / "repo"
    make_repo(repo, bulk(BULK_FILES))
    run = Terminal(home, repo, "index")
    run.wait_for(some_files_done, "progress")
    run.process.send_signal(signal.SIGINT)
    code, output = run.finish()

    assert code == 130, output
    assert "Traceback" not in output and "KeyboardInterrupt" not in output
    kept = files_indexed(home)
    assert 0 < kept < BULK_FILES, output
    assert f"Interrupted: {kept} knowledge file(s) are indexed and kept" in output
    assert "run `ccmemory index` again to index the rest" in output
    assert len(entry_refs(home)) == kept  # each kept file whole (one section each), nothing half-stored
    assert not index_lock(repo).exists()  # released on the way out

    rest = ccmemory(home, repo, "index", "--json")
    assert rest.returncode == 0, rest.stderr
    report = json.loads(rest.stdout)
    assert report["files_unchanged"] == kept and report["files_indexed"] == BULK_FILES - kept
    assert report["entries_created"] == BULK_FILES - kept and report["entries_removed"] == 0
    refs = entry_refs(home)
    assert len(refs) == BULK_FILES == len(set(refs))
    pending = query(home, "SELECT COUNT(*) AS n FROM memories WHERE source = 'knowledge' AND needs_embedding = 1")
    assert pending[0]["n"] == 0


# --- a cloned repository cannot make ccmemory write outside it -----------------------------------------------------

def test_what_ccmemory_writes_in_a_project_never_goes_through_a_symlink(tmp_path, fast_home):
    """A repository could commit `.claude/memory/errors.log -> ~/.bashrc`: the log, the structure cache and a
    lock request are never written through such a link, and the commit still goes on."""
    from ccmemory import safe_files

    home = fast_home
    repo = committed_project(tmp_path, home)
    memory = repo / ".claude" / "memory"

    def planted(name: str) -> Path:
        victim = tmp_path / f"outside-{name}"
        victim.write_text("precious\n")
        (memory / name).unlink(missing_ok=True)
        (memory / name).symlink_to(victim)
        return victim

    victims = [planted("errors.log"), planted("meta.json")]
    write_files(repo, {"src/extra.ts": "export const answer = 42\n"})  # source changed: the structure cache
    write_files(repo / ".claude" / "knowledge", {"domain/empty.md": "", "domain/orders.md":  # a warning: the log
                                                 "# Orders\n### Refunds\nRefunds go back to the original card.\n"})
    done = commit(home, repo, "orders", ".claude/knowledge/domain", "src/extra.ts")
    assert "could not write the error log" in done.stderr and "symbolic link" in done.stderr
    assert "ccmemory: warning: Empty file: domain/empty.md" in done.stderr  # said in the terminal instead
    assert "domain/orders.md#refunds" in entry_refs(home)
    assert not (memory / "meta.json").is_symlink()  # the cache replaced the link, not what it points to
    assert json.loads((memory / "meta.json").read_text())["structure"]["files"] >= 3
    victims.append(planted("index.again.lock"))  # what a commit that finds the index busy writes
    with pytest.raises(safe_files.UnsafeFileError, match="symbolic link"):
        safe_files.open_text_for_writing(str(locks.request_path(str(index_lock(repo)))))
    assert [victim.read_text() for victim in victims] == ["precious\n"] * 3
