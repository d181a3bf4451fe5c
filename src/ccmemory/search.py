"""Hybrid search: FTS5 keywords and sqlite-vec vectors, fused on one scale, then context and priors.

How a memory search ranks, in order (every step is independent of ``limit``,
so the top 5 of a limit-5 search are the top 5 of a limit-50 one):

1. **Candidates.** Keyword search (FTS5 with the Porter stemmer, every query
   word quoted, common English words dropped) and vector search (nearest
   neighbours of the query embedding) each give their best
   :data:`CANDIDATES`, a fixed depth. In hybrid mode every keyword candidate
   gets its cosine too (:func:`ccmemory.vectors.similarities`): the sign bits
   that pick the neighbours to rescore miss some memories whose exact cosine is
   among the best, and fusion would count such a keyword match as dissimilar.
2. **Fusion on one scale.** Each list's scores are made comparable before
   they are mixed, per query, with no absolute threshold: BM25 relative to
   the list's best hit (1 = best keyword match), and cosine similarity
   rescaled between the lowest of the rescored vector candidates (0) and
   the best (1). The
   fused score is a convex combination of the two whose weights are set per
   query (:func:`fuse`): :data:`KEYWORD_WEIGHT` and ``1 - KEYWORD_WEIGHT``,
   each multiplied by how far its list's best stands out from the rest
   (:func:`peak`), so a flat list (every session shares the question's common
   words) yields to a side with a clear best; a memory missing from a list
   scores 0 there. The keyword weight is also multiplied by the square root of the share of the
   question keywords can match at all (:func:`keyword_reach`): a question word no memory holds
   ("database" in a store that says "PostgreSQL") leaves more of the ranking to meaning. Cosines are never cut at a fixed
   value: a long memory (a whole session) has a low cosine to a short
   question however well it answers it, and what counts is how it compares
   with the other memories. (The earlier rank fusion weighted vector hits
   ~0.7–1.0 and keyword hits ~0.2–0.6, so any vector candidate outranked a
   keyword-only hit.) When the best fused hits include memories someone wrote at length (a whole
   conversation, a long note), the words that weigh most in them are added to the keyword query at half
   weight and the keyword side is ranked again (:func:`expansion_words`, pseudo-relevance feedback): a
   question about several trips names "trips" once, the accounts of them say flight, hotel, airport.
3. **Neighbouring context.** A memory right before or after a strong hit in
   the same session (an episode: a Claude Code session, a conversation's
   session), within the hour, gains
   :data:`NEIGHBOUR_WEIGHT` × that hit's score (:data:`CAPTURE_NEIGHBOUR_WEIGHT`
   when the hit is a captured tool call): the answer to a question is
   often the turn after the one that matches it, and an edit sits next to the
   read that found the code. A turn that asks something lends another
   speaker's reply right after it :data:`REPLY_WEIGHT` instead.
4. **Priors**, each a factor ≤ 1 so a weak hit can never be lifted past a
   strong one by them alone: salience (what capture and curation say a memory
   is worth), names in the query (a memory naming the people the query names
   keeps its score; one that does not loses :data:`NAME_WEIGHT`), and dates in
   the query (memories from another day, month or year than the one asked
   about lose :data:`DATE_WEIGHT`).
5. **A session's summary stands for its matching steps.** Where several of
   the best candidates are actions of one Claude Code session (edits,
   commands; not look-ups), the session's summary gets their combined score
   (:func:`with_session_summaries`): it says what the session did as a whole.
6. **Stale memories step back.** A memory whose recorded files changed since or are gone
   (:mod:`ccmemory.staleness`) keeps :data:`STALE_FACTOR` of its score and says so (``stale``):
   a newer memory about the same file, which recorded it as it is now, ranks above it at equal
   relevance, while a much better match still shows (what the code *was* can be the answer).
   When later edits changed only functions the memory does not name, it keeps
   :data:`ELSEWHERE_FACTOR`.
7. **One session does not fill the list.** Each further captured tool call of a
   session already in the results keeps a decaying share of its score
   (:func:`spread_sessions`), so the other sessions that touched the same code
   show too.

A hit that shares fewer than half of the query's words with it (in its best
passage, for a long memory: :func:`coverage`) and whose
cosine is under :data:`WEAK_COSINE` is marked ``weak``: it is shown (it may
still be the best there is), but as a weak match, never as a real hit.

If sqlite-vec or the model is unavailable, search keeps working on keywords
alone and says so in ``warnings``.
"""

from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from . import memories, scopes, sessions, speakers, staleness, vectors
from .team import labels, server_search
from .db import Database
from .errors import ValidationError
from .memories import Memory
from .query_dates import date_range
from .vocabulary import CAPTURE_SOURCE, KNOWLEDGE_SOURCE, LOOKUP_TOOLS, SECTORS, SELF_CONTAINED, SUMMARY_SOURCE

