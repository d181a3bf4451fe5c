"""What a long-lived process does off the request path: load the model, embed what hooks captured.

Loading fastembed takes about a second, more than the MCP server may spend before
answering ``tools/list``, and hooks store memories without vectors. So the
server (and the viewer) runs one background thread that loads the embedder and then keeps
embedding pending memories and document chunks, on its own connection, while
the process lives. The server keeps it in ``ToolContext.state`` under :data:`STATE_KEY`.

Only the process holding the data dir's embedder lock embeds (:mod:`ccmemory.embedding_worker`: a
detached worker or another server may hold it; this loop takes it once it is free), so no item is
embedded twice. The holder looks every :data:`POLL_SECONDS` whether any process committed since
(``PRAGMA data_version``, which costs nothing), and embeds at once when a tool of this process
wakes it: a hook's capture, an import or a pulled team memory is found by meaning within seconds.

When there is nothing to embed, the same loop runs a consolidation pass when one is due
(:func:`ccmemory.consolidation.run_if_due`: bounded, one process at a time, looked at every
:data:`CONSOLIDATION_CHECK_SECONDS`), so no hook ever waits for one.

A search never waits for that backlog: it embeds only its query, with a model
instance of its own (the loop embeds with a second instance on one thread, so
a batch of long observations holds neither the query's model lock nor both
cores), and memories not embedded yet are still found by their keywords.
A search arriving while the model is still loading waits at most
:data:`MODEL_WAIT_SECONDS`, then runs on keywords alone and says so. A model
that failed to load is not retried on every search; each keyword-only answer
carries the reason.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Protocol

from . import consolidation, embeddings, embedding_worker

STATE_KEY = "background"
MODEL_WAIT_SECONDS = 1.5
#: How often an idle loop looks whether another process committed (and whether it may take the embedder lock).
POLL_SECONDS = 1.0
ITEMS_PER_ROUND = 16
CONSOLIDATION_CHECK_SECONDS = 600.0
BATCH_THREADS = 1
ROLE = embedding_worker.SERVER

log = logging.getLogger(__name__)


class Background:
    """The embedder, loaded once, and the loop that embeds pending items.

    ``unavailable`` names why no model can load in this process (the bootstrap
    server runs before the runtime that has one is installed): searches then
    say so and use keywords, without trying.
    """

    def __init__(self, unavailable: str | None = None) -> None:
        self._loaded = threading.Event()
        self._load_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.embedder: Any = None
        self.error: str | None = unavailable
        if unavailable:
            self._loaded.set()

    def load_model(self) -> Any:
        """Load the configured embedder for queries (only the first call works; others wait); None on failure."""
        with self._load_lock:
            if not self._loaded.is_set():
                try:
                    self.embedder = embeddings.get_embedder()
                except Exception as exc:  # a broken model must not take the server down
                    self.error = str(exc)
                    log.warning("Semantic search is unavailable: %s", exc)
                finally:
                    self._loaded.set()
        return self.embedder

    def wait_for_model(self, timeout: float = MODEL_WAIT_SECONDS) -> tuple[Any, str | None]:
        """The query embedder, or None and the reason search falls back to keywords."""
        if not self._loaded.wait(timeout):
            return None, ("the embedding model is still loading, so these are keyword matches only; "
                          "search again in a few seconds for semantic matches")
        if self.embedder is None:
            return None, f"semantic search is unavailable ({self.error}); these are keyword matches only"
        return self.embedder, None

    def start(self, open_db: Callable[[], Any], before: Callable[[], None] = lambda: None) -> None:
        """Start the thread: ``before()``, load the model, then embed pending items until :meth:`stop`."""
        if self._thread is None and not self._stop.is_set():
            self._thread = threading.Thread(target=self._run, args=(open_db, before), name="ccmemory-background",
                                            daemon=True)
            self._thread.start()

    def wake(self) -> None:
        """Embed now rather than at the next idle tick (after a write that added text)."""
        self._wake.set()

    def stop(self, timeout: float = 0.5) -> None:
        """Ask the loop to end and wait a little for it; an unfinished batch is simply not committed."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self, open_db: Callable[[], Any], before: Callable[[], None]) -> None:
        try:
            before()
        except Exception:
            log.exception("Server start-up work failed; tools will retry opening the database")
        if self._stop.is_set() or self.load_model() is None:
            return
        try:
            batch_embedder = embeddings.Embedder(self.embedder.spec, threads=BATCH_THREADS)
            db = open_db()
        except Exception:
            log.exception("Background embedding could not start; new items are found by keywords only")
            return
        failed = embeddings.failures_logged_once(log)
        checked = 0.0
        lease = embedding_worker.Lease(ROLE)
        seen = None  # the database's data_version at the last round; None: look now
        try:
            while not self._stop.is_set():
                woken = self._wake.is_set()
                self._wake.clear()
                done = 0
                if lease.held():
                    version = db.scalar("PRAGMA data_version")
                    if woken or version != seen:
                        try:
                            done = embeddings.embed_pending(db, batch_embedder, limit=ITEMS_PER_ROUND,
                                                            on_error=failed)
                        except Exception:
                            log.exception("Background embedding failed; it is tried again after the next write")
                        seen = None if done else version  # a full round may have left more
                if done == 0 and time.monotonic() - checked >= CONSOLIDATION_CHECK_SECONDS:
                    checked = time.monotonic()
                    if self._consolidate(db):
                        seen = None  # its rewritten texts: a commit of this connection leaves data_version alone
                if done == 0:
                    self._wake.wait(POLL_SECONDS)
        finally:
            lease.release()
            db.close()

    @staticmethod
    def _consolidate(db: Any) -> bool:
        """A consolidation pass when one is due; whether one ran. A failure is logged and tried again at the next check."""
        try:
            report = consolidation.run_if_due(db)
        except Exception:
            log.exception("Background consolidation failed; `ccmemory consolidate` runs one by hand")
            return False
        if report is None:
            return False
        log.info("Consolidated: merged %s, folded %s, decayed %s in %.1f s", report.merged_rows,
                 report.folded_rows, report.decayed, report.seconds)
        return True


class _WithState(Protocol):
    """What :func:`of` reads the worker from: an MCP ``ToolContext``."""

    state: dict[str, Any] | None


def of(context: _WithState) -> Background:
    """The server's background worker; a context without one (no server) gets a model-only worker."""
    state = context.state if context.state is not None else {}
    worker = state.get(STATE_KEY)
    if worker is None:
        worker = state[STATE_KEY] = Background()
        threading.Thread(target=worker.load_model, name="ccmemory-model", daemon=True).start()
    return worker
