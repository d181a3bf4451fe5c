"""Who embeds the backlog of a data dir, one process at a time, and how anyone starts that without waiting.

Capture, imports, backfills and team sync store memories without vectors (a model takes a
second to load and embeds tens of items a second). Whoever embeds them holds the *embedder
lock*, ``<data dir>/embedder.lock``:

- a long-lived process (the MCP server, the viewer) holds it for as long as its background loop
  runs (:mod:`ccmemory.background`) and embeds what any process writes within about a second;
- otherwise a detached worker, ``python -m ccmemory.embedding_worker``, embeds until nothing is
  pending (for at most :data:`MAX_SECONDS`) and exits. :func:`start` runs one after ``ccmemory
  import``, ``import-from``, ``backfill`` and a CLI search that found items pending; the Stop and
  SessionEnd hooks ask :func:`wanted` and start it through the plugin launcher (``--embed``),
  since they run without the model's dependencies.

So two processes never embed the same item, and nothing waits: a search embeds only its query and
finds what is still pending by keywords. A worker started while another holds the lock leaves a
request for one more round and exits (:func:`ccmemory.locks.in_rounds`): what was stored after the
holder last looked is embedded too. The lock is taken over only when its process is gone: a server
holds it for hours.

The commands whose user waits for the vectors (``ccmemory embed``, ``backfill --embed``, ``index``)
embed in the foreground under the same lock (:func:`embed_in_foreground`); when another process holds
it they wait while it embeds, and take over once it lets go.

A worker whose model cannot load logs why (``<data dir>/logs/embedding.log``), leaves every item
pending (found by keywords) and records the reason in ``embedder.failed``; no worker starts again
for :data:`RETRY_SECONDS` after, so a broken model does not cost a process per search or per turn.
``ccmemory embed`` tries the model whatever happens here.

Standard library only at import: the hooks ask :func:`wanted`.
"""

from __future__ import annotations

import functools
import os
import sys
import time

from . import isolation, locks, paths, safe_files
from .errors import CCMemoryError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from contextlib import ExitStack
    from typing import Any, Callable

    from .db import Database
    from .embeddings import Embedder

LOCK_FILE = "embedder.lock"
FAILED_FILE = "embedder.failed"
LOG_FILE = "embedding.log"
#: A worker stops after this long even with items left (a model change re-embeds the whole store); the next start
#: goes on.
MAX_SECONDS = 3600.0
#: Items per round of the worker: it looks at its time limit between rounds.
ROUND_ITEMS = 256
#: After a worker could not load the model, none starts again for this long (``ccmemory embed`` still runs).
RETRY_SECONDS = 300.0
#: Model threads of a worker: it runs beside the user's searches and sessions, so it leaves them a core.
THREADS = 1
#: A command that waits while another process embeds gives up when that process embedded nothing for this long.
STALL_SECONDS = 60.0
#: How often a waiting command looks how many items are left.
WAIT_POLL_SECONDS = 0.25
#: The lock is never taken over for its age, only when its process is gone (a server holds it while it runs).
_HELD_WHILE_ALIVE = float("inf")
#: Who holds the lock (its ``role``). A server's loop (:mod:`ccmemory.background`) sees every commit by itself;
#: a worker and a foreground command embed in rounds, and are asked for one more.
SERVER = "server"
WORKER = "worker"
FOREGROUND = "embed"


class Stalled(CCMemoryError):
    """Another process holds the embedder lock and embedded none of the items left for :data:`STALL_SECONDS`."""


#: Whether a memory or a document chunk waits for its vector (the partial indexes ``*_unembedded`` answer it).
_WAITING_SQL = ("SELECT EXISTS(SELECT 1 FROM memories WHERE needs_embedding = 1 AND is_deleted = 0) "
                "OR EXISTS(SELECT 1 FROM chunks WHERE needs_embedding = 1)")


def waiting(db: Database) -> bool:
    """Whether anything waits for a vector (of whatever model embedded last: a model change is the worker's to see)."""
    return bool(db.scalar(_WAITING_SQL))


def lock_path() -> str:
    return os.path.join(paths.data_dir(), LOCK_FILE)


def _failed_path() -> str:
    return os.path.join(paths.data_dir(), FAILED_FILE)


