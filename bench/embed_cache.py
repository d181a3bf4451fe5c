"""A disk cache of document vectors for the benchmarks, under ~/.cache (never in the repository).

Embedding thousands of memories takes minutes on a small machine; the
benchmarks re-run often. Vectors are keyed by the model id, a digest of
the encoder's code and the limit it reads texts to (a change in how a text
becomes a vector invalidates them; one in what is embedded, such as windows,
does not, since those are other texts) and the text. Queries are never cached here, so search latency includes the query
embedding as in production.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path
from typing import Any, Sequence

CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ccmemory-bench"


class CachedEmbedder:
    """Wraps a real :class:`ccmemory.embeddings.Embedder`; ``embed`` reads and fills the cache."""

    def __init__(self, inner: Any, folder: Path = CACHE_DIR) -> None:
        import inspect

        from ccmemory import embeddings, tokens

        self.inner = inner
        encoder = f"{inspect.getsource(embeddings._OnnxEncoder)}|{inspect.getsource(embeddings.length_batches)}|" \
                  f"{tokens.MODEL_MAX_TOKENS}"
        code = hashlib.sha256(encoder.encode()).hexdigest()[:12]
        self._namespace = f"{inner.model_id}|{code}"
        folder.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(folder / "vectors.sqlite"))
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
        self.hits = self.misses = 0

    def __getattr__(self, name: str) -> Any:  # model_id, dims, embed_query, anything added later
        return getattr(self.inner, name)

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self._namespace}\0{text}".encode()).hexdigest()

    def embed(self, texts: Sequence[str]) -> list[bytes]:
        keys = [self._key(text) for text in texts]
        found = dict(self._db.execute(
            f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(keys))})", keys).fetchall()) \
            if keys else {}
        missing = [i for i, key in enumerate(keys) if key not in found]
        if missing:
            made = self.inner.embed([texts[i] for i in missing])
            with self._db:
                for i, vector in zip(missing, made):
                    found[keys[i]] = vector
                    self._db.execute("INSERT OR REPLACE INTO vectors(key, vector) VALUES (?, ?)", (keys[i], vector))
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        return [found[key] for key in keys]
