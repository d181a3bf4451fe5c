"""Hybrid search: FTS5 keywords and sqlite-vec vectors fused by reciprocal rank.

Keyword search finds exact identifiers that embeddings blur; vector search
finds paraphrases that share no word with the query. Hybrid mode fuses the two
rankings with reciprocal rank fusion (k = 60), so an item near the top of either
list surfaces, and scales the fused score to 0..1 (1 = first in both lists).
Salience nudges the order a little. If sqlite-vec or the model is unavailable,
search keeps working on keywords alone and says so in ``warnings``.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from . import knowledge, memories, sessions, vectors
from .db import Database
from .errors import ValidationError
from .memories import Memory
from .migrations import SECTORS

MODES = ("hybrid", "semantic", "keyword")
DEFAULT_LIMIT = 5
MAX_LIMIT = 100
#: Longer queries are refused: a search costs work per distinct word, and a query is a question, not a document.
MAX_QUERY_CHARS = 2_000
RRF_K = 60
#: Cosine similarity under which a vector neighbour is noise, not a match (MiniLM puts unrelated texts near 0-0.1).
MIN_SIMILARITY = 0.15
COMMON_WORD_SHARE = 0.03
_COMMON_WORD_MIN_ROWS = 1000
_KEYWORD_CANDIDATES = 50
#: Curated knowledge (sections of the project's markdown, see ccmemory.knowledge) outranks a raw
#: observation that answers as well: its score is multiplied by this, capped at 1.
KNOWLEDGE_BOOST = 1.25
_STOPWORDS = frozenset(
    "a an and are as at be by do does did for from how i in is it its of on or so that the this to was we were "
    "what when where which who why with you your".split()
)


@dataclass
class SearchHit:
    """One memory found, with what the index view shows about it."""

    memory: Memory
    score: float
    superseded_by: str | None = None
    session: dict[str, Any] | None = None
    related_count: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"score": round(self.score, 4), "superseded_by": self.superseded_by, "session": self.session,
                "related_count": self.related_count, "memory": self.memory.to_dict()}


@dataclass
class SearchResult:
    """Hits plus how the search ran: the mode actually used and any degradation warnings."""

    hits: list[Any]
    mode_used: str
    warnings: list[str] = field(default_factory=list)


def validate_query(query: Any, limit: Any, mode: str) -> str:
    """Common argument checks of memory and document search."""
    if not isinstance(query, str) or not query.strip():
        raise ValidationError("Query cannot be empty")
    if len(query) > MAX_QUERY_CHARS:
        raise ValidationError(f"The query is {len(query):,} characters; at most {MAX_QUERY_CHARS:,} are searched. "
                              "Ask about one thing at a time, in a sentence or a few keywords.")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValidationError(f"Limit must be a whole number from 1 to {MAX_LIMIT}, got {limit!r}")
    if mode not in MODES:
        raise ValidationError(f"Unknown search mode {mode!r}; use one of: {', '.join(MODES)}")
    return query.strip()


def query_terms(query: str) -> list[str]:
    """Distinct lower-case words of a query; common English words are dropped unless nothing else is left."""
    words = re.findall(r"\w+", query.lower())
    kept = [w for w in words if w not in _STOPWORDS] or words
    return list(dict.fromkeys(kept))


def fts_query(query: str, db: Database | None = None, vocabulary: str | None = None, rows: int = 0) -> str | None:
    """A safe FTS5 expression: each word quoted (so `parse_config_v2` is a phrase), ORed.

    User syntax (quotes, operators, colons) can never cause an FTS5 syntax error.
    Given the fts5vocab table and the row count, words found in more than
    :data:`COMMON_WORD_SHARE` of the rows are left out (unless nothing would be
    left): they barely change the ranking but make FTS5 score most of the table.
    """
    terms = query_terms(query)
    if db is not None and vocabulary and rows > _COMMON_WORD_MIN_ROWS:
        frequency = {term: db.scalar(f"SELECT doc FROM {vocabulary} WHERE term = ?", (term,)) or 0 for term in terms}
        rare = [term for term in terms if frequency[term] <= rows * COMMON_WORD_SHARE]
        terms = rare or sorted(terms, key=lambda term: frequency[term])[:1]
    return " OR ".join(f'"{term}"' for term in terms) if terms else None


def keyword_ranking(db: Database, sql: str, params: Sequence[Any], terms: Sequence[str]) -> list[tuple[int, float]]:
    """(seq, score) for FTS candidates, best first.

    bm25 alone says only which hit is best, not whether it is any good: a lone
    common word would score like an exact match. The score is therefore mostly
    term coverage (the share of query words the text contains) and partly bm25
    relative to the best candidate. ``sql`` must select ``seq``, ``rank`` (bm25)
    and ``text``.
    """
    rows = db.rows(sql, tuple(params))
    if not rows:
        return []
    best = rows[0]["rank"] or -1e-9
    wanted = set(terms)
    scored = []
    for row in rows:
        present = wanted & set(re.findall(r"\w+", (row["text"] or "").lower()))
        coverage = len(present) / len(wanted) if wanted else 0.0
        relative = max(0.0, min(1.0, (row["rank"] or 0.0) / best))
        scored.append((row["seq"], 0.7 * coverage + 0.3 * relative))
    return sorted(scored, key=lambda item: -item[1])


def fuse(rankings: Sequence[list[tuple[int, float]]]) -> dict[int, float]:
    """Weighted reciprocal rank fusion scaled to 0..1 (1 = first, with full weight, in every list).

    Each list contributes ``weight / (60 + rank)``, where the weight is the
    item's score in that list relative to the list's best, capped by the best's
    own absolute score for keyword lists, so a weak keyword hit cannot outrank a
    strong semantic one merely by being first in its list.
    """
    fused: dict[int, float] = {}
    for ranking in rankings:
        if not ranking:
            continue
        for position, (seq, weight) in enumerate(ranking):
            fused[seq] = fused.get(seq, 0.0) + weight / (RRF_K + position + 1)
    ideal = len(rankings) / (RRF_K + 1)
    return {seq: min(1.0, score / ideal) for seq, score in fused.items()}


def vector_ranking(
    db: Database, kind: str, query: str, *, project_id: int, limit: int, embedder: Any, warnings: list[str]
) -> Callable[[], list[tuple[int, float]] | None]:
    """Start a vector ranking; calling the result gives (seq, cosine similarity) nearest first.

    The query is embedded in a background thread (onnxruntime releases the
    GIL), so a hybrid search runs its keyword query meanwhile. The result is
    None, with a warning, when vectors or the model are unavailable.
    """
    if not db.vectors_loaded:
        warnings.append(f"Vector search unavailable ({db.vector_error}); showing keyword matches only.")
        return lambda: None
    try:
        if embedder is None:
            from .embeddings import get_embedder

            embedder = get_embedder()
        vectors.ensure_index(db, kind, embedder.model_id, embedder.dims)
    except Exception as exc:  # a model that cannot load must not break search
        warnings.append(f"Vector search unavailable ({exc}); showing keyword matches only.")
        return lambda: None
    outcome: dict[str, Any] = {}

    def embed() -> None:
        try:
            outcome["vector"] = embedder.embed_query(query)
        except Exception as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=embed, name="ccmemory-query-embedding", daemon=True)
    worker.start()

    def finish() -> list[tuple[int, float]] | None:
        worker.join()
        if "error" in outcome:
            warnings.append(f"Vector search unavailable ({outcome['error']}); showing keyword matches only.")
            return None
        found = vectors.nearest(db, kind, outcome["vector"], project_id=project_id, model_id=embedder.model_id,
                                limit=limit)
        return [(seq, 1.0 - distance) for seq, distance in found if 1.0 - distance >= MIN_SIMILARITY]

    return finish


def _relative(ranking: list[tuple[int, float]]) -> list[tuple[int, float]]:
    top = ranking[0][1] if ranking and ranking[0][1] > 0 else 1.0
    return [(seq, score / top) for seq, score in ranking]


def rank(
    mode: str,
    keyword: Callable[[], list[tuple[int, float]]],
    semantic: Callable[[], Callable[[], list[tuple[int, float]] | None]],
    warnings: list[str],
) -> tuple[list[tuple[int, float]], str]:
    """Run the rankings the mode needs and combine them; falls back to keywords when vectors are missing."""
    if mode == "keyword":
        return keyword(), "keyword"
    finish_vector = semantic()
    by_keyword = keyword() if mode == "hybrid" else None
    by_vector = finish_vector()
    if by_vector is None:
        return (keyword() if by_keyword is None else by_keyword), "keyword"
    if by_keyword is None:
        return by_vector, "semantic"
    fused = fuse([by_keyword, _relative(by_vector)])
    return sorted(fused.items(), key=lambda item: -item[1]), "hybrid"


def search_with_info(
    db: Database,
    query: str,
    *,
    project_id: int,
    mode: str = "hybrid",
    sector: str | None = None,
    limit: int = DEFAULT_LIMIT,
    include_superseded: bool = False,
    session_id: str | None = None,
    embedder: Any = None,
    track: bool = True,
) -> SearchResult:
    """Search a project's memories; see the module docstring for how modes combine.

    Deleted memories never appear; superseded ones only with ``include_superseded``.
    Each hit counts as a reference (``reference_count``, ``last_accessed``,
    and a ``recalled`` usage in the session) unless ``track`` is False.
    """
    query = validate_query(query, limit, mode)
    if sector is not None and sector not in SECTORS:
        raise ValidationError(f"Unknown sector {sector!r}; use one of: {', '.join(SECTORS)}")
    warnings: list[str] = []

    def keyword() -> list[tuple[int, float]]:
        expression = fts_query(query, db, "memories_vocab", db.scalar("SELECT MAX(seq) FROM memories") or 0)
        if expression is None:
            return []
        filters = "" if include_superseded else " AND m.valid_until IS NULL"
        params: list[Any] = [expression, project_id]
        if sector:
            filters += " AND m.sector = ?"
            params.append(sector)
        return keyword_ranking(
            db,
            "SELECT m.seq, bm25(memories_fts) AS rank, m.content || ' ' || m.tags || ' ' || m.files AS text "
            "FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid "
            f"WHERE memories_fts MATCH ? AND m.project_id = ? AND m.is_deleted = 0{filters} "
            f"ORDER BY rank LIMIT {max(_KEYWORD_CANDIDATES, limit * 4)}",
            params,
            query_terms(query),
        )

    def semantic() -> Callable[[], list[tuple[int, float]] | None]:
        return vector_ranking(db, "memory", query, project_id=project_id, limit=limit, embedder=embedder,
                              warnings=warnings)

    ranked, mode_used = rank(mode, keyword, semantic, warnings)
    hits: list[SearchHit] = []
    batch = limit * 2
    for start in range(0, len(ranked), batch):
        # The prior raises a raw score at most KNOWLEDGE_BOOST times, so once the next raw score
        # times that is below the limit-th hit's final score, nothing further down can enter the results.
        if len(hits) >= limit and ranked[start][1] * KNOWLEDGE_BOOST < hits[limit - 1].score:
            break
        chunk = ranked[start:start + batch]
        found = memories.by_seq(db, [seq for seq, _ in chunk])
        for seq, score in chunk:
            memory = found.get(seq)
            if memory is None or memory.is_deleted or (memory.is_superseded and not include_superseded):
                continue
            if sector and memory.sector != sector:
                continue
            hits.append(SearchHit(memory=memory, score=min(1.0, score * prior(memory))))
        hits.sort(key=lambda hit: -hit.score)
    hits = hits[:limit]
    _annotate(db, hits)
    if track and hits:
        memories.touch_references(db, [hit.memory.id for hit in hits], session_id=session_id)
    return SearchResult(hits=hits, mode_used=mode_used, warnings=warnings)


def prior(memory: Memory) -> float:
    """What a memory's own standing does to its score: salience nudges (x 0.9..1.0), knowledge is boosted."""
    weight = 0.9 + 0.1 * memory.salience
    return weight * KNOWLEDGE_BOOST if memory.source == knowledge.SOURCE else weight


def search(db: Database, query: str, **options: Any) -> list[SearchHit]:
    """Like :func:`search_with_info`, returning only the hits."""
    return search_with_info(db, query, **options).hits


def _annotate(db: Database, hits: list[SearchHit]) -> None:
    ids = [hit.memory.id for hit in hits]
    replaced = memories.superseded_by(db, [hit.memory.id for hit in hits if hit.memory.is_superseded])
    related = memories.related_counts(db, ids)
    found_sessions = sessions.get_sessions(db, [hit.memory.session_id for hit in hits if hit.memory.session_id])
    for hit in hits:
        hit.superseded_by = replaced.get(hit.memory.id)
        hit.related_count = related.get(hit.memory.id, 0)
        hit.session = found_sessions.get(hit.memory.session_id or "")
