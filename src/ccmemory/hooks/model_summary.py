"""Opt-in model-written session summaries through the user's own ``claude -p``.

The Stop hook must never block, so it only starts this module as a detached
process (its own session, no stdio) and returns. The worker asks
``claude -p`` with no tools, no setting sources (so no plugins and none of our
hooks load), no session persistence and one turn, with
:data:`~ccmemory.hooks.privacy.RECURSION_GUARD_ENV` set as a second guard. It
gives up after ``summary.timeout_seconds``, killing the whole ``claude``
process group. Any failure leaves the extractive summary in place. The
rewrite only lands if no newer Stop changed the summary meanwhile.

Run as ``python -m ccmemory.hooks.model_summary <session id> <summary memory id>``; the Stop hook
starts it isolated from the project's directory (:func:`ccmemory.isolation.isolated_module_command`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Sequence

from . import launch, log
from ..privacy import RECURSION_GUARD_ENV

INSTRUCTIONS = (
    "Summarize this Claude Code session for a future session of the same project. In at most 12 terse "
    "bullet points: what was asked, what was done, key decisions and why, important discoveries about the "
    "codebase, problems met and how they were solved, and what is left to do. Plain facts, no preamble.\n\n"
)
MAX_PROMPT_CHARS = 40_000
_child: subprocess.Popen[bytes] | None = None


def build_prompt(summary: str, observations: Sequence[Any]) -> str:
    """The request sent to the model: the extractive summary plus the observations' first lines."""
    lines = [INSTRUCTIONS, "Extractive summary:\n", summary, "\n\nTool calls, in order:\n"]
    budget = MAX_PROMPT_CHARS - sum(len(part) for part in lines)
    for memory in observations:
        line = "- " + memory.content.split("\n", 1)[0][:300] + "\n"
        budget -= len(line)
        if budget < 0:
            lines.append("- …\n")
            break
        lines.append(line)
    return "".join(lines)


def claude_command(command: str, model: str | None) -> list[str]:
    args = [command, "-p", "--setting-sources=", "--tools", "", "--no-session-persistence",
            "--max-turns", "1", "--output-format", "json"]
    if model:
        args += ["--model", model]
    return args


def ask_claude(prompt: str, *, command: str, model: str | None, timeout: float, cwd: str) -> str:
    """The model's summary text; raises ``RuntimeError`` saying why there is none."""
    global _child
    env = dict(os.environ)
    env[RECURSION_GUARD_ENV] = "1"
    try:
        _child = subprocess.Popen(claude_command(command, model), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, cwd=cwd, env=env, start_new_session=True)
    except OSError as exc:
        raise RuntimeError(f"could not start {command!r} ({exc}); install Claude Code or set "
                           "summary.claude_command, or use summary.mode \"extractive\"") from None
    try:
        out, err = _child.communicate(prompt.encode("utf-8"), timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_child()
        raise RuntimeError(f"{command} gave no summary within {timeout:g} s (summary.timeout_seconds)") from None
    code = _child.returncode
    _child = None
    if code != 0:
        first = (err or out).decode("utf-8", "replace").strip().splitlines()[:1]
        raise RuntimeError(f"{command} exited with {code}: {first[0] if first else 'no output'}")
    try:
        result = json.loads(out)
    except ValueError:
        raise RuntimeError(f"{command} did not print JSON: {out[:120]!r}") from None
    if not isinstance(result, dict) or result.get("is_error") or not isinstance(result.get("result"), str):
        raise RuntimeError(f"{command} reported an error: {str(result)[:200]}")
    text = result["result"].strip()
    if not text:
        raise RuntimeError(f"{command} returned an empty summary")
    return text


def _kill_child() -> None:
    """Stop ``claude`` and anything it started: TERM its process group, then KILL."""
    child = _child
    if child is None or child.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
        try:
            os.killpg(child.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            child.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _on_terminate(signum: int, frame: Any) -> None:
    _kill_child()
    os._exit(0)


def run(session_id: str, memory_id: str) -> None:
    """Summarize one session with the model and rewrite its summary memory if it is still current."""
    from .. import config as settings, db as database, paths
    from ..excerpts import cut
    from ..redaction import redact
    from ..session_summary import session_observations, store_summary

    config = settings.load().section("summary")
    db = database.connect(vectors=False)
    try:
        row = db.one("SELECT content, project_id, files FROM memories WHERE id = ?", (memory_id,))
        if row is None:
            log.error("summary", f"summary memory {memory_id} is gone; nothing to rewrite")
            return
        prompt = build_prompt(row["content"], session_observations(db, session_id))
    finally:
        db.close()
    text = ask_claude(prompt, command=config["claude_command"], model=config["model"],
                      timeout=float(config["timeout_seconds"]), cwd=str(paths.data_dir()))
    summary = cut("Session summary (model-written)\n" + redact(text), 8000)
    db = database.connect(vectors=False)
    try:
        with db.transaction():
            current = db.scalar("SELECT content FROM memories WHERE id = ?", (memory_id,))
            if current != row["content"]:
                log.info("summary", f"session {session_id} changed while the model wrote; a newer summary follows")
                return
            store_summary(db, project_id=row["project_id"], session_id=session_id, text=summary,
                          files=json.loads(row["files"] or "[]"), method="claude")
        log.info("summary", f"session {session_id}: model-written summary stored")
        launch.embed_if_pending(db, "summary")  # the Stop hook's worker may have ended before this text came
    finally:
        db.close()


def main(argv: Sequence[str]) -> int:
    signal.signal(signal.SIGTERM, _on_terminate)
    signal.signal(signal.SIGINT, _on_terminate)
    if len(argv) != 2:
        log.error("summary", "usage: python -m ccmemory.hooks.model_summary <session id> <summary memory id>")
        return 0
    try:
        run(argv[0], argv[1])
    except Exception as exc:
        log.error("summary", f"model summary failed, the extractive summary stays: {exc}")
    finally:
        _kill_child()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
