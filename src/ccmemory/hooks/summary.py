"""The hook side of the session summary: the transcript read (prompts, calls and their times), the model-written
summary started.

The summary itself is :mod:`ccmemory.session_summary`; Stop and SessionEnd write it through
:mod:`ccmemory.lifecycle`.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..db import Database
    from ..transcript import Session

from ..config import Config
from ..session_summary import MAX_PROMPTS
from . import log


def session_project(db: Database, session_id: str, cwd: str, *, new: bool = True) -> tuple[int, bool, str] | None:
    """The session's project (the one it was recorded in; else, with ``new``, the one of ``cwd``), whether ``cwd``
    is in it, and the root its summary names files from; None for a session not recorded when not ``new``.

    Claude may end a turn in another repository's directory (``cd ../other``): the session's summary still
    belongs to the session's project, and the other directory's local context gets nothing of it.
    """
    from .. import projects

    known = db.scalar("SELECT project_id FROM sessions WHERE id = ?", (session_id,))
    if known is None and not new:
        return None
    here = projects.project_id(db, cwd, create=known is None)
    if known is None or here == int(known):
        assert here is not None  # created when the session was not known
        return here, True, str(projects.project_root(cwd))
    return int(known), False, str(projects.get(db, int(known))["path"])


def read_transcript(transcript_path: str | None, session_id: str | None,
                    last_message: str | None = None) -> Session:
    """What the session's transcripts say (:func:`ccmemory.transcript.read_session`, light: only the last turn's
    calls keep their input and result): the prompts typed (at most :data:`MAX_PROMPTS`), the calls made and when,
    when the turn ended, from at most :data:`ccmemory.transcript.SESSION_MAX_BYTES` of the transcript and its
    subagents' together; an empty reading without a transcript or when it cannot be read (logged: a path that
    cannot be opened, or holds a NUL byte or a lone surrogate), so the hooks go on with what capture stored."""
    from .. import transcript
    from ..errors import ValidationError

    if not transcript_path:
        return transcript.Session()
    try:
        reading = transcript.read_session(transcript_path, session_id, last_message=last_message,
                                          max_prompts=MAX_PROMPTS, light=True)
    except (OSError, ValidationError, ValueError, UnicodeError) as exc:  # ValueError: a NUL byte in the path
        log.error("summary", f"transcript not read: {exc}")
        return transcript.Session()
    if reading.left_out:
        log.debug("summary", f"{reading.left_out} subagent transcript(s) not read: the {reading.bytes_read:,} bytes "
                             f"read reached the budget of {transcript.SESSION_MAX_BYTES:,}")
    return reading


def start_model_summary(config: Config, session_id: str, memory_id: str) -> None:
    """With ``summary.mode = "claude"``, start the detached model-written summary; never waits for it."""
    if config.get("summary", "mode") == "claude":
        import subprocess
        import sys

        from .. import isolation
        from ..privacy import RECURSION_GUARD_ENV

        env = isolation.child_env()
        env[RECURSION_GUARD_ENV] = "1"
        # The worker runs in its own process session, so Stop returns at once and Claude Code never waits.
        subprocess.Popen(
            isolation.isolated_module_command(sys.executable, isolation.package_parent(),
                                              "ccmemory.hooks.model_summary", session_id, memory_id),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, env=env, close_fds=True,
        )

