"""The hook side of the session summary: the prompts read from the transcript, the model-written summary started.

The summary itself is :mod:`ccmemory.session_summary`; Stop and SessionEnd write it through
:mod:`ccmemory.lifecycle`.
"""

from __future__ import annotations

from ..config import Config
from ..session_summary import MAX_PROMPTS
from . import log


def user_prompts(transcript_path: str | None) -> list[str]:
    """The prompts the user typed, in order, from the transcript JSONL (unknown lines are skipped), at most
    :data:`MAX_PROMPTS`; read within :mod:`ccmemory.transcript`'s caps."""
    from .. import transcript
    from ..errors import ValidationError

    if not transcript_path:
        return []
    prompts: list[str] = []
    try:
        for entry in transcript.entries(transcript_path, b'"user"'):
            prompt = transcript.typed_prompt(entry)
            if prompt:
                prompts.append(prompt)
                if len(prompts) >= MAX_PROMPTS:
                    break
    except (OSError, ValidationError) as exc:
        log.error("summary", f"transcript not read: {exc}")
        return []
    return prompts


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