MODES = ("hybrid", "semantic", "keyword")
DEFAULT_MODE = "hybrid"
DEFAULT_LIMIT = 5
MAX_LIMIT = 100
#: Longer queries are refused: a search costs work per distinct word, and a query is a question, not a document.
MAX_QUERY_CHARS = 2_000
#: Depth of each candidate list, whatever the limit (>= MAX_LIMIT).
CANDIDATES = 100
KEYWORD_WEIGHT = 0.6
#: Keyword expansion from the best hits (:func:`expansion_words`): how many words are added, from how many
#: of the best fused hits, at what weight beside the query's own words; only hits with this many content words
#: count, and the words weighing most in them are this many before their rarity is looked up.
EXPANSION_WORDS = 5
EXPANSION_HITS = 3
EXPANSION_WEIGHT = 0.5
EXPANSION_MIN_WORDS = 100
EXPANSION_POOL = 50
#: Share of a keyword score that is term coverage rather than BM25.
COVERAGE_WEIGHT = 0.5
#: Words of the passage a long memory's term coverage is counted on (:func:`coverage`): about what one
#: window of the vector side holds (:data:`ccmemory.tokens.WINDOW_TOKENS`, 128 word pieces), and the
#: passage length of dense passage retrieval, a paragraph or a conversation turn. A memory this short
#: (a turn, a fact, most observations) is counted whole, as before.
PASSAGE_WORDS = 100
#: A hit is marked weak when it has fewer than this share of the query's words and its cosine is below
#: :data:`WEAK_COSINE`. Only a label: it never drops or reorders a hit. The level is the built-in model's
#: (all-MiniLM-L6-v2): on LoCoMo, half of the unrelated question-turn pairs of one conversation score
#: above 0.25, three quarters of the true ones above 0.39 ("postgres version" to "We moved to PostgreSQL 17":
#: 0.62). A model whose unrelated texts score higher marks fewer hits weak, never more.
WEAK_COVERAGE = 0.5
WEAK_COSINE = 0.3
NEIGHBOUR_WEIGHT = 0.4
#: What a conversation turn that asks something lends the turn right after it when that turn is another
#: speaker's reply (:func:`replies`): the answer to a question is in its reply, which often does
#: not repeat what was asked ("What concert was it?" - "It was Matt Patterson, he is so talented!").
REPLY_WEIGHT = 0.7
#: What a captured tool call lends its neighbours: consecutive tool calls are separate actions, each
#: naming its own file, command or function, while a conversation turn often means little without the
#: turn next to it.
CAPTURE_NEIGHBOUR_WEIGHT = 0.2
#: See :func:`spread_sessions`.
SAME_SESSION_DECAY = 0.2
#: See :func:`with_session_summaries`: how many of the best candidates count as evidence for a
#: session, and how many of its actions among them make its summary stand for them.
SUMMARY_POOL = 20
SUMMARY_MIN_ACTIONS = 2
#: How many of the best fused candidates lend context to their neighbours.
NEIGHBOUR_POOL = 40
SALIENCE_WEIGHT = 0.1
NAME_WEIGHT = 0.1
DATE_WEIGHT = 0.3
COMMON_WORD_SHARE = 0.2
#: What a memory whose files changed since or are gone keeps of its score. A factor rather than a
#: filter: an old observation still answers "what did pricing.py look like", but at equal relevance
#: the memory that matches the code as it is comes first. 0.7 puts a stale hit below a current one
#: unless it matches clearly better (the salience prior alone spans at most 0.1).
STALE_FACTOR = 0.7
#: ... and a memory whose files changed only in functions it does not name (a later edit changed
#: ``apply_discount``, the memory is about ``apply_tax``): probably still true, but the file moved on.
ELSEWHERE_FACTOR = 0.9
#: ... or in more rows than this, whatever the share: FTS5 scores every row a word is in, so in a
#: large store a word that common costs milliseconds and barely changes the ranking.
COMMON_WORD_MAX_ROWS = 5000
_COMMON_WORD_MIN_ROWS = 1000
#: Curated knowledge (sections of the project's markdown, see ccmemory.knowledge) outranks a raw
#: observation that answers as well: its score is multiplied by this, capped at 1.
KNOWLEDGE_BOOST = 1.25
_STOPWORDS = frozenset(
    "a an and are as at be by do does did for from how i in is it its of on or so that the this to was we were "
    "what when where which who why with you your".split()
)
#: Capitalised words that start questions and clauses rather than name someone.
_NOT_NAMES = _STOPWORDS | frozenset(
    "would could should can will has have had after before during since according about between".split()
)
_TOKENIZER = "porter unicode61 remove_diacritics 2"
#: Values one statement may bind: SQLite before 3.32 allows 999, and a query of 2,000 characters can hold
#: more distinct words than that takes, so the query's words are stemmed and looked up in statements of this many.
_STATEMENT_VARIABLES = 999
#: A word of a query or a text, as keyword coverage reads both.
_TEXT_WORD = re.compile(r"\w+")
#: A word an expansion may add: letters only, three or more, not part of a longer word or an identifier.
_CONTENT_WORD = re.compile(r"(?<![\w'])[a-z]{3,}(?![\w'])")


@dataclass
class SearchHit:
    """One memory found, with what the index view shows about it."""

    memory: Memory
    score: float
    superseded_by: str | None = None
    session: dict[str, Any] | None = None
    related_count: int = 0
    #: Where it comes from, seen from the project searched: "" (that project), "user-wide", "project NAME (PATH)".
    origin: str = ""
    #: Who shared it and when, for a teammate's memory pulled from the team server (``{"by", "at"}``).
    shared: dict[str, Any] | None = None
    #: A weak match (see :func:`is_weak`): shown as such, because nothing better was found.
    weak: bool = False
    #: The files it recorded that changed since or are gone (:func:`ccmemory.staleness.check`); [] when current.
    stale: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"score": round(self.score, 4), "weak": self.weak, "superseded_by": self.superseded_by,
                "session": self.session, "related_count": self.related_count, "origin": self.origin,
                "shared": self.shared, "stale": self.stale, "memory": self.memory.to_dict()}


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
    words = _TEXT_WORD.findall(query.lower())
    kept = [w for w in words if w not in _STOPWORDS] or words
    return list(dict.fromkeys(kept))


