"""One launch of the viewer: its token, its database connection and its embedding worker."""

from __future__ import annotations

import hmac
import secrets
import threading
from typing import Any, Callable, TypeVar

from .. import db as database
from ..background import Background

T = TypeVar("T")

#: How long the first search waits for the model: a person at the page can wait longer than Claude.
MODEL_WAIT_SECONDS = 10.0


class Viewer:
    """What every request of one ``ccmemory ui`` launch shares.

    One connection serves every request under a lock: the page is one user's,
    requests are short, and a single connection keeps transactions simple. The
    embedding worker (the MCP server's) loads the model and embeds what hooks
    captured on its own connection, so semantic search finds new memories.
    """

    def __init__(self, *, token: str | None = None, semantic: bool = True) -> None:
        self.token = token or secrets.token_urlsafe(32)
        self.db = database.connect(vectors=True)
        self.db_path = self.db.path
        self.semantic = semantic
        self.background = Background()
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start loading the model and embedding pending items in the background."""
        if self.semantic:
            self.background.start(lambda: database.connect(vectors=True))

    def stop(self) -> None:
        self.background.stop()
        with self._lock:
            self.db.close()

    def accepts(self, token: str | None) -> bool:
        """Constant-time comparison with this launch's token."""
        if not token:
            return False
        return hmac.compare_digest(token.encode(), self.token.encode())

    def run(self, work: Callable[[database.Database], T]) -> T:
        """Call ``work(db)`` holding the connection's lock."""
        with self._lock:
            return work(self.db)

    def embedder(self, db: database.Database) -> tuple[Any, str | None]:
        """The loaded model for the query, or None and why not (memories not embedded yet match by keywords)."""
        if not self.semantic:
            return None, "semantic search is off in this viewer; these are keyword matches only"
        if not db.vectors_loaded:
            return None, None  # search itself warns that vectors are unavailable
        # Called by a search holding the connection's lock; other requests may use the
        # connection while this one waits for the model.
        self._lock.release()
        try:
            return self.background.wait_for_model(MODEL_WAIT_SECONDS)
        finally:
            self._lock.acquire()