def holder() -> dict[str, Any] | None:
    """What the live process holding the embedder lock wrote about itself (its ``role``), or None."""
    found = locks.read(lock_path())
    return found if found is not None and not locks.is_stale(found, _HELD_WHILE_ALIVE) else None


def failed_recently() -> str | None:
    """Why the last worker could not load the model, when that was less than :data:`RETRY_SECONDS` ago."""
    try:
        if time.time() - os.stat(_failed_path()).st_mtime >= RETRY_SECONDS:
            return None
        with open(_failed_path(), encoding="utf-8", errors="replace") as handle:
            return handle.read(2000).strip() or "unknown reason"
    except OSError:
        return None


def wanted() -> bool:
    """Whether a worker should start now: no live process embeds, and the model did not just fail to load."""
    return not failed_recently() and not _embedding_elsewhere()


def _embedding_elsewhere() -> bool:
    """Whether a live process holds the embedder lock; a worker that does is asked for one more round.

    The request is written before the lock is looked at again, the order :func:`ccmemory.locks.in_rounds`
    relies on: what the caller stored is embedded even when that worker already listed its work.
    """
    found = holder()
    if found is None:
        return False
    if found.get("role") == SERVER:
        return True  # its loop sees every commit by itself
    locks.ask_for_another_round(lock_path())
    return holder() is not None


def start(python: str | None = None) -> bool:
    """Start a detached worker on ``python`` (default: this interpreter) unless one is not :func:`wanted`; never waits.

    Call it after storing memories without vectors. True when the backlog is being embedded (by the
    worker started here or a process already at it); False when the model failed to load a moment
    ago or no process could start (the caller may say that ``ccmemory embed`` embeds it).
    """
    if failed_recently():
        return False
    if _embedding_elsewhere():
        return True
    import subprocess

    folder = paths.ensure_private_dir(paths.data_dir())
    options: dict[str, Any] = {"start_new_session": True}  # outlives the caller and its terminal's signals
    if sys.platform == "win32":
        options = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.DETACHED_PROCESS}
    try:
        subprocess.Popen(isolation.python_command(python or sys.executable, __name__), cwd=folder,
                         env=isolation.child_env(python_path=[isolation.package_parent()]), stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True, **options)
    except OSError:
        return False
    return True


class Lease:
    """The embedder lock, held by a long-lived process for as long as its loop runs (:mod:`ccmemory.background`).

    :meth:`held` takes it when it is free (cheaply: a look at the file first) and says whether this
    process holds it; a process that does not leaves the embedding to the one that does.
    """

    def __init__(self, role: str) -> None:
        self.role = role
        self._stack: ExitStack | None = None

    def held(self) -> bool:
        if self._stack is None and holder() is None:
            from contextlib import ExitStack

            stack = ExitStack()
            try:
                stack.enter_context(locks.held(lock_path(), stale_after=_HELD_WHILE_ALIVE, role=self.role))
                self._stack = stack
            except locks.Busy:
                pass
        return self._stack is not None

    def release(self) -> None:
        if self._stack is not None:
            self._stack.close()
            self._stack = None


def embed_in_foreground(db: Database, embedder: Embedder, *, wait: bool = True, batch_size: int | None = None,
                        progress: Callable[[int], None] | None = None,
                        on_error: Callable[[str, dict[str, Any], Exception], None] | None = None,
                        on_wait: Callable[[dict[str, Any]], None] | None = None) -> int:
    """Embed every pending item before returning, under the embedder lock; how many were embedded.

    For the commands whose user waits for the vectors (``ccmemory embed``, ``backfill --embed``,
    ``index``), so they neither embed an item a server or a worker embeds at the same time nor fail
    because one runs. When another live process holds the lock, a worker is asked for one more round
    (a server's loop sees the items by itself), ``on_wait(holder)`` is called once, and this waits
    while that process embeds, passing the drop of the pending count to ``progress``; once the lock
    is free it embeds what is left itself. Raises :class:`Stalled` when the other process embedded
    nothing for :data:`STALL_SECONDS` (it runs another model, or its model fails on what is left).

    ``wait=False`` (the git hook, which must not hold up a commit) leaves the items to the holder
    and returns 0 at once. ``progress`` and ``on_error`` are those of :func:`ccmemory.embeddings.embed_pending`.
    """
    from . import embeddings

    def work() -> int:
        return embeddings.embed_pending(db, embedder, batch_size=batch_size or embeddings.BATCH_SIZE,
                                        progress=progress, on_error=on_error)

    done = 0
    told = False
    while True:
        try:
            return done + sum(locks.in_rounds(lock_path(), work, stale_after=_HELD_WHILE_ALIVE, role=FOREGROUND))
        except locks.Busy as busy:
            _embedding_elsewhere()  # a worker holding it is asked for one more round before the user is told
            if not wait:
                return 0
            if on_wait is not None and not told:
                on_wait(busy.holder)
                told = True
            done += _while_held(db, embedder.model_id, busy.holder, progress)
            if not embeddings.pending_count(db, embedder.model_id):
                return done


