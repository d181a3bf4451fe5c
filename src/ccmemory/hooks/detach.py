"""Capture off the critical path: the hook answers Claude Code at once and stores the observation after.

Once the payload is read, the capture hook forks (POSIX): the parent exits 0
at once, so the tool call waits only for a bare interpreter start, and the
child, in a session of its own with stdin/stdout/stderr on /dev/null, writes
the observation. A new session keeps it alive when Claude Code ends the hook's
process group (``async`` hooks under ``-p`` are killed at teardown).

Nothing is lost and order is kept:

- the time the payload arrived is recorded before forking and stored as the
  observation's ``created_at``, so observations sort in the order their hooks
  started even when two children write in the other order (Stop and SessionEnd
  later replace it with the transcript's time of the call, see below);
- the parent exits only once the child is in a session of its own (a pipe
  tells it), so ending the hook's process group cannot take the child with it;
- the parent leaves a marker ``<data dir>/inflight/<session>.<child pid>``
  that the child removes when done (a marker whose process is gone is
  stale and ignored); Stop and SessionEnd wait (bounded) for the markers of their session
  before summarising or promoting, so the last calls are part of both;
- Claude Code may start a call's hook late, after the next call's or even after the turn's Stop (an
  ``async`` hook, a subagent's call): Stop also waits (bounded) for the calls the transcript shows
  answered in the turn and capture would store (:func:`wait_for_calls`), and the session's captures
  then take their transcript times (:func:`ccmemory.observations.retime`).
- a child that finds the database unwritable (locked past its retries, being upgraded) keeps the
  observation in ``<data dir>/spill/`` for the next capture to store (:mod:`ccmemory.spill`).
- a capture stored after its session's SessionEnd (its hook started even later, or it waited in the
  spill folder) takes the transcript time SessionEnd saw for it, and the session's failures are settled
  and its memories promoted again (:func:`ccmemory.lifecycle.after_late_capture`), as SessionEnd would
  have done with it.

Where ``fork`` does not exist (Windows) capture simply runs in the hook process.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..db import Database

INFLIGHT_DIR = "inflight"
#: What Stop and SessionEnd wait for the session's captures at most (SessionEnd's budget is 1.5 s in all).
WAIT_SECONDS = {"stop": 5.0, "session_end": 0.8}
_POLL_SECONDS = 0.02


def _folder() -> str:
    from .. import paths

    return os.path.join(paths.data_dir(), INFLIGHT_DIR)


def _marker_name(session_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in session_id)[:120]


def to_background(session_id: str) -> bool:
    """Fork; True in the parent (which should exit now), False in the child or where fork is missing."""
    if not hasattr(os, "fork") or not hasattr(os, "setsid"):
        return False
    folder = _folder()
    from .. import paths

    paths.ensure_private_dir(folder)
    ready, told = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(ready)
        os.close(told)
        return False
    if pid:
        # Written by the parent before it exits, so whoever waits for this hook finds it at once.
        with open(os.path.join(folder, f"{_marker_name(session_id)}.{pid}"), "w"):
            pass
        # Exit only once the child has left this process group: Claude Code ends the group of an
        # async hook when `claude -p` exits, and a child still in it would die with its observation.
        os.close(told)
        os.read(ready, 1)
        os.close(ready)
        return True
    os.close(ready)
    os.setsid()
    os.write(told, b"1")
    os.close(told)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    return False


def finished(session_id: str) -> None:
    """The capture's work is done: remove its marker, if it has one."""
    from .. import paths

    paths.remove_quietly(os.path.join(_folder(), f"{_marker_name(session_id)}.{os.getpid()}"))


def wait_for_captures(session_id: str, hook: str) -> int:
    """Wait until no capture of ``session_id`` is in flight (bounded); returns how many were still running."""
    from .. import paths
    from ..locks import alive

    folder = _folder()
    prefix = _marker_name(session_id) + "."
    deadline = time.monotonic() + WAIT_SECONDS.get(hook, 0.0)
    while True:
        running = []
        try:
            names = [name for name in os.listdir(folder) if name.startswith(prefix)]
        except OSError:
            return 0
        for name in names:
            pid = int(name[len(prefix):]) if name[len(prefix):].isdigit() else 0
            if pid and alive(pid):
                running.append(name)
            else:
                paths.remove_quietly(os.path.join(folder, name))
        if not running or time.monotonic() >= deadline:
            return len(running)
        time.sleep(_POLL_SECONDS)


def wait_for_calls(db: Database, session_id: str, expected: set[str], seconds: float) -> set[str]:
    """Wait (bounded by ``seconds``) until capture has stored each call of ``expected`` (``tool_use_id``s the
    transcript shows answered): Claude Code may start a call's hook only after the turn's Stop, so no marker
    says it is coming. Returns the calls still missing."""
    from ..vocabulary import CAPTURE_SOURCE

    deadline = time.monotonic() + seconds
    missing = set(expected)
    while missing:
        stored = db.rows("SELECT dedupe_key FROM memories WHERE session_id = ? AND source = ? "
                         "AND dedupe_key IS NOT NULL", (session_id, CAPTURE_SOURCE))
        missing -= {row["dedupe_key"] for row in stored}
        if not missing or time.monotonic() >= deadline:
            break
        time.sleep(_POLL_SECONDS * 5)
    return missing
