"""Stop (the end of every turn): rewrite the session's summary and add the turn to the local context.

Both are built from what capture already stored for the session, so the capture path does no
extra work (:func:`ccmemory.lifecycle.end_turn`): the summary by :mod:`ccmemory.session_summary`
(extractive now; with ``summary.mode = "claude"`` a detached model-written one follows,
:mod:`.model_summary`), the turn's entry of the rolling local context by :mod:`ccmemory.activity`.
When the turn's captures wait for vectors and no process embeds them (no MCP server runs), the
embedding worker starts detached (:func:`.launch.embed_if_pending`).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..transcript import Session

from ..config import Config
from . import launch, log, payload as payloads
from .summary import read_transcript, session_project, start_model_summary

#: How long Stop waits, at most, for the captures of the turn's calls whose hooks Claude Code has not started yet.
LATE_CAPTURE_SECONDS = 5.0


def handle(data: dict[str, Any], config: Config, cwd: str) -> None:
    """Write the extractive summary now; start the model-written one detached when configured."""
    from .. import clock, db as database, lifecycle, sessions

    session_id = payloads.capturing_session(data, config, "stop", "no summary written")
    if session_id is None:
        return
    transcript = payloads.text(data, "transcript_path")
    last_message = payloads.text(data, "last_assistant_message")
    reading = read_transcript(transcript, session_id, last_message)
    db = database.connect(vectors=False)
    try:
        found = session_project(db, session_id, cwd)
        assert found is not None  # new (the default): a session not recorded yet takes cwd's project
        project, here, root = found
        sessions.ensure(db, session_id, project, transcript_path=transcript)
        _wait_for_late_captures(db, config, reading, session_id, transcript or "", cwd)
        # What the turn writes (a new summary, the turn's entry) is stamped when its reply was written, as a
        # backfill of the transcript stamps it, not when this hook happened to run.
        with clock.replaying(reading.turn_end or clock.now()):
            memory_id = lifecycle.end_turn(db, config, project_id=project, session_id=session_id,
                                           cwd=cwd if here else None, root=root, prompts=reading.prompts,
                                           last_message=last_message, times=reading.call_times(),
                                           turn_end=reading.turn_end)
        launch.embed_if_pending(db, "stop")
    finally:
        db.close()
    if memory_id is None:
        log.debug("stop", f"session {session_id}: nothing to summarize yet")
        return
    start_model_summary(config, session_id, memory_id)


def _wait_for_late_captures(db: Any, config: Config, reading: Session, session_id: str, transcript: str,
                            cwd: str) -> None:
    """Wait (bounded) for the captures of the calls the transcript shows answered in this turn (after the reply
    that ended the turn before, not after the one that ended this one) that capture would store
    (:func:`ccmemory.observations.skip_reason`), so the turn's summary and entry hold them.

    A call whose result is an error is not waited for: a call the user denied has a result but no hook, and
    Stop must not wait seconds for it each time. If one is captured late, the next Stop or SessionEnd still
    gives it its transcript time."""
    from ..observations import call_payload, skip_reason
    from .detach import wait_for_calls

    since, until = reading.since or "", reading.turn_end or "~"
    expected = {call.tool_use_id for call in reading.calls
                if since < (call.result_timestamp or "") <= until and call.cwd in (None, cwd) and not call.is_error
                and skip_reason(call_payload(call, session_id=session_id, transcript_path=transcript, cwd=cwd),
                                config) is None}
    if expected:
        missing = wait_for_calls(db, session_id, expected, LATE_CAPTURE_SECONDS)
        if missing:
            log.debug("stop", f"{len(missing)} call(s) of the turn not captured within {LATE_CAPTURE_SECONDS:g} s: "
                              f"{', '.join(sorted(missing)[:5])}")
