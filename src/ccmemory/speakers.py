"""Who says a conversation turn, when it starts as a transcript's line does ("Melanie: ..."), and what search
makes of it.

A conversation stored one turn per memory (an import, notes written as a chat) names each turn's speaker at its
start. Search reads that twice: a question lends the reply after it more (:func:`ccmemory.search.replies`), and
the vector side reads a question without the names of the conversations' speakers
(:func:`ccmemory.search.vector_query`).
Captured calls, summaries and knowledge are never turns, even when one starts like a speaker's line ("Bash: ...").
"""

from __future__ import annotations

import re
from typing import Sequence

from .db import Database

#: A name of up to three words (each a capital of any script: "Melanie", "Dr. Ada Lovelace", "Özil", "Маша")
#: and the colon after it; the capitals are checked by :func:`speaker`.
_SPEAKER = re.compile(r"([^\W\d_][\w.'-]*(?: [^\W\d_][\w.'-]*){0,2}): ")
#: Characters of a turn read for its speaker: a name of up to three words and the colon after it.
HEAD_CHARS = 80
#: Names of a query looked up as speakers, and the latest memories holding each that are read for it.
_NAMES_LOOKED_UP = 8
_TURNS_READ = 50
#: How many of a name's turns must be answered by another speaker (and at least half of those followed by a turn).
_MIN_ANSWERED = 2
_POSSESSIVE = re.compile(r"(?<=\w)['’]s\b")


def speaker(turn: str) -> str | None:
    """Who says ``turn`` when it starts as a transcript's line does ("Melanie: ...", "Dr. Ada Lovelace: ..."),
    else None."""
    found = _SPEAKER.match(turn)
    return found.group(1) if found and all(word[0].isupper() for word in found.group(1).split()) else None


def another_speaker(turn: str, following: str) -> bool:
    """Whether both turns name their speaker and ``following`` is said by someone else."""
    asker, answerer = speaker(turn), speaker(following)
    return asker is not None and answerer is not None and asker != answerer


def without_possessives(text: str) -> str:
    """``text`` with no possessive "'s" ("caroline's dog" -> "caroline dog"): a name as its owner's turns say it."""
    return _POSSESSIVE.sub("", text)


def named(db: Database, names: Sequence[str], *, covered: str, params: Sequence[object]) -> list[str]:
    """Which of ``names`` (lower case, :func:`ccmemory.search.query_names`) name a speaker of the conversations
    stored where a search looks (``covered``: its SQL condition on ``memories m``).

    Read in the latest :data:`_TURNS_READ` memories of a session holding the name: its turns start with a
    speaker's name of which it is a word ("ada" for "Dr. Ada Lovelace: ..."), and people in a conversation take
    turns: at least half of its turns followed by another are followed by another speaker's, and at least
    :data:`_MIN_ANSWERED`. Notes that start with their topic ("Postgres: ...") follow one another on one topic,
    and memories added on their own have no next turn. Bounded: the first :data:`_NAMES_LOOKED_UP` names.
    """
    from .embeddings import SELF_CONTAINED
    from .sessions import neighbour_sql

    kinds = ",".join("?" * len(SELF_CONTAINED))
    found: list[str] = []
    for name in names[:_NAMES_LOOKED_UP]:
        rows = db.rows(
            f"SELECT substr(m.content, 1, {HEAD_CHARS}) AS head, "
            f"{neighbour_sql('seq', before=False, filters=f' AND n.source NOT IN ({kinds})')} AS next "
            f"FROM memories m WHERE m.seq IN (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? "
            f"ORDER BY rowid DESC LIMIT {_TURNS_READ}) AND {covered} AND m.is_deleted = 0 "
            f"AND m.session_id IS NOT NULL AND m.source NOT IN ({kinds})",
            (*SELF_CONTAINED, '"' + name.replace('"', '""') + '"', *params, *SELF_CONTAINED))
        followed = [row for row in rows if row["next"] is not None
                    and name in (speaker(row["head"]) or "").lower().split()]
        if len(followed) < _MIN_ANSWERED:
            continue
        wanted = list({row["next"] for row in followed})
        heads = {row["seq"]: row["head"] for row in db.rows(
            f"SELECT seq, substr(content, 1, {HEAD_CHARS}) AS head FROM memories "
            f"WHERE seq IN ({','.join('?' * len(wanted))})", wanted)}
        answered = sum(another_speaker(row["head"], heads.get(row["next"], "")) for row in followed)
        if answered >= _MIN_ANSWERED and 2 * answered >= len(followed):
            found.append(name)
    return found
