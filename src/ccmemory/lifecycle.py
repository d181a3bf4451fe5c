"""What ccmemory does when a turn ends (Stop) and when a session ends (SessionEnd), on an open database.

The hooks (:mod:`ccmemory.hooks.stop`, :mod:`ccmemory.hooks.session_end`) run these on each
event as it happens; a backfill (:mod:`ccmemory.backfill`) runs the same steps on a past
session read from its transcript, so both store the same summary, local context and promotions.

At the end of a turn: the session's extractive summary is rewritten from what capture stored
(:mod:`ccmemory.session_summary`, which first settles the failures a later call fixed), and the
turn's entry is added to the directory's rolling local context (:mod:`ccmemory.activity`).

At the end of a session: the session is marked over (:func:`ccmemory.sessions.end`, first, so a capture
committing meanwhile is either read here or sees the mark), a session that never reached Stop gets its
summary now, failures are settled, the last turn's local context entry is written when that turn never
reached Stop, its session-tier memories above ``promotion.min_salience`` are promoted to the project tier,
and its curated memories that recur near-identically in another project are proposed for the user's scope
(:func:`ccmemory.scopes.propose`; nothing moves until the user accepts). Only short SQLite writes:
SessionEnd has 1.5 s in all.

After the end, a capture may still come: Claude Code can start a call's hook after SessionEnd, and a
capture the database refused waits in the spill folder for a later capture, of any session, to store it
(:mod:`ccmemory.spill`). :func:`after_late_capture` then does for that session what its end does with
captures, so live capture ends as a backfill of the same transcript does.
Standard library only: the hooks import it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Sequence

from .config import Config


def end_turn(db: Any, config: Config, *, project_id: int, session_id: str, cwd: str | None, root: str,
             prompts: Sequence[str], last_message: str | None, times: dict[str, str] | None = None,
             turn_end: str | None = None) -> str | None:
    """Stop's work: the summary rewritten, the turn's local context entry added; the summary memory id or None.

    ``prompts`` are the prompts typed in the session so far, ``last_message`` Claude's last reply.
    ``times`` (``tool_use_id`` -> when, from the transcript) first put the captured calls at their
    transcript time (:func:`ccmemory.observations.retime`), so the summary and the entry list them in the
    order they happened, not the order their hooks ran. ``turn_end``, when the reply that ended the turn
    was written, bounds the turn's entry: a call that finished later (a subagent still at work) goes to
    the next entry, as a backfill of the same transcript files it. ``cwd`` None (the turn ended in another
    project's directory) adds no entry: that directory's log is not this session's.
    """
    from . import activity
    from .observations import retime
    from .session_summary import session_observations, summarize_from

    if times:
        retime(db, session_id, times)
    observations = session_observations(db, session_id)
    memory_id = summarize_from(db, project_id=project_id, session_id=session_id, root=root,
                               observations=observations, prompts=prompts, last_message=last_message)
    if cwd is not None:
        activity.record_turn(db, directory=cwd, session_id=session_id, observations=observations,
                             prompt=prompts[-1] if prompts else None, last_message=last_message, root=root,
                             enabled_by_default=config.get("local_context", "enabled"), until=turn_end)
    return memory_id


def end_session(db: Any, config: Config, *, project_id: int, session_id: str, cwd: str | None, root: str,
                prompts: Sequence[str], times: dict[str, str] | None = None, last_reply: str | None = None,
                turn_end: str | None = None) -> tuple[str | None, int]:
    """SessionEnd's work (see the module docstring); returns the id of a summary written now (else None) and
    how many memories were promoted. ``times`` as for :func:`end_turn` (calls captured since the last Stop).

    A call whose hook ran after its turn's Stop (Stop does not wait for a failed call's) is put in the local
    context entry of that turn (:func:`ccmemory.activity.add_late_calls`) and, with ``last_reply`` and
    ``turn_end`` (the session's last reply and when it was written, as its transcript shows them), in the
    extractive summary, which Stop wrote without it: both end as a backfill of the transcript writes them.
    ``cwd`` None: as for :func:`end_turn`.
    """
    from . import activity, failures, memories, scopes, sessions
    from .observations import retime
    from .session_summary import session_observations, summarize_from, summary_memory_id

    sessions.end(db, session_id, awaited=retime(db, session_id, times or {}))
    new_summary = None
    existing = summary_memory_id(db, session_id)
    if existing is None:
        new_summary = summarize_from(db, project_id=project_id, session_id=session_id, root=root,
                                     observations=session_observations(db, session_id), prompts=prompts,
                                     last_message=None)
    elif last_reply is not None and turn_end is not None and \
            memories.get(db, existing, project_id=None).metadata.get("method") == "extractive":
        # The calls up to the last turn's end, as the backfill's last turn has them (a subagent's call that
        # finished after the reply belongs to no turn that ended), naming the day that reply was written, as Stop
        # did: a session ended after midnight keeps its day. The rewrite itself is stamped now, so a copy of
        # the memory taken after Stop (an export, an import) sees it is newer.
        summarize_from(db, project_id=project_id, session_id=session_id, root=root, prompts=prompts,
                       observations=[m for m in session_observations(db, session_id) if m.created_at <= turn_end],
                       last_message=last_reply, day=turn_end[:10])
    observations = session_observations(db, session_id)
    failures.settle(db, observations)
    last_prompt = prompts[-1] if prompts else None
    enabled = config.get("local_context", "enabled")
    if cwd is not None:
        activity.add_late_calls(db, directory=cwd, session_id=session_id, observations=observations, root=root,
                                enabled_by_default=enabled)
        activity.record_turn(db, directory=cwd, session_id=session_id, observations=observations,
                             prompt=last_prompt, last_message=None, root=root, enabled_by_default=enabled)
    promoted = memories.promote(db, session_id, float(config.get("promotion", "min_salience")))
    scopes.propose(db, session_id)
    return new_summary, promoted


def after_late_capture(db: Any, config: Config, session_id: str) -> bool:
    """A capture was just stored for ``session_id``: when the session is already over, do what its end does with
    captures (see the module docstring); False, after one look-up, when it is not over.

    The session's captures first take the transcript times its end saw for calls not stored yet
    (:func:`ccmemory.sessions.awaited_calls`), then its failures a later call fixed are settled; a failure
    settled now that the end had promoted (only its salience put it there) goes back to the session tier;
    what is above ``promotion.min_salience`` is promoted. One short transaction, a few statements, in the
    capture child. The summary and the local context entry are left as the end wrote them: rewriting them
    needs the transcript's prompts and last reply, a read of up to 20 MB for each late capture.
    """
    from . import failures, memories, sessions

    awaited = sessions.awaited_calls(db, session_id)
    if awaited is None:
        return False
    from .observations import retime
    from .session_summary import session_observations

    with db.transaction():
        retime(db, session_id, awaited)
        observations = session_observations(db, session_id)
        promoted_gotchas = [m for m in observations if m.category == "gotcha" and m.tier == "project"]
        failures.settle(db, observations)
        memories.demote(db, [m.id for m in promoted_gotchas if m.category != "gotcha"])
        memories.promote(db, session_id, float(config.get("promotion", "min_salience")))
    return True
