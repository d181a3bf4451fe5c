"""ccmemory.locks: the one lock file and the one liveness check every part of ccmemory uses.

The liveness check is shown on real processes (a running child, a zombie, a reaped one); the lock
on real files, with holders that are this process, a live child, or a process that is gone.
(The lock's stale take-over and rounds are shown through the knowledge index in
tests/test_knowledge_githook.py, the concurrent schema upgrade in tests/test_upgrade.py.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ccmemory import db as database, locks, migrations
from ccmemory.errors import StorageError

linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="zombies are read from /proc")
posix_only = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def _state(pid: int) -> bytes:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        return handle.read().rsplit(b")", 1)[1].split()[0]


def _wait_until(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture
def sleeper():
    """A live process that is not this one."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield child.pid
    child.kill()
    child.wait()


def test_this_process_and_a_running_child_are_alive(sleeper: int) -> None:
    assert locks.alive(os.getpid())
    assert locks.alive(sleeper)


@pytest.mark.parametrize("pid", [0, -1, None, "123", 1.5, True])
def test_what_is_not_a_pid_is_not_alive(pid: object) -> None:
    assert not locks.alive(pid)


@posix_only
@linux_only
def test_a_zombie_is_not_alive_and_neither_is_a_reaped_child() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    try:
        assert _wait_until(lambda: _state(pid) == b"Z"), "the child did not become a zombie"
        os.kill(pid, 0)  # the pid still exists: signal 0 alone would call it alive
        assert not locks.alive(pid)
    finally:
        os.waitpid(pid, 0)
    assert not locks.alive(pid)


def test_a_free_lock_is_held_for_the_block_with_its_status_then_removed(tmp_path: Path) -> None:
    path = str(tmp_path / "folder" / "work.lock")
    with locks.held(path, command="test") as held:
        holder = locks.read(held) or {}
        assert holder["pid"] == os.getpid() and holder["command"] == "test"
        locks.update(path, status="halfway")
        assert (locks.read(path) or {})["status"] == "halfway"
    assert locks.read(path) is None and os.listdir(tmp_path / "folder") == []


def _write_lock(path: Path, **holder: object) -> None:
    path.write_text(json.dumps({"started": "earlier", "started_epoch": time.time(), **holder}))


def test_a_live_holder_makes_it_busy_at_once_without_a_wait(tmp_path: Path, sleeper: int) -> None:
    path = tmp_path / "work.lock"
    _write_lock(path, pid=sleeper, command="other")
    with pytest.raises(locks.Busy) as busy:
        with locks.held(str(path)):
            pytest.fail("held a lock a live process holds")
    assert busy.value.holder["command"] == "other" and str(sleeper) in str(busy.value)
    assert path.exists()


def test_a_waiter_gets_the_lock_once_its_live_holder_lets_go(tmp_path: Path, sleeper: int) -> None:
    path = tmp_path / "work.lock"
    _write_lock(path, pid=sleeper)
    removed = threading.Event()

    def let_go() -> None:
        time.sleep(0.2)
        path.unlink()
        removed.set()

    threading.Thread(target=let_go).start()
    with locks.held(str(path), wait=30):
        assert removed.is_set()
        assert (locks.read(str(path)) or {})["pid"] == os.getpid()


@posix_only
def test_the_lock_of_a_process_that_is_gone_is_taken_over(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    path = tmp_path / "work.lock"
    _write_lock(path, pid=child.pid)
    with locks.held(str(path), command="mine"):
        assert (locks.read(str(path)) or {})["command"] == "mine"


def test_a_bare_pid_written_by_an_older_launcher_names_its_holder(tmp_path: Path, sleeper: int) -> None:
    path = tmp_path / "venv.lock"
    path.write_text(str(sleeper))
    holder = locks.read(str(path)) or {}
    assert holder["pid"] == sleeper and not locks.is_stale(holder, 60)
    os.utime(path, (time.time() - 120, time.time() - 120))
    assert locks.is_stale(locks.read(str(path)) or {}, 60)


def test_an_upgrade_waits_for_a_live_holder_and_then_says_what_to_do(tmp_path: Path, sleeper: int,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "store.db"
    _write_lock(Path(str(path) + ".upgrade.lock"), pid=sleeper)
    monkeypatch.setattr(migrations, "UPGRADE_WAIT_SECONDS", 0.2)
    with pytest.raises(StorageError, match="Another process has been upgrading .* try again once it has finished"):
        database.connect(str(path))
    Path(str(path) + ".upgrade.lock").unlink()
    store = database.connect(str(path))
    try:
        assert migrations.current_version(store) == migrations.target_version()
    finally:
        store.close()
    assert not Path(str(path) + ".upgrade.lock").exists()


def test_migrations_register_in_order_and_refuse_a_step_out_of_place() -> None:
    assert [step.__name__[:5] for step in migrations.MIGRATIONS] == [
        f"_m{number:03d}" for number in range(1, len(migrations.MIGRATIONS) + 1)]
    misplaced = f"_m{len(migrations.MIGRATIONS) + 2:03d}_too_far"

    def step(db: object) -> None:
        pass

    step.__name__ = misplaced
    with pytest.raises(RuntimeError, match=misplaced):
        migrations.migration(step)
    assert migrations.MIGRATIONS[-1].__name__ != misplaced