def stems(db: Database, words: Sequence[str]) -> list[list[str]]:
    """The index terms of each word, as the keyword index's own tokenizer (Porter) makes them.

    A word such as ``parse_config_v2`` gives several terms. The words go
    through a scratch FTS5 table in the connection's temp schema, so stemming
    is exactly the index's, with no stemmer of our own to drift from it.
    """
    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_words USING fts5(word, tokenize='{_TOKENIZER}')")
    db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_terms USING fts5vocab(temp, query_words, instance)")
    db.execute("DELETE FROM temp.query_words")
    numbered = list(enumerate(words, 1))
    for start in range(0, len(numbered), _STATEMENT_VARIABLES // 2):
        rows = numbered[start:start + _STATEMENT_VARIABLES // 2]
        db.execute(f"INSERT INTO temp.query_words(rowid, word) VALUES {','.join(['(?, ?)'] * len(rows))}",
                   [value for row in rows for value in row])
    found: list[list[str]] = [[] for _ in words]
    for row in db.rows("SELECT term, doc FROM temp.query_terms ORDER BY doc, offset"):
        found[row["doc"] - 1].append(row["term"])
    return found


def fts_query(query: str, db: Database | None = None, vocabulary: str | None = None, rows: int = 0,
              frequency: dict[str, int] | None = None, *, extra: Sequence[str] = ()) -> str | None:
    """A safe FTS5 expression: each word quoted (so `parse_config_v2` is a phrase), ORed.

    User syntax (quotes, operators, colons) can never cause an FTS5 syntax error.
    Given the fts5vocab table and the row count, words found in more than
    :data:`COMMON_WORD_SHARE` of the rows, or in more than :data:`COMMON_WORD_MAX_ROWS`,
    are left out (unless nothing would be left): they barely change the ranking
    but make FTS5 score a large part of the table.
    A word's frequency is that of its rarest index term (after stemming): :func:`document_frequencies`,
    or ``frequency`` when the caller already looked them up. ``extra`` words (a keyword expansion,
    :func:`expansion_words`) are searched beside the query's own.
    """
    terms = query_terms(query) + list(extra)
    if db is not None and vocabulary and rows > _COMMON_WORD_MIN_ROWS and terms:
        if frequency is None:
            frequency = document_frequencies(db, vocabulary, terms)
        limit = min(rows * COMMON_WORD_SHARE, COMMON_WORD_MAX_ROWS)
        rare = [term for term in terms if frequency[term] <= limit]
        terms = rare or sorted(terms, key=lambda term: frequency[term])[:1]
    return " OR ".join(f'"{term}"' for term in terms) if terms else None


def document_frequencies(db: Database, vocabulary: str, terms: Sequence[str]) -> dict[str, int]:
    """How many rows of the keyword index hold each word, counted by its rarest index term (after stemming).

    ``vocabulary`` is the index's fts5vocab table (``row`` type).
    """
    indexed = stems(db, terms)
    wanted = sorted({stem for found in indexed for stem in found})
    rows: dict[str, int] = {}
    for start in range(0, len(wanted), _STATEMENT_VARIABLES):
        some = wanted[start:start + _STATEMENT_VARIABLES]
        rows.update((row["term"], row["doc"]) for row in db.rows(
            f"SELECT term, doc FROM {vocabulary} WHERE term IN ({','.join('?' * len(some))})", some))
    return {term: min((rows.get(stem, 0) for stem in found), default=0) for term, found in zip(terms, indexed)}


def term_weights(frequency: dict[str, int], rows: int) -> dict[str, float]:
    """Each query word's weight in :func:`coverage`: its inverse document frequency, as BM25 counts it.

    ``log(1 + (N - n + 0.5) / (n + 0.5))`` for a word in ``n`` (``frequency``, from
    :func:`document_frequencies`) of the ``N`` rows (``rows``, the store's size): a word nearly every
    memory holds ("my", "like", "been") weighs almost nothing, a word few hold weighs most, so a long
    memory that holds many of the question's everyday words does not outrank one that holds the one
    word that matters.
    """
    rows = max(rows, 1)
    return {term: math.log(1.0 + (rows - min(count, rows) + 0.5) / (min(count, rows) + 0.5))
            for term, count in frequency.items()}


def keyword_reach(weights: dict[str, float], frequency: dict[str, int]) -> float:
    """How much of a question keywords can match at all: the weight of the searched words that some row holds
    (``frequency`` above 0), over the weight of them all (``weights``, as :func:`coverage` counts them: rarity,
    :func:`term_weights`, an expansion word at :data:`EXPANSION_WEIGHT`); 1 without words.

    A word no memory holds ("database" in a store that says "PostgreSQL") is matched by no keyword, while the
    vector side may find it by meaning, so :func:`fuse` weighs the keyword side by this share: a keyword list
    whose every match holds only the question's everyday word ("use") no longer outranks the memory nearest
    by meaning. Such a word is the rarest a question can have, so its weight is the largest.
    """
    total = sum(weights.values())
    return sum(weight for term, weight in weights.items() if frequency[term] > 0) / total if total > 0 else 1.0


def keyword_ranking(db: Database, sql: str, params: Sequence[Any], terms: Sequence[str],
                    weights: dict[str, float] | None = None) -> list[tuple[int, float]]:
    """(seq, score) for FTS candidates, best first, on a 0..1 scale.

    The score mixes BM25 relative to the best candidate with term coverage (the
    share of the query's words the text contains, common words included even when
    they were left out of the FTS query; each word counted by its ``weights``, see
    :func:`term_weights`; a long text counted on its best passage, see :func:`coverage`),
    weighted :data:`COVERAGE_WEIGHT`: BM25 alone lets one rare word outweigh a text
    that has every word asked for. BM25 stays FTS5's, over the whole text: a
    passage-level BM25 would need each candidate's words stemmed and counted again here.
    ``sql`` must select ``seq``, ``rank`` (FTS5's bm25, lower is better) and ``text``, ordered by rank, and
    may select ``prose``: true for a text people wrote, whose words count for the query's when they have the
    same stem (:func:`stem_aliases`: "event" for "events"); the words of a captured call (code, paths, tool
    names) count as written, where ``type`` and ``typing`` are different names.
    """
    rows = db.rows(sql, tuple(params))
    if not rows:
        return []
    best = rows[0]["rank"] or -1e-9
    words = [_TEXT_WORD.findall((row["text"] or "").lower()) for row in rows]
    aliases = stem_aliases(db, terms, [text_words for row, text_words in zip(rows, words) if row.get("prose")])
    scored = []
    for row, text_words in zip(rows, words):
        relative = max(0.0, min(1.0, (row["rank"] or 0.0) / best))
        found = coverage(text_words, terms, weights, aliases if row.get("prose") else None)
        scored.append((row["seq"], COVERAGE_WEIGHT * found + (1.0 - COVERAGE_WEIGHT) * relative))
    return sorted(scored, key=lambda item: (-item[1], item[0]))


def stem_aliases(db: Database, terms: Sequence[str], texts: Sequence[Sequence[str]]) -> dict[str, str]:
    """The words of ``texts`` (lists of lower-case words) that the keyword index reads as one of ``terms``.

    A question says "events" and the memory "event", "participated" and "participating": the index
    stems both to one term (Porter), so BM25 counts the match, and :func:`coverage` must too. Only
    words starting as a query word's stem does are stemmed (Porter rewrites a word's ending only, so
    a word of the same stem starts with that stem less its last letter), all in one pass through
    :func:`stems`. Words that give several index terms (``parse_config_v2``) match only as written.
    """
    if not texts:
        return {}
    by_stem: dict[str, str] = {}
    for term, found in zip(terms, stems(db, terms)):
        if len(found) == 1:
            by_stem.setdefault(found[0], term)
    if not by_stem:
        return {}
    prefixes = tuple({stem[:max(1, min(3, len(stem) - 1))] for stem in by_stem})
    candidates = sorted(word for word in set().union(*texts).difference(terms) if word.startswith(prefixes))
    return {word: by_stem[found[0]] for word, found in zip(candidates, stems(db, candidates))
            if len(found) == 1 and found[0] in by_stem}


def coverage(text: str | Sequence[str], terms: Sequence[str], weights: dict[str, float] | None = None,
             aliases: dict[str, str] | None = None) -> float:
    """The share of ``terms`` (lower-case query words) that occur as words of ``text``'s best passage.

    ``text`` is a text or its lower-case words; ``aliases`` maps a word to the query word it stands for
    (the same stem, :func:`stem_aliases`). With ``weights`` (word -> weight; a word without one weighs 1),
    the weighted share. A text of at most :data:`PASSAGE_WORDS` words is one passage, counted whole. A
    longer one counts by its best run of that many consecutive words (MaxP of the long-document retrieval
    literature): a long session about something else holds most of a question's words scattered over it,
    while the memory that answers holds them together, in the one paragraph that mentions the thing.
    """
    wanted = set(terms)
    if not wanted:
        return 0.0
    words = _TEXT_WORD.findall(text.lower()) if isinstance(text, str) else text
    term_of = {term: term for term in wanted}
    term_of.update((word, term) for word, term in (aliases or {}).items() if term in wanted)
    total = len(wanted) if weights is None else sum(weights.get(term, 1.0) for term in wanted)
    if total <= 0:
        return 0.0
    if len(words) <= PASSAGE_WORDS:
        found = {term_of[word] for word in term_of.keys() & set(words)}
    else:
        found = _best_passage(words, term_of, weights)
    if weights is None:
        return len(found) / total
    return sum(weights.get(term, 1.0) for term in found) / total


def _best_passage(words: Sequence[str], term_of: dict[str, str], weights: dict[str, float] | None) -> set[str]:
    """The query words in the run of :data:`PASSAGE_WORDS` consecutive ``words`` that holds the most of them (by weight).

    ``term_of`` maps each word that counts to the query word it stands for. Only the windows starting at
    a query word are looked at (any other run holds no more), and each is found by sliding over the query
    words' places, so the cost is linear in the text's length.
    """
    places = [(place, term_of[word]) for place, word in enumerate(words) if word in term_of]
    best: set[str] = set()
    best_weight = 0.0
    held: dict[str, int] = {}
    end = 0
    for start, (first, _) in enumerate(places):
        while end < len(places) and places[end][0] < first + PASSAGE_WORDS:
            held[places[end][1]] = held.get(places[end][1], 0) + 1
            end += 1
        weight = len(held) if weights is None else sum(weights.get(term, 1.0) for term in held)
        if weight > best_weight:
            best, best_weight = set(held), weight
        word = places[start][1]
        held[word] -= 1
        if not held[word]:
            del held[word]
    return best


def is_weak(covered: float, cosine: float | None) -> bool:
    """Whether a hit is a weak match: few of the query's words (its :func:`coverage` under
    :data:`WEAK_COVERAGE`) and a low cosine."""
    return covered < WEAK_COVERAGE and (cosine is None or cosine < WEAK_COSINE)


def whole_question_cosines(db: Database, query: str, seqs: Sequence[int], embedder: Any) -> dict[int, float]:
    """The cosine of each memory of ``seqs`` (vector candidates) to the question as asked, for :func:`is_weak` when
    the vector side read it without its speakers' names (:func:`vector_query`): :data:`WEAK_COSINE` was set on
    cosines to questions as asked, and every cosine to the shorter text is lower. The question's vector was made
    in the same call as the one ranked by (:func:`vector_ranking`'s ``also``). Empty when there is nothing to
    judge or no model."""
    if not seqs:
        return {}
    try:
        if embedder is None:
            from .embeddings import get_embedder

            embedder = get_embedder()
        vector = embedder.embed_query(query)
    except Exception:  # the ranking already said why vectors are unavailable
        return {}
    return {seq: 1.0 - distance
            for seq, distance in vectors.similarities(db, "memory", vector, seqs, model_id=embedder.model_id)}


def fuse(by_keyword: list[tuple[int, float]], by_vector: list[tuple[int, float]],
         reach: float = 1.0) -> list[tuple[int, float]]:
    """Mix the keyword scores (0..1) and the rescaled cosine similarities, each side weighted by its :func:`peak`.

    The weights are :data:`KEYWORD_WEIGHT` and ``1 - KEYWORD_WEIGHT``, each multiplied by how far
    that side's best stands out from its own list for this query, the keyword one also by the square
    root of its ``reach`` (:func:`keyword_reach`: how much of the question its words can match), then
    scaled to sum to 1. The root, because a keyword list that misses one word of several still matches
    the others well: the full share cost LoCoMo's dev set half a point of R@5 and lost the coding question
    that names a class no earlier memory holds ("Add NoSuchCommand exception..."); the root costs
    neither (BENCHMARKS.md, "Keywords weighed by how much of the question they can match"). A side
    whose best barely stands out (a question whose words every long session shares, a paraphrase
    the embedding cannot tell from its neighbours) counts for little; a side with a clear best (an
    exact identifier, a memory clearly nearest by meaning) counts for much. Both lists are looked
    at to the same depth: the longer one's, at most :data:`CANDIDATES`; a memory a side did not
    find counts 0 there.
    """
    by_vector = vector_scale(by_vector)
    depth = min(CANDIDATES, max(len(by_keyword), len(by_vector)))
    keyword_weight = KEYWORD_WEIGHT * peak([score for _, score in by_keyword], depth) * math.sqrt(reach)
    vector_weight = (1.0 - KEYWORD_WEIGHT) * peak([score for _, score in by_vector], depth)
    if keyword_weight + vector_weight <= 0:  # no side stands out (a store of one memory): the base weights
        keyword_weight, vector_weight = KEYWORD_WEIGHT, 1.0 - KEYWORD_WEIGHT
    total = keyword_weight + vector_weight
    fused = {seq: keyword_weight / total * score for seq, score in by_keyword}
    for seq, score in by_vector:
        fused[seq] = fused.get(seq, 0.0) + vector_weight / total * score
    return ordered(fused)


def peak(scores: Sequence[float], depth: int) -> float:
    """How far the best of ``scores`` stands out: it minus the mean of the ``depth`` best (missing places are 0)."""
    best = sorted(scores, reverse=True)[:depth]
    return best[0] - sum(best) / depth if best else 0.0


def vector_scale(ranking: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """Cosine similarities mapped to 0..1 within the list: its lowest -> 0, its best -> 1.

    The list is every candidate the vector search rescored (four per place of
    its :data:`CANDIDATES`, or all of a smaller store), so 0 is what an
    unremarkable memory of this store scores for this query, whatever the
    texts' lengths. When every cosine is equal, all score 1.
    """
    if not ranking:
        return []
    top = max(score for _, score in ranking)
    bottom = min(score for _, score in ranking)
    if top <= bottom:
        return [(seq, 1.0) for seq, _ in ranking]
    return [(seq, (score - bottom) / (top - bottom)) for seq, score in ranking]


def ordered(scores: dict[int, float]) -> list[tuple[int, float]]:
    """Best first; equal scores in store order, so results are deterministic."""
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def vector_ranking(
    db: Database, kind: str, query: str, *, project_id: int, embedder: Any, warnings: list[str],
    scope: str | None = None, also: str | None = None,
) -> Callable[[Sequence[int]], list[tuple[int, float]] | None]:
    """Start a vector ranking; calling the result gives (seq, cosine similarity) nearest first.

    The query is embedded in a background thread (onnxruntime releases the
    GIL), so a hybrid search runs its keyword query meanwhile. The result is
    None, with a warning, when vectors or the model are unavailable. Without
    ``scope`` the project's items are ranked; with one (memories only), what it
    covers (:mod:`ccmemory.scopes`): the user-wide memories are few and ranked exactly.

    ``also`` is another text embedded in the same call (and kept in the model's query cache), for what the
    search judges later (:func:`whole_question_cosines`).

    The result is called with the keyword candidates (empty outside hybrid mode): those the nearest
    neighbours missed are scored exactly too, at least as the lowest of the neighbours (0 once
    rescaled), so fusion weighs every candidate on both sides instead of counting a memory the
    coarse sign-bit pass let through as dissimilar.
    """
    if not db.vectors_loaded:
        warnings.append(f"Vector search unavailable ({db.vector_error}); showing keyword matches only.")
        return lambda also: None
    try:
        if embedder is None:
            from .embeddings import get_embedder

            embedder = get_embedder()
        vectors.ensure_index(db, kind, embedder.model_id, embedder.dims)
    except Exception as exc:  # a model that cannot load must not break search
        warnings.append(f"Vector search unavailable ({exc}); showing keyword matches only.")
        return lambda also: None
    outcome: dict[str, Any] = {}

    def embed() -> None:
        try:
            outcome["vector"] = embedder.embed_queries([query, also] if also else [query])[0]
        except Exception as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=embed, name="ccmemory-query-embedding", daemon=True)
    worker.start()

    def finish(also: Sequence[int]) -> list[tuple[int, float]] | None:
        worker.join()
        if "error" in outcome:
            warnings.append(f"Vector search unavailable ({outcome['error']}); showing keyword matches only.")
            return None
        found: list[tuple[int, float]] = []
        if scope != "user":
            found = vectors.nearest(db, kind, outcome["vector"], project_id=None if scope == "all" else project_id,
                                    model_id=embedder.model_id, limit=CANDIDATES)
        if scope in ("project", "user"):
            seen = {seq for seq, _ in found}
            found += [(seq, distance) for seq, distance in vectors.nearest_user_memories(
                db, outcome["vector"], model_id=embedder.model_id) if seq not in seen]
            found = sorted(found, key=lambda item: item[1])[:max(vectors.MIN_CANDIDATES, CANDIDATES * 4)]
        seen = {seq for seq, _ in found}
        farthest = max((distance for _, distance in found), default=None)
        for seq, distance in vectors.similarities(db, kind, outcome["vector"], [seq for seq in also if seq not in seen],
                                                  model_id=embedder.model_id):
            found.append((seq, distance if farthest is None else min(distance, farthest)))
        return [(seq, 1.0 - distance) for seq, distance in sorted(found, key=lambda item: item[1])]

    return finish


def rank(
    mode: str,
    keyword: Callable[..., tuple[list[tuple[int, float]], float]],
    semantic: Callable[[], Callable[[Sequence[int]], list[tuple[int, float]] | None]],
    warnings: list[str],
    expand: Callable[[list[tuple[int, float]]], list[str]] | None = None,
) -> tuple[list[tuple[int, float]], str, dict[int, float]]:
    """Run the rankings the mode needs and put them on the 0..1 scale; falls back to keywords without vectors.

    ``keyword(extra)`` ranks by the query's words and the ``extra`` ones, and says how much of the question its
    words can match (:func:`keyword_reach`); in hybrid mode, ``expand`` (given the
    best fused hits) may name such words (:func:`expansion_words`), and the keyword side is ranked again with them.
    Also returns the cosine similarity of each vector candidate (empty without vectors), for :func:`is_weak`.
    """
    if mode == "keyword":
        return keyword()[0], "keyword", {}
    finish_vector = semantic()
    by_keyword, reach = keyword() if mode == "hybrid" else (None, 1.0)
    by_vector = finish_vector([seq for seq, _ in by_keyword or ()])
    if by_vector is None:
        return (keyword()[0] if by_keyword is None else by_keyword), "keyword", {}
    if by_keyword is None:
        return ordered(dict(vector_scale(by_vector))), "semantic", dict(by_vector)
    fused = fuse(by_keyword, by_vector, reach)
    extra = expand(fused[:EXPANSION_HITS]) if expand is not None else []
    if extra:
        by_keyword, reach = keyword(extra)
        fused = fuse(by_keyword, by_vector, reach)
    return fused, "hybrid", dict(by_vector)


def with_neighbours(db: Database, ranked: list[tuple[int, float]], *, include_superseded: bool,
                    sector: str | None) -> list[tuple[int, float]]:
    """Lend each of the best candidates' neighbours a share of its score (the best lender counts).

    The share is :data:`NEIGHBOUR_WEIGHT`, or :data:`CAPTURE_NEIGHBOUR_WEIGHT` when the lender is a
    captured tool call, or :data:`REPLY_WEIGHT` from a turn that asks something to another speaker's reply
    right after it (:func:`replies`).

    Only memories of a session have neighbours: memories added on their own are unrelated to what was added
    just before or after them.
    """
    pool = ranked[:NEIGHBOUR_POOL]
    if not pool or NEIGHBOUR_WEIGHT <= 0:
        return ranked
    filters = "" if include_superseded else " AND n.valid_until IS NULL"
    params: list[Any] = []
    if sector:
        filters += " AND n.sector = ?"
        params.append(sector)
    marks = ",".join("?" * len(pool))
    before, before_params = sessions.neighbour_sql("seq", before=True, filters=filters, params=params)
    after, after_params = sessions.neighbour_sql("seq", before=False, filters=filters, params=params)
    rows = db.rows(
        f"SELECT m.seq, m.source, instr(m.content, '?') > 0 AS asks, "
        f"substr(m.content, 1, {speakers.HEAD_CHARS}) AS head, {before} AS before, {after} AS after "
        f"FROM memories m WHERE m.seq IN ({marks}) AND m.session_id IS NOT NULL",
        (*before_params, *after_params, *[seq for seq, _ in pool]),
    )
    score = dict(pool)
    replied = replies(db, rows)
    lent: dict[int, float] = {}
    for row in rows:
        weight = CAPTURE_NEIGHBOUR_WEIGHT if row["source"] == CAPTURE_SOURCE else NEIGHBOUR_WEIGHT
        for neighbour, share in ((row["before"], weight),
                                 (row["after"], REPLY_WEIGHT if row["seq"] in replied else weight)):
            if neighbour is not None:
                lent[neighbour] = max(lent.get(neighbour, 0.0), share * score[row["seq"]])
    if not lent:
        return ranked
    combined = dict(ranked)
    for seq, bonus in lent.items():
        combined[seq] = combined.get(seq, 0.0) + bonus
    top = max(combined.values())
    return ordered({seq: value / top for seq, value in combined.items()}) if top > 1.0 else ordered(combined)


def replies(db: Database, rows: Sequence[Any]) -> set[int]:
    """The lenders among ``rows`` (``seq``, ``source``, ``asks``, ``head``, ``after``) whose next turn replies to them.

    A turn of a conversation (not a captured call, summary or knowledge) that asks something ("?"), followed
    by another speaker's turn (:func:`ccmemory.speakers.another_speaker`), which is not one of those either.
    Only turns that name their speaker, as a transcript does, can say whose a turn is; one person's messages in
    a row (a user's prompts without the answers between them) are not a question and its reply. Only the first
    :data:`ccmemory.speakers.HEAD_CHARS` characters of a turn are read for its speaker.
    """
    asking = [row for row in rows if row["asks"] and row["after"] is not None
              and row["source"] not in SELF_CONTAINED and speakers.speaker(row["head"])]
    if not asking:
        return set()
    following = speakers.turn_heads(db, [row["after"] for row in asking])
    return {row["seq"] for row in asking if speakers.another_speaker(row["head"], following.get(row["after"], ""))}


#: A word that may be a name: a letter, then letters, digits, apostrophes (a possessive) or hyphens.
_WORD = re.compile(r"\b[^\W\d_][\w'’-]*")


def query_names(query: str, *, any_script: bool = False) -> list[str]:
    """Lower-cased capitalised words of the query that may name someone or something (not question words),
    without a possessive ("Caroline's" names "caroline", as her turns do).

    Latin capitals only unless ``any_script``: a question in another language starts with a capitalised word
    that English question words do not list ("Что купила Маша?"), so only words checked against the store
    (:func:`ccmemory.speakers.named`) are taken from every script that has capitals.
    """
    names = [speakers.without_possessives(word.lower()) for word in _WORD.findall(query)
             if word[0].isupper() and (any_script or "A" <= word[0] <= "Z") and word.lower() not in _NOT_NAMES]
    return list(dict.fromkeys(names))


def lower_case_names(query: str) -> list[str]:
    """The words of a question typed in lower case ("what did caroline say?") that may name someone, for a
    question that capitalises no name (:func:`query_names`): its words of two letters or more but common ones,
    possessive removed, to be checked against the store's speakers (:func:`ccmemory.speakers.named`)."""
    words = [speakers.without_possessives(word.lower()) for word in _WORD.findall(query)]
    return list(dict.fromkeys(word for word in words if len(word) > 1 and word not in _NOT_NAMES))


def vector_query(query: str, speakers_named: Sequence[str], *, any_case: bool = False) -> str:
    """The text the vector side embeds for ``query``: without the capitalised words that name the stored
    conversations' speakers among ``speakers_named`` (:func:`ccmemory.speakers.named`), possessive included, or
    the query itself when no word but common ones would be left ("Who is Caroline?"). With ``any_case`` (a
    question typed in lower case, :func:`lower_case_names`) the names go whatever their case.

    Every turn of a speaker starts with their name, so in a question's vector ("What did Caroline research?")
    the name pulls towards all of that speaker's turns alike and drowns what is asked. Whose turn it is still
    counts: a memory that does not hold a name of the query keeps less of its score (:func:`prior`, given the
    speakers' names too), and the keyword side reads the whole query. The same word not capitalised is not a
    name ("What did Mark mark on the map?").
    """
    if not speakers_named:
        return query

    def kept(word: re.Match[str]) -> str:
        text = word.group(0)
        named = speakers.without_possessives(text.lower()) in speakers_named
        return " " if named and (any_case or text[0].isupper()) else text

    left = " ".join(_WORD.sub(kept, query).split())
    return left if any(word not in _STOPWORDS for word in re.findall(r"[^\W\d_]+", left.lower())) else query


def prior(memory: Memory, names: Sequence[str], dates: tuple[str, str] | None) -> float:
    """The factor that salience, names and dates in the query apply to a memory's score.

    It is at most 1, except for curated knowledge, which is boosted (:data:`KNOWLEDGE_BOOST`).
    """
    factor = 1.0 - SALIENCE_WEIGHT * (1.0 - memory.salience)
    if memory.source == KNOWLEDGE_SOURCE:
        factor *= KNOWLEDGE_BOOST
    if names:
        words = set(re.findall(r"[\w'-]+", speakers.without_possessives(memory.content.lower())))
        factor *= 1.0 - NAME_WEIGHT * (1.0 - sum(name in words for name in names) / len(names))
    if dates and not dates[0] <= memory.created_at < dates[1]:
        factor *= 1.0 - DATE_WEIGHT
    return factor


def search_with_info(
    db: Database,
    query: str,
    *,
    project_id: int,
    scope: str = "project",
    mode: str = DEFAULT_MODE,
    sector: str | None = None,
    limit: int = DEFAULT_LIMIT,
    include_superseded: bool = False,
    session_id: str | None = None,
    embedder: Any = None,
    track: bool = True,
    team: bool = True,
) -> SearchResult:
    """Search the memories ``scope`` covers from ``project_id`` (:mod:`ccmemory.scopes`: by default the
    project's and the user-wide ones); see the module docstring for how the ranking is made.

    Deleted memories never appear; superseded ones only with ``include_superseded``; teammates'
    memories pulled from the team server (:mod:`ccmemory.team.labels`) only with ``team``. With
    ``team``, a project whose teammates' memories are kept here only in part (``sync.replica_max``)
    asks the server first and caches what it finds (:mod:`ccmemory.team.server_search`: bounded,
    local results and a warning when the server does not answer).
    Each hit counts as a reference (``reference_count``, ``last_accessed``, and a ``recalled`` usage
    in the session) unless ``track`` is False.
    """
    query = validate_query(query, limit, mode)
    scopes.check(scope)
    if sector is not None and sector not in SECTORS:
        raise ValidationError(f"Unknown sector {sector!r}; use one of: {', '.join(SECTORS)}")
    warnings: list[str] = []
    if team and scope != "user":  # a project whose team memories are partly on the server only: ask it first
        warnings += server_search.consult(db, query, query_terms(query), project_id=project_id, embedder=embedder)

    def keyword(extra: Sequence[str] = ()) -> tuple[list[tuple[int, float]], float]:
        rows = db.scalar("SELECT MAX(seq) FROM memories") or 0
        terms = query_terms(query) + list(extra)
        frequency = document_frequencies(db, "memories_vocab", terms)
        weights = {term: weight * (EXPANSION_WEIGHT if term in extra else 1.0)
                   for term, weight in term_weights(frequency, rows).items()}
        reach = keyword_reach(weights, frequency)
        expression = fts_query(query, db, "memories_vocab", rows, frequency, extra=extra)
        if expression is None:
            return [], reach
        filters = "" if include_superseded else " AND m.valid_until IS NULL"
        covered, covered_params = scopes.condition(scope, project_id, "m")
        params: list[Any] = [*SELF_CONTAINED, expression, *covered_params]
        if sector:
            filters += " AND m.sector = ?"
            params.append(sector)
        return keyword_ranking(
            db,
            "SELECT m.seq, bm25(memories_fts) AS rank, m.content || ' ' || m.tags || ' ' || m.files AS text, "
            f"m.source NOT IN ({','.join('?' * len(SELF_CONTAINED))}) AS prose "
            "FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid "
            f"WHERE memories_fts MATCH ? AND {covered} AND m.is_deleted = 0{filters} "
            f"ORDER BY rank LIMIT {CANDIDATES}",
            params,
            terms,
            weights,
        ), reach

    names, dates = query_names(query), date_range(query)
    said: list[str] = []  # the speakers' names the vector side reads the question without, when it does

    def semantic() -> Callable[[Sequence[int]], list[tuple[int, float]] | None]:
        read = query
        if db.vectors_loaded:
            covered, covered_params = scopes.condition(scope, project_id, "m")
            capitalised = query_names(query, any_script=True)
            speaking = speakers.named(db, capitalised or lower_case_names(query), covered=covered,
                                      params=covered_params)
            read = vector_query(query, speaking, any_case=not capitalised)
            if read != query:
                said.extend(speaking)
        return vector_ranking(db, "memory", read, project_id=project_id, embedder=embedder, warnings=warnings,
                              scope=scope, also=query if said else None)

    ranked, mode_used, cosines = rank(mode, keyword, semantic, warnings,
                                      lambda best: expansion_words(db, query, best))
    ranked = with_neighbours(db, ranked, include_superseded=include_superseded, sector=sector)
    ranked = with_session_summaries(db, ranked)
    names += [name for name in said if name not in names]  # a speaker's name of another script
    hits: list[SearchHit] = []
    shown: list[SearchHit] = []
    batch = max(limit * 2, 20)
    for start in range(0, len(ranked), batch):
        # Priors raise a raw score at most KNOWLEDGE_BOOST times and the session spread only lowers
        # scores, so once the next raw score times that is below the limit-th hit's final score,
        # nothing further down can enter the results (nor change the scores of those above it).
        if len(shown) >= limit and ranked[start][1] * KNOWLEDGE_BOOST < shown[limit - 1].score:
            break
        chunk = ranked[start:start + batch]
        found = memories.by_seq(db, [seq for seq, _ in chunk])
        shared = labels.teammates(db, [memory.id for memory in found.values()])
        stale = staleness.check(db, found.values())
        for seq, score in chunk:
            memory = found.get(seq)
            if memory is None or memory.is_deleted or (memory.is_superseded and not include_superseded):
                continue
            if not scopes.visible(memory, scope, project_id):  # a neighbour or summary lent from elsewhere
                continue
            if memory.id in shared and not team:
                continue
            if sector and memory.sector != sector:
                continue
            changed = stale.get(memory.id, [])
            factor = prior(memory, names, dates) * (
                1.0 if not changed else ELSEWHERE_FACTOR if staleness.only_elsewhere(changed) else STALE_FACTOR)
            hits.append(SearchHit(memory=memory, score=min(1.0, score * factor), shared=shared.get(memory.id),
                                  stale=changed))
        hits.sort(key=lambda hit: (-hit.score, hit.memory.seq))
        shown = spread_sessions(hits)
    hits = shown[:limit]
    terms = query_terms(query)
    words = {hit.memory.seq: _TEXT_WORD.findall(
        f"{hit.memory.content} {' '.join(hit.memory.tags)} {' '.join(hit.memory.files)}".lower()) for hit in hits}
    prose = {hit.memory.seq for hit in hits if hit.memory.source not in SELF_CONTAINED}
    aliases = stem_aliases(db, terms, [words[seq] for seq in prose])
    covered = {seq: coverage(found, terms, aliases=aliases if seq in prose else None) for seq, found in words.items()}
    if said and mode_used != "keyword":
        doubtful = [seq for seq, share in covered.items() if seq in cosines and share < WEAK_COVERAGE]
        cosines = {**cosines, **whole_question_cosines(db, query, doubtful, embedder)}
    for hit in hits:
        hit.weak = is_weak(covered[hit.memory.seq], cosines.get(hit.memory.seq) if mode_used != "keyword" else None)
    _annotate(db, hits, project_id, every_project=scope == "all")
    if track and hits:
        memories.touch_references(db, [hit.memory.id for hit in hits], session_id=session_id)
    return SearchResult(hits=hits, mode_used=mode_used, warnings=warnings)


def expansion_words(db: Database, query: str, best: Sequence[tuple[int, float]]) -> list[str]:
    """Words to add to the keyword query, drawn from the best fused hits (pseudo-relevance feedback, as RM3).

    A question about several events ("how many trips did I take?") names one word for what each memory
    that answers calls by its own ("Lisbon", "flight", "hotel"): the words that weigh most in the best
    hits find the other memories about the same thing. Only hits that someone wrote at length count:
    a memory that is not a captured tool call, a summary or knowledge
    (:data:`ccmemory.vocabulary.SELF_CONTAINED`: their words are code, paths and tool names, which drift
    a query about code towards other code), with :data:`EXPANSION_MIN_WORDS` content words or more (a
    conversation turn is too short to say which of its words matter). A word weighs its share of each
    hit's content words times the hit's score, summed; of the :data:`EXPANSION_POOL` heaviest, the
    :data:`EXPANSION_WORDS` with the most weight times rarity (:func:`term_weights`) and found in two
    memories or more are added, each at :data:`EXPANSION_WEIGHT` of a query word's weight. None when no
    hit qualifies: the search is then the one without expansion.
    """
    if EXPANSION_WORDS <= 0 or not best:
        return []
    asked = set(query_terms(query))
    score = dict(best)
    rows = db.rows(f"SELECT seq, content FROM memories WHERE seq IN ({','.join('?' * len(score))}) "
                   f"AND source NOT IN ({','.join('?' * len(SELF_CONTAINED))})", (*score, *SELF_CONTAINED))
    weight: dict[str, float] = {}
    for row in rows:
        words = [word for word in _CONTENT_WORD.findall(row["content"].lower())
                 if word not in _NOT_NAMES and word not in asked]
        if len(words) < EXPANSION_MIN_WORDS:
            continue
        for word in words:
            weight[word] = weight.get(word, 0.0) + score[row["seq"]] / len(words)
    if not weight:
        return []
    pool = sorted(weight, key=lambda word: (-weight[word], word))[:EXPANSION_POOL]
    frequency = document_frequencies(db, "memories_vocab", pool)
    rarity = term_weights(frequency, db.scalar("SELECT MAX(seq) FROM memories") or 0)
    found = [word for word in pool if frequency[word] > 1]
    return sorted(found, key=lambda word: (-weight[word] * rarity[word], word))[:EXPANSION_WORDS]


def with_session_summaries(db: Database, ranked: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """Give a session's summary the combined score of its matching actions when there are several.

    Among the :data:`SUMMARY_POOL` best candidates, the captured tool calls that did
    something (not the look-ups of :data:`~ccmemory.vocabulary.LOOKUP_TOOLS`) are
    grouped by session. Where a session has at least :data:`SUMMARY_MIN_ACTIONS` of
    them, its summary scores at least ``1 - prod(1 - s)`` over their scores (noisy-OR:
    each further matching step is more evidence that the session as a whole is the
    answer), so it comes before its steps and says what the session did, on which files
    and functions. A session that only looked things up lends its summary nothing.
    """
    pool = ranked[:SUMMARY_POOL]
    if not pool or SUMMARY_MIN_ACTIONS <= 0:
        return ranked
    marks = ",".join("?" * len(pool))
    lookups = ",".join("?" * len(LOOKUP_TOOLS))
    rows = db.rows(
        f"SELECT seq, session_id FROM memories WHERE seq IN ({marks}) AND source = ? AND session_id IS NOT NULL "
        f"AND ifnull(json_extract(metadata, '$.tool'), '') NOT IN ({lookups})",
        (*[seq for seq, _ in pool], CAPTURE_SOURCE, *LOOKUP_TOOLS),
    )
    score = dict(pool)
    actions: dict[str, list[float]] = {}
    for row in rows:
        actions.setdefault(row["session_id"], []).append(min(1.0, score[row["seq"]]))
    evidence = {session: 1.0 - math.prod(1.0 - s for s in found)
                for session, found in actions.items() if len(found) >= SUMMARY_MIN_ACTIONS}
    if not evidence:
        return ranked
    combined = dict(ranked)
    for row in db.rows(f"SELECT seq, session_id FROM memories WHERE session_id IN ({','.join('?' * len(evidence))}) "
                       "AND source = ? AND is_deleted = 0", (*evidence, SUMMARY_SOURCE)):
        combined[row["seq"]] = max(combined.get(row["seq"], 0.0), evidence[row["session_id"]])
    return ordered(combined)


def spread_sessions(hits: list[SearchHit]) -> list[SearchHit]:
    """Hits (best first) with each further captured observation of a session already shown lowered.

    The n-th captured tool call of one session (counting from 0, best first) keeps
    ``(1 - SAME_SESSION_DECAY) ** n`` of its score. A session's tool calls are steps of one
    piece of work: five edits of the same change would crowd out the other sessions that
    touched the same code, while the session's summary and ``memory_timeline`` give its rest.
    Memories that are not captured tool calls (conversation turns, curated memories,
    summaries) are not lowered: each of them stands on its own.
    """
    if SAME_SESSION_DECAY <= 0:
        return hits
    seen: dict[str, int] = {}
    spread = []
    for hit in hits:
        session = hit.memory.session_id if hit.memory.source == CAPTURE_SOURCE else None
        if not session:
            spread.append(hit)
            continue
        earlier = seen.get(session, 0)
        seen[session] = earlier + 1
        spread.append(replace(hit, score=hit.score * (1.0 - SAME_SESSION_DECAY) ** earlier) if earlier else hit)
    return sorted(spread, key=lambda hit: (-hit.score, hit.memory.seq))


def search(db: Database, query: str, **options: Any) -> list[SearchHit]:
    """Like :func:`search_with_info`, returning only the hits."""
    return search_with_info(db, query, **options).hits


def _annotate(db: Database, hits: list[SearchHit], project_id: int, *, every_project: bool) -> None:
    """Superseded-by, related counts, sessions and origins; a session of another project only for a search of
    every project: a user-wide memory does not carry its project's sessions along."""
    ids = [hit.memory.id for hit in hits]
    replaced = memories.superseded_by(db, [hit.memory.id for hit in hits if hit.memory.is_superseded])
    related = memories.related_counts(db, ids)
    found_sessions = sessions.get_sessions(db, [hit.memory.session_id for hit in hits if hit.memory.session_id
                                                and (every_project or hit.memory.project_id == project_id)])
    names = scopes.project_labels(db, {hit.memory.project_id for hit in hits if hit.memory.project_id != project_id})
    for hit in hits:
        hit.origin = scopes.label(hit.memory, project_id, names)
        hit.superseded_by = replaced.get(hit.memory.id)
        hit.related_count = related.get(hit.memory.id, 0)
        hit.session = found_sessions.get(hit.memory.session_id or "")