def _while_held(db: Database, model_id: str, holding: dict[str, Any],
                progress: Callable[[int], None] | None) -> int:
    """Wait while another live process holds the lock and items are left; how many it embedded meanwhile."""
    from . import embeddings

    left = first = embeddings.pending_count(db, model_id)
    moved = time.monotonic()
    while left and holder() is not None:
        time.sleep(WAIT_POLL_SECONDS)
        now = embeddings.pending_count(db, model_id)
        if now < left:
            moved = time.monotonic()
            if progress is not None:
                progress(left - now)
        elif time.monotonic() - moved >= STALL_SECONDS:
            raise Stalled(
                f"{now} item(s) are still not embedded with {model_id}: process {holding.get('pid')} "
                f"({holding.get('role') or 'unknown'}) holds the embedder lock ({lock_path()}) and embedded none of "
                f"them in {STALL_SECONDS:.0f} s. It may run another model (restart it after changing `embedding`) or "
                "fail on these texts (see logs/embedding.log under the data directory); they are found by keywords "
                "meanwhile. Run `ccmemory embed` again once it has ended.")
        left = now
    return max(first - left, 0)


@functools.cache
def _embedder() -> Embedder:
    """The configured model, loaded once per worker: a round asked for after the first reuses it."""
    from . import embeddings

    return embeddings.Embedder(embeddings.configured_spec(), threads=THREADS)


def _embed_backlog() -> int:
    """Embed pending memories and chunks with the configured model until none is left or time is up; how many."""
    import logging

    from . import db as database, embeddings

    log = logging.getLogger(__name__)
    embedder = _embedder()
    try:
        os.remove(_failed_path())
    except OSError:
        pass
    failed = embeddings.failures_logged_once(log)
    started = time.monotonic()
    total = 0
    db = database.connect(vectors=True)
    try:
        while time.monotonic() - started < MAX_SECONDS:
            done = embeddings.embed_pending(db, embedder, limit=ROUND_ITEMS, on_error=failed)
            total += done
            if done == 0:
                break
    finally:
        db.close()
    log.info("Embedded %s item(s) with %s in %.1f s", total, embedder.model_id, time.monotonic() - started)
    return total


def _log_to_file() -> None:
    import logging
    from logging.handlers import RotatingFileHandler

    folder = paths.ensure_private_dir(os.path.join(paths.ensure_private_dir(paths.data_dir()), "logs"))
    path = os.path.join(folder, LOG_FILE)
    handler = RotatingFileHandler(path, maxBytes=1_000_000, backupCount=1, encoding="utf-8")
    paths.make_private_file(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s [%(process)d] %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler])


def main() -> int:
    """The detached worker: embed the backlog under the embedder lock; 0 when done or another process embeds."""
    import logging

    from .embeddings import ModelError

    _log_to_file()
    log = logging.getLogger(__name__)
    try:
        locks.in_rounds(lock_path(), _embed_backlog, ask_holder=True, stale_after=_HELD_WHILE_ALIVE, role=WORKER)
    except locks.Busy as busy:
        log.info("Process %s embeds already (%s); asked it for one more round", busy.holder.get("pid"),
                 busy.holder.get("role"))
    except ModelError as exc:
        with safe_files.open_text_for_writing(_failed_path()) as handle:
            handle.write(str(exc))
        log.error("Nothing embedded, the model did not load (%s); the items stay pending and are found by keywords. "
                  "A worker tries again in %d minutes; `ccmemory embed` runs one now", str(exc).rstrip("."),
                  RETRY_SECONDS // 60)
        return 1
    except Exception:
        log.exception("Embedding stopped; the items left stay pending and are found by keywords")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
