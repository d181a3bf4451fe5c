"""Past Claude Code sessions brought into memory from their transcripts (``ccmemory backfill``).

Each session Claude Code kept under its ``projects`` folder (:func:`ccmemory.transcript.session_files`)
is replayed through the code the hooks run, in this one process on one database connection: per
tool call, the PostToolUse payload is rebuilt from the transcript and stored by the capture code
(:func:`ccmemory.observations.skip_reason`, :func:`~ccmemory.observations.from_payload`,
:func:`~ccmemory.observations.store`: same text, skips, size limits, redaction, private spans,
ccmemory's own tools left out); per turn that ended, Stop's work
(:func:`ccmemory.lifecycle.end_turn`: the summary, the local context); per session, SessionEnd's
(:func:`ccmemory.lifecycle.end_session`: settled failures, promotions). Rows get the transcript's
times (:class:`ccmemory.clock.replaying`), session id and working directory.

What the transcript gives for the payload (:func:`ccmemory.observations.call_payload`): ``tool_name``,
``tool_input`` and ``tool_use_id`` from
the assistant's ``tool_use`` block; ``tool_response`` from the next user line's ``toolUseResult``
(the result's text when that line answers several calls at once); a result marked ``is_error`` as a
PostToolUseFailure whose ``error`` is the result's text; ``cwd`` and ``session_id`` from the line;
the time from the result's line (the hook's arrival time is a few milliseconds later). Stop's
``last_assistant_message`` is the turn's last text block of Claude's.

Safe beside live capture and to run again: a tool call is keyed by its ``tool_use_id`` in its
session, so one already stored (live or by an earlier run) is not stored again; a session that
already has its summary does not get one again (only its missing calls are added). A transcript
written to within :data:`ACTIVE_SECONDS` may belong to a running session: only its complete turns
(:func:`ccmemory.transcript.complete`) are taken, and SessionEnd's work is left to that session.
Each session is stored in one transaction, so an interrupted run keeps the sessions done and never
half of one. Nothing is taken from an opted-out project (``.ccmemory-off``), with ``CCMEMORY_DISABLE``
set or with capture off (``capture.enabled``).

Standard library only and cheap to import: SessionStart imports it to count the sessions a new
project could bring in (:func:`past_sessions`).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

    from .config import Config
    from .db import Database
    from .transcript import Record, SessionFile, ToolCall

#: A transcript changed this recently may still be written by a running session.
ACTIVE_SECONDS = 120
#: Paths named in a report (each with why it was left out or what was wrong with it).
MAX_NAMED = 50
#: Transcript files counted for SessionStart's notice, at most.
MAX_COUNTED = 10_000
#: ``meta`` key saying SessionStart told a project about backfill once (``<key><project id>``).
OFFERED_KEY = "backfill_offered:"


class Report:
    """What a run found, took and left out, and why; per project too (:meth:`as_dict` for ``--json``)."""

    def __init__(self) -> None:
        self.found = 0
        self.taken = 0
        self.skipped: dict[str, int] = {}
        self.stored = 0
        self.calls_skipped: dict[str, int] = {}
        self.problems: dict[str, int] = {}
        self.named: list[dict[str, str]] = []
        self.projects: dict[str, dict[str, int]] = {}
        self.interrupted = False
        self.dry_run = False

    def skip(self, reason: str, path: str | None = None) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        if path is not None:
            self.name(path, reason)

    def skip_call(self, reason: str) -> None:
        self.calls_skipped[reason] = self.calls_skipped.get(reason, 0) + 1

    def problem(self, kind: str, count: int = 1, path: str | None = None) -> None:
        self.problems[kind] = self.problems.get(kind, 0) + count
        if path is not None:
            self.name(path, kind)

    def name(self, path: str, why: str) -> None:
        if len(self.named) < MAX_NAMED:
            self.named.append({"path": path, "why": why})

    def project(self, root: str) -> dict[str, int]:
        return self.projects.setdefault(root, {"sessions": 0, "tool_calls": 0})

    def as_dict(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "interrupted": self.interrupted,
                "sessions": {"found": self.found, "taken": self.taken, "skipped": dict(self.skipped)},
                "tool_calls": {"stored": self.stored, "skipped": dict(self.calls_skipped)},
                "problems": dict(self.problems), "named": list(self.named),
                "projects": {root: dict(counts) for root, counts in self.projects.items()}}

    def summary_line(self) -> str:
        """One line: sessions found, taken and skipped (with reasons), tool calls stored and skipped."""
        def reasons(counts: dict[str, int]) -> str:
            return f" ({'; '.join(f'{n} {why}' for why, n in sorted(counts.items(), key=lambda kv: -kv[1]))})" \
                if counts else ""

        verb = "would be stored" if self.dry_run else "stored"
        return (f"Sessions: {self.found} found, {self.taken} taken, {sum(self.skipped.values())} skipped"
                f"{reasons(self.skipped)}. Tool calls: {self.stored} {verb}, "
                f"{sum(self.calls_skipped.values())} skipped{reasons(self.calls_skipped)}.")


def run(db: Database, config: Config, *, config_dir: str | None = None, project: str | None = None,
        since: str | None = None, dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None, report: Report | None = None,
        stop: Callable[[], bool] | None = None) -> Report:
    """Bring in every past session (or those of ``project``, a path inside it; ended on or after ``since``, an
    ISO date) from Claude Code's transcripts under ``config_dir`` (default: its configuration folder).

    ``dry_run`` stores nothing and says what would be stored. ``progress(done, total)`` is called after
    each session. ``stop()`` is asked before each session: when it says so the run ends there, the report
    marked interrupted (a Ctrl+C the caller caught: the report then counts exactly the sessions kept). Pass
    ``report`` to keep what was done when a KeyboardInterrupt ends the run (it is raised on, after the
    session under way was rolled back; one that was committed just before may then be missing from the count).
    """
    from . import clock, privacy, projects, transcript

    report = report if report is not None else Report()
    report.dry_run = dry_run
    left_out: list[tuple[str, str]] = []
    files = sorted(transcript.session_files(config_dir, left_out), key=_started)
    for path, why in left_out:
        report.problem(why, path=path)
    report.found = len(files)
    switched_off = privacy.disabled_by_env()
    if switched_off is None and not config.get("capture", "enabled"):
        switched_off = "capture is off (capture.enabled)"
    if switched_off:
        for _ in files:
            report.skip(switched_off)
        return report
    wanted = projects.project_root(project) if project else None
    cutoff = clock.parse(since) if since else None
    replay = _Replay(db, config, report, os.path.realpath(transcript.projects_dir(config_dir)), dry_run)
    for done, found in enumerate(files, 1):
        if stop is not None and stop():
            report.interrupted = True
            break
        replay.session(found, wanted, cutoff)
        if progress is not None:
            progress(done, len(files))
    return report


#: How much of a transcript's start is read to find when its session began.
_HEAD_BYTES = 16 * 1024


def _started(found: SessionFile) -> tuple[str, str]:
    """When the session began (its first timestamped line; else the file's time), and its path.

    Sessions are taken oldest first, as live capture stored them: search breaks equal scores by the
    order memories were stored in, so the order decides ties.
    """
    import json
    import time

    from . import safe_files
    from .errors import ValidationError

    try:
        head = safe_files.read_head(found.path, _HEAD_BYTES)
        for line in head.split(b"\n"):
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            stamp = entry.get("timestamp") if isinstance(entry, dict) else None
            if isinstance(stamp, str) and stamp:
                return (stamp, found.path)
        return (time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(os.path.getmtime(found.path))), found.path)
    except (OSError, ValidationError):
        return ("", found.path)


class _Replay:
    """One run's state: the database, the settings, what is known of each working directory."""

    def __init__(self, db: Database, config: Config, report: Report, base: str, dry_run: bool) -> None:
        self.db = db
        self.config = config
        self.report = report
        self.base = base
        self.dry_run = dry_run
        self.roots: dict[str, str] = {}
        self.project_ids: dict[str, int] = {}
        self.opted_out: dict[str, str | None] = {}

    # -- reading ------------------------------------------------------------------------------------
    def _read(self, path: str) -> list[Record] | None:
        from . import transcript
        from .errors import ValidationError

        problems: dict[str, int] = {}
        try:
            found = list(transcript.records(path, root=self.base, problems=problems))
        except (OSError, ValidationError) as exc:
            self.report.skip("transcript not readable", path=f"{path}: {exc}")
            return None
        for kind, count in problems.items():
            self.report.problem(kind, count, path=path)
        try:
            if os.path.getsize(path) > transcript.MAX_TRANSCRIPT_BYTES:
                self.report.problem(f"transcript over {transcript.MAX_TRANSCRIPT_BYTES // (1024 * 1024)} MiB, "
                                    "only its start read", path=path)
        except OSError:
            pass
        return found

    def _root(self, cwd: str) -> str:
        """The project a working directory belongs to; for a directory that is gone, the known project that
        held it (any location a project was seen at: a second clone deleted since counts), else the path itself
        (as :func:`ccmemory.projects.project_root` would have said)."""
        from . import projects
        from .safe_files import under

        if cwd not in self.roots:
            if os.path.isdir(cwd):
                self.roots[cwd] = projects.project_root(cwd)
            else:
                path = os.path.normpath(cwd)
                known = [row["path"] for row in self.db.rows(
                    "SELECT path FROM project_aliases UNION SELECT path FROM projects") if under(path, row["path"])]
                self.roots[cwd] = max(known, key=len) if known else path
        return self.roots[cwd]

    def _opted_out(self, cwd: str) -> str | None:
        from . import privacy

        if cwd not in self.opted_out:
            self.opted_out[cwd] = privacy.opted_out(cwd, environ={})
        return self.opted_out[cwd]

    # -- one session ----------------------------------------------------------------------------------
    def session(self, found: SessionFile, wanted: str | None, cutoff: str | None) -> None:
        from . import clock, transcript
        from .transcript import Prompt, ToolCall

        report = self.report
        main = self._read(found.path)
        if main is None:
            return
        agents: list[ToolCall] = []
        for _agent, path in found.subagents:
            agents.extend(r for r in self._read(path) or [] if isinstance(r, ToolCall))
        if not main:
            report.skip("no prompt or tool call in it", path=found.path)
            return
        cwd = next((r.cwd for r in main if r.cwd), None)
        if cwd is None:
            report.skip("no working directory recorded", path=found.path)
            return
        active = _newest_change(found) > _time() - ACTIVE_SECONDS
        if active:
            main = transcript.complete(main)
            if not main:
                report.skip("still being written, no complete turn yet")
                return
        last = max(record.moment for record in main)
        first = next((r.timestamp for r in main if r.timestamp), None) or last
        if active:
            agents = [call for call in agents if call.moment <= last]
        if cutoff and _parsed(last) < cutoff:
            report.skip("ended before --since")
            return
        root = self._root(cwd)
        if wanted is not None and root != wanted:
            report.skip("in another project")
            return
        opted = self._opted_out(cwd)
        if opted:
            report.skip("project opted out (.ccmemory-off)", path=found.path)
            return
        if not os.path.isdir(cwd):
            report.problem("working directory no longer exists (kept under its path)", path=cwd)
        session_id = next((r.session_id for r in main if r.session_id), None) or found.session_id
        turns = _turns(main, agents)
        self.db.give_way()  # a hook's capture waiting for the lock goes first: sessions are taken back to back
        with self.db.transaction():
            summarised = self._summarised(session_id)
            stored = 0
            if not self.dry_run:
                from . import sessions

                with clock.replaying(_parsed(first)):
                    sessions.ensure(self.db, session_id, self._project_id(root), transcript_path=found.path)
            prompts: list[str] = []
            for prompt, records, reply in turns:
                if isinstance(prompt, Prompt):
                    prompts.append(prompt.text)
                for call in records:
                    stored += self._call(call, session_id, found.path, cwd)
                if reply is not None and not summarised and not self.dry_run:
                    self._end_turn(session_id, cwd, root, prompts, reply)
            if not summarised and not active and not self.dry_run:
                from . import lifecycle
                from .session_summary import MAX_PROMPTS

                with clock.replaying(_parsed(last)):
                    lifecycle.end_session(self.db, self.config, project_id=self._project_id(root),
                                          session_id=session_id, cwd=cwd, root=root, prompts=prompts[:MAX_PROMPTS])
        if summarised and not stored:
            report.skip("already in memory")
            return
        report.taken += 1
        counts = report.project(root)
        counts["sessions"] += 1
        counts["tool_calls"] += stored
        if active:
            report.problem("still being written: taken up to its last complete turn", path=found.path)

    def _summarised(self, session_id: str) -> bool:
        from .session_summary import summary_memory_id

        return summary_memory_id(self.db, session_id) is not None

    def _project_id(self, root: str) -> int:
        from . import projects

        if root not in self.project_ids:
            self.project_ids[root] = projects.project_id(self.db, root)
        return self.project_ids[root]

    def _end_turn(self, session_id: str, cwd: str, root: str, prompts: list[str], reply: Any) -> None:
        from . import clock, lifecycle
        from .session_summary import MAX_PROMPTS

        moment = _parsed(reply.moment)
        with clock.replaying(moment):
            lifecycle.end_turn(self.db, self.config, project_id=self._project_id(root), session_id=session_id,
                               cwd=cwd, root=root, prompts=prompts[:MAX_PROMPTS], last_message=reply.text,
                               turn_end=moment)

    def _call(self, call: ToolCall, session_id: str, transcript_path: str, session_cwd: str) -> int:
        """Store one tool call as capture would have; 1 when stored (or, dry, when it would be), else 0."""
        from . import clock, observations

        if not call.answered:
            self.report.skip_call("no result (interrupted)")
            return 0
        cwd = call.cwd or session_cwd
        if cwd != session_cwd and self._opted_out(cwd):
            self.report.skip_call("in an opted-out directory")
            return 0
        data = observations.call_payload(call, session_id=session_id, transcript_path=transcript_path, cwd=cwd)
        reason = observations.skip_reason(data, self.config)
        if reason:
            self.report.skip_call(reason.kind)
            return 0
        if self.db.scalar("SELECT 1 FROM memories WHERE session_id = ? AND dedupe_key = ?",
                          (session_id, call.tool_use_id)):
            self.report.skip_call("already stored")
            return 0
        self.report.stored += 1
        if self.dry_run:
            return 1
        root = self._root(cwd)
        observation = observations.from_payload(data, self.config, cwd=cwd, root=root)
        moment = _parsed(call.moment)
        with clock.replaying(moment):
            observations.store(self.db, observation, project_id=self._project_id(root), session_id=session_id,
                               tool_use_id=call.tool_use_id, created_at=moment)
        return 1


def _turns(main: list[Record], agents: list[ToolCall]) -> list[tuple[Record | None, list[ToolCall], Any]]:
    """``(prompt, calls, reply)`` per turn: the typed prompt, or the :class:`~ccmemory.transcript.TurnStart` of a turn
    Claude Code started itself (None before the first), the calls made in it (the
    subagents' calls placed by time: one that finished after the turn's reply goes to the next turn, or to a
    last turn without prompt or reply, as the hooks' next Stop or SessionEnd sees it) in the order capture
    would have stored them, and the reply that ended it (None when the turn never ended: no Stop)."""
    from .transcript import TURN_STARTS, Reply, ToolCall

    turns: list[tuple[Record | None, list[ToolCall], Any]] = []
    prompt: Record | None = None
    calls: list[ToolCall] = []
    last: Record | None = None
    for record in main:
        if isinstance(record, TURN_STARTS):
            if calls or last is not None or prompt is not None:
                turns.append((prompt, calls, last if isinstance(last, Reply) else None))
            prompt, calls, last = record, [], None
            continue
        if isinstance(record, ToolCall):
            calls.append(record)
        if not record.sidechain:
            last = record
    turns.append((prompt, calls, last if isinstance(last, Reply) else None))
    starts = [turn[0].moment if turn[0] is not None else "" for turn in turns]
    for call in agents:
        moment = call.moment
        index = max((i for i, start in enumerate(starts) if start <= moment), default=0)
        reply = turns[index][2]
        if reply is not None and reply.moment < moment:  # a subagent still at work after the reply:
            index += 1                                      # the turn's Stop did not see it, the next does
            if index == len(turns):
                turns.append((None, [], None))
        turns[index][1].append(call)
    for _prompt, made, _reply in turns:
        made.sort(key=lambda call: call.moment)
    return turns


def _parsed(moment: str) -> str:
    """A transcript's timestamp in our format; a missing or unreadable one is now."""
    from . import clock

    try:
        return clock.parse(moment)
    except ValueError:
        return clock.now()


def _time() -> float:
    import time

    return time.time()


def _newest_change(found: SessionFile) -> float:
    newest = 0.0
    for path in [found.path, *(path for _agent, path in found.subagents)]:
        try:
            newest = max(newest, os.stat(path).st_mtime)
        except OSError:
            pass
    return newest


# -- SessionStart's notice ------------------------------------------------------------------------------------


def past_sessions(transcript_path: str | None, session_id: str | None) -> int:
    """How many other sessions Claude Code kept beside this one's transcript (its project's folder), at most
    :data:`MAX_COUNTED`; 0 without a transcript path. Only names are listed, nothing is read."""
    if not transcript_path:
        return 0
    folder = os.path.dirname(transcript_path)
    own = f"{session_id}.jsonl" if session_id else None
    count = 0
    try:
        with os.scandir(folder) as scan:
            for item in scan:
                if item.name.endswith(".jsonl") and item.name != own and item.is_file():
                    count += 1
                    if count >= MAX_COUNTED:
                        break
    except OSError:
        return 0
    return count


def offer_once(db: Database, project_id: int, transcript_path: str | None, session_id: str | None) -> int:
    """The number of past sessions to offer in SessionStart's context: non-zero once per project, the first time
    a session starts in a project with no memories while Claude Code kept earlier transcripts of it."""
    if db.scalar("SELECT 1 FROM memories WHERE project_id = ? LIMIT 1", (project_id,)):
        return 0
    key = f"{OFFERED_KEY}{project_id}"
    if db.scalar("SELECT 1 FROM meta WHERE key = ?", (key,)):
        return 0
    count = past_sessions(transcript_path, session_id)
    if count:
        from . import clock

        with db.transaction():
            db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)", (key, clock.now()))
    return count


def notice(count: int) -> str:
    """The line SessionStart (and ``doctor``) shows about past sessions that can be brought in."""
    return (f"Claude Code kept {count} earlier session{'s' if count != 1 else ''} of this project that ccmemory "
            f"has not recorded. The user can bring them into memory with `ccmemory backfill --project .` "
            f"(nothing is imported until they run it).")


def not_recorded(db: Database, config_dir: str | None = None) -> int:
    """How many sessions Claude Code kept that ccmemory has no record of (by session id); only names are listed."""
    from . import transcript

    found = {item.session_id for item in transcript.session_files(config_dir)}
    if not found:
        return 0
    known = {row["id"] for row in db.rows("SELECT id FROM sessions")}
    return len(found - known)
