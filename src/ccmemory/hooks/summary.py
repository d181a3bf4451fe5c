"""The hook side of the session summary: the transcript read (prompts, calls and their times), the model-written
summary started.

The summary itself is :mod:`ccmemory.session_summary`; Stop and SessionEnd write it through
:mod:`ccmemory.lifecycle`.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..transcript import Session

from ..config import Config
from ..session_summary import MAX_PROMPTS
from . import log


def read_transcript(transcript_path: str | None, session_id: str | None,
                    last_message: str | None = None) -> Session:
    """What the session's transcripts say (:func:`ccmemory.transcript.read_session`): the prompts typed (at most
    :data:`MAX_PROMPTS`), the calls made and when, when the turn ended; an empty reading without a transcript
    or when it cannot be read (logged), so the hooks go on with what capture stored."""
    from .. import transcript
    from ..errors import ValidationError

    if not transcript_path:
        return transcript.Session()
    try:
        return transcript.read_session(transcript_path, session_id, last_message=last_message,
                                       max_prompts=MAX_PROMPTS)
    except (OSError, ValidationError) as exc:
        log.error("summary", f"transcript not read: {exc}")
        return transcript.Session()


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

