"""The one way every hook entry point runs: guard, read, dispatch, never fail.

A hook must not slow or break Claude Code: whatever happens here (bad input,
locked or broken database, a bug) is logged to the hook log and the process
exits 0 without a word on stdout. Only SessionStart prints, and only its JSON.
"""

from __future__ import annotations

import os
import sys
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

from . import log

#: Hook name (the argument of hooks/run.py) -> "module:function" of its handler: each event's module is named for it.
HANDLERS = {
    "post_tool_use": "post_tool_use:handle",
    "stop": "stop:handle",
    "session_end": "session_end:handle",
    "session_start": "session_start:handle",
}


#: Payload key under which the runner records when the payload arrived (the observation's time).
RECEIVED_AT = "_ccmemory_received_at"


def _handler(name: str) -> Callable[[dict[str, Any], Any, str], None]:
    from importlib import import_module

    module, _, function = HANDLERS[name].partition(":")
    return getattr(import_module(f"{__package__}.{module}"), function)


def run(name: str, detach_capture: bool = False) -> None:
    """Run the hook ``name`` on the payload from stdin; returns normally whatever happens.

    ``detach_capture`` lets PostToolUse fork its storing into a child (see
    :mod:`.detach`). Only :func:`main`, which ends the process with ``os._exit``
    in parent and child alike, may ask for it: a fork inside a longer-lived
    process (a test run, an embedding caller) would leave two copies of it running.
    """
    from .. import privacy
    from . import payload as payloads

    if name not in HANDLERS:
        log.error(name or "hook", f"unknown hook {name!r}: hooks/run.py takes one of {', '.join(HANDLERS)}")
        return
    try:
        switched_off = privacy.disabled_by_env()
        if switched_off:
            log.debug(name, f"hook skipped: {switched_off}")
            return
        data = payloads.read()
        dropped = payloads.unusable_fields(data)
        if dropped:
            log.error(name, f"ignored {', '.join(dropped)}: too long, or holding a NUL byte or a lone surrogate")
        cwd = payloads.text(data, "cwd") or os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
        opted_out = privacy.opted_out(cwd)
        if opted_out:
            log.debug(name, f"hook skipped: {opted_out}")
            return
        from ..config import load
        from . import detach

        session_id = payloads.text(data, "session_id")
        if name in detach.WAIT_SECONDS and session_id:
            still = detach.wait_for_captures(session_id, name)
            if still:
                log.error(name, f"{still} capture(s) of this session were still running; going on without them")
        if name == "post_tool_use" and session_id:
            from .. import clock

            data[RECEIVED_AT] = clock.now()
            if detach_capture and detach.to_background(session_id):
                return
            try:
                _handler(name)(data, load(), cwd)
            except Exception as exc:  # logged before the marker goes, so whoever waits for it sees the error
                _log_failure(name, exc)
            finally:
                detach.finished(session_id)
            return
        config = load()
        if name in ("session_start", "stop"):  # once a session and once a turn, not on every tool call
            for problem in config.problems:
                log.error("config", problem)
        _handler(name)(data, config, cwd)
    except Exception as exc:
        _log_failure(name, exc)


def _log_failure(name: str, exc: Exception) -> None:
    from .payload import PayloadError

    if isinstance(exc, PayloadError):
        log.error(name, str(exc))
    else:
        log.error(name, f"{type(exc).__name__}: {exc} ({_where(exc)})")


def _where(exc: BaseException) -> str:
    """File and line where an exception was raised, for the log."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return "unknown location"
    return f"{os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"


def main(name: str) -> None:
    """Entry-point body: run the hook, flush stdout, exit 0 without interpreter teardown."""
    try:
        run(name, detach_capture=True)
    except BaseException:  # KeyboardInterrupt, SystemExit: still exit 0
        pass
    try:
        sys.stdout.flush()
    except Exception:
        pass
    os._exit(0)
