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
from .vocabulary import SELF_CONTAINED

#: A name of up to three words, each starting with a capital letter of a script that has them ("Melanie",
#: "Dr. Ada Lovelace", "Özil", "Маша"), and the colon after it; the capitals are checked by :func:`speaker`.
_SPEAKER = re.compile(r"([^\W\d_][\w.'-]*(?: [^\W\d_][\w.'-]*){0,2}): ")
#: Characters of a turn read for its speaker: a name of up to three words and the colon after it.
HEAD_CHARS = 80
#: Names of a query looked up as speakers; for each, the latest memories holding the word that are searched for
#: the latest turns of a session holding it, and how many of those turns are read.
_NAMES_LOOKED_UP = 8
_MATCHES_SEARCHED = 2000
_TURNS_READ = 50
#: How many of a name's turns another speaker's turn must follow (and at least half of those a memory of their
#: session follows).
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


def turn_heads(db: Database, seqs: Sequence[int]) -> dict[int, str]:
    """The first :data:`HEAD_CHARS` characters of each memory of ``seqs`` that is a conversation's turn: not a
    captured call, a summary or knowledge."""
    wanted = list(dict.fromkeys(seqs))
    if not wanted:
        return {}
    return {row["seq"]: row["head"] for row in db.rows(
        f"SELECT seq, substr(content, 1, {HEAD_CHARS}) AS head FROM memories "
        f"WHERE seq IN ({','.join('?' * len(wanted))}) AND source NOT IN ({','.join('?' * len(SELF_CONTAINED))})",
        (*wanted, *SELF_CONTAINED))}


def named(db: Database, names: Sequence[str], *, covered: str, params: Sequence[object]) -> list[str]:
    """Which of ``names`` (lower case, :func:`ccmemory.search.query_names`) name a speaker of the conversations
    stored where a search looks (``covered``: its SQL condition on ``memories m``).

    Read in the latest :data:`_TURNS_READ` turns of a session that hold the word where the search looks: the
    name's turns start with a speaker's name of which it is a word ("ada" for "Dr. Ada Lovelace: ..."), and
    people in a conversation take turns: of its turns that a memory of their session follows, at least half are
    followed by another speaker's turn (:func:`another_speaker`, :func:`turn_heads`, as a reply is found), and
    at least :data:`_MIN_ANSWERED`. Notes that start with their topic ("Postgres: ...") follow one another on one topic,
    and memories added on their own have no next turn. Bounded: the first :data:`_NAMES_LOOKED_UP` names, each
    among the latest :data:`_MATCHES_SEARCHED` memories holding it.
    """
    from .sessions import neighbour_sql

    kinds = ",".join("?" * len(SELF_CONTAINED))
    next_turn, _ = neighbour_sql("seq", before=False)
    found: list[str] = []
    for name in names[:_NAMES_LOOKED_UP]:
        rows = db.rows(
            f"WITH turns AS (SELECT m.seq FROM memories m WHERE m.seq IN (SELECT rowid FROM memories_fts "
            f"WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT {_MATCHES_SEARCHED}) AND {covered} "
            f"AND m.is_deleted = 0 AND m.session_id IS NOT NULL AND m.source NOT IN ({kinds}) "
            f"ORDER BY m.seq DESC LIMIT {_TURNS_READ}) "
            f"SELECT substr(m.content, 1, {HEAD_CHARS}) AS head, {next_turn} AS next "
            f"FROM memories m WHERE m.seq IN turns",
            ('"' + name.replace('"', '""') + '"', *params, *SELF_CONTAINED))
        followed = [row for row in rows
                    if row["next"] is not None and name in (speaker(row["head"]) or "").lower().split()]
        following = turn_heads(db, [row["next"] for row in followed])
        answered = sum(another_speaker(row["head"], following.get(row["next"], "")) for row in followed)
        if answered >= _MIN_ANSWERED and 2 * answered >= len(followed):
            found.append(name)
    return found
