"""A disk cache of document vectors for the benchmarks, under ~/.cache (never in the repository).

Embedding thousands of memories takes minutes on a small machine; the
benchmarks re-run often. Vectors are keyed by the model id, a digest of the
vectors the encoder makes for a few probe texts (:func:`fingerprint`: a change
in how a text becomes a vector invalidates them; one in what is embedded, such
as windows, does not, since those are other texts), the text and the context
it is read after. Queries are never cached here, so search latency includes the query
embedding as in production.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path
from typing import Any, Sequence

CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ccmemory-bench"


#: Texts whose vectors stand for how the encoder turns text into vectors: short, long past one window, not ASCII.
PROBES = ("a short note", "Edited cache.py: an LRU of 512 entries " * 40, "Café déjà vu — 東京 2023-05-08")
#: A turn and the question it is read after.
PROBE_CONTEXT = ("Where did you go on holiday?", "Lisbon! We rode the trams every day.")


def fingerprint(embedder: Any) -> str:
    """A digest of the vectors ``embedder`` makes for :data:`PROBES` and :data:`PROBE_CONTEXT`, to 4 decimals.

    Any change in how a text becomes a vector changes it; a change in code that does not (a refactoring)
    keeps the cache.
    """
    import numpy

    made = embedder.embed([*PROBES, PROBE_CONTEXT[1]], [None] * len(PROBES) + [PROBE_CONTEXT[0]])
    rounded = numpy.round(numpy.frombuffer(b"".join(made), dtype=numpy.float32), 4)
    return hashlib.sha256(rounded.tobytes()).hexdigest()[:12]


class CachedEmbedder:
    """Wraps a real :class:`ccmemory.embeddings.Embedder`; ``embed`` reads and fills the cache."""

    def __init__(self, inner: Any, folder: Path = CACHE_DIR) -> None:
        self.inner = inner
        self._namespace = f"{inner.model_id}|{fingerprint(inner)}"
        folder.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(folder / "vectors.sqlite"))
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
        self.hits = self.misses = 0

    def __getattr__(self, name: str) -> Any:  # model_id, dims, embed_query, anything added later
        return getattr(self.inner, name)

    def _key(self, text: str, context: str | None = None, span: tuple[int, int] | None = None) -> str:
        read = text if context is None else f"{context}\0{text}"
        if span is not None:
            read += f"\0{span[0]}:{span[1]}"
        return hashlib.sha256(f"{self._namespace}\0{read}".encode()).hexdigest()

    def embed(self, texts: Sequence[str], contexts: Sequence[str | None] | None = None,
              spans: Sequence[tuple[int, int] | None] | None = None) -> list[bytes]:
        contexts = list(contexts) if contexts else [None] * len(texts)
        spans = list(spans) if spans else [None] * len(texts)
        keys = [self._key(text, context, span) for text, context, span in zip(texts, contexts, spans)]
        found = dict(self._db.execute(
            f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(keys))})", keys).fetchall()) \
            if keys else {}
        missing = [i for i, key in enumerate(keys) if key not in found]
        if missing:
            made = self.inner.embed([texts[i] for i in missing], [contexts[i] for i in missing],
                                    [spans[i] for i in missing])
            with self._db:
                for i, vector in zip(missing, made):
                    found[keys[i]] = vector
                    self._db.execute("INSERT OR REPLACE INTO vectors(key, vector) VALUES (?, ?)", (keys[i], vector))
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        return [found[key] for key in keys]
