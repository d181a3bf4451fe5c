"""Write Claude Code session transcripts (JSONL) for the backfill benchmarks, as Claude Code 2.1.330 writes them.

The shape follows ``../shared/specs/claude-code.md`` §2.3: one JSON object per line under
``<config dir>/projects/<encoded cwd>/<session id>.jsonl``; every conversation line carries
``parentUuid`` (a chain, ``null`` at the root), ``isSidechain``, ``uuid``, ``timestamp``,
``sessionId``, ``cwd``, ``gitBranch``, ``version``, ``userType`` and ``entrypoint``; a typed prompt
is a user line whose content is a string (with ``promptId`` and ``permissionMode``); each tool
call is an assistant line holding one ``tool_use`` block, answered by the next user line's
``tool_result`` block with the result's text and ``is_error``, and the line's ``toolUseResult``
(what the PostToolUse hook receives as ``tool_response``; for a failed call Claude Code writes
the error string there, ``"Error: …"``); a turn ends on an assistant ``text`` block with
``stop_reason`` ``"end_turn"``. A subagent's lines (``isSidechain`` true, ``agentId``) go to
``<session id>/subagents/agent-<agent id>.jsonl`` beside the session's file.

:func:`coderecall_session` turns one session of ``coderecall-dev.json.gz`` (hook payloads) into
the transcript those hooks came from, so that ``ccmemory.transcript.records`` reads back the same
tool calls (ids, names, inputs, and ``toolUseResult`` equal to the payloads' ``tool_response``).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

VERSION = "2.1.330"
MODEL = "claude-sonnet-4-5"


def encode_cwd(cwd: str) -> str:
    """The folder name Claude Code gives a working directory under ``projects/``: every character that is not
    an ASCII letter or digit becomes ``-`` (``/home/u/proj`` → ``-home-u-proj``)."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def transcript_path(config_dir: Path, cwd: str, session_id: str) -> Path:
    return config_dir / "projects" / encode_cwd(cwd) / f"{session_id}.jsonl"


@dataclass
class Call:
    """One tool call: what the assistant asked for and what came back.

    ``response`` is the structured result (``toolUseResult``; the hook's ``tool_response``); ``error`` is set
    for a failed call (PostToolUseFailure's ``error``: the tool_result's text, ``is_error`` true).
    ``subagent`` holds the turns a Task call's subagent ran (written to its own file).
    """

    tool_use_id: str
    name: str
    input: dict[str, Any]
    response: Any = None
    error: str | None = None
    text: str | None = None
    subagent: list["Turn"] | None = None
    agent_id: str | None = None


@dataclass
class Turn:
    """A typed prompt, the calls Claude made for it (with optional text or thinking before a call) and its reply."""

    prompt: str
    calls: list[Call]
    reply: str
    prompt_id: str | None = None
    permission_mode: str = "default"
    notes: dict[int, str] = field(default_factory=dict)


@dataclass
class Session:
    session_id: str
    cwd: str
    branch: str
    start: datetime
    turns: list[Turn]
    step: timedelta = timedelta(seconds=1)


def iso(moment: datetime) -> str:
    """Claude Code's timestamp format: UTC with milliseconds and a ``Z``."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def result_text(call: Call) -> str | list[dict[str, Any]]:
    """The ``tool_result`` content Claude Code shows the model for a call (its readable form of the result; an MCP
    tool's content blocks as they are)."""
    if call.error is not None:
        return call.error
    if call.text is not None:
        return call.text
    response, name = call.response, call.name
    if isinstance(response, str):
        return response
    if isinstance(response, list):
        return response
    if isinstance(response, dict) and isinstance(response.get("content"), list):  # Task: the subagent's answer
        return [block for block in response["content"] if isinstance(block, dict)]
    if not isinstance(response, dict):
        return json.dumps(response)
    if name == "Bash":
        parts = [response.get("stdout") or "", response.get("stderr") or ""]
        return "\n".join(part for part in parts if part) or "(Bash completed with no output)"
    if name == "Read" and isinstance(response.get("file"), dict):
        info = response["file"]
        first = info.get("startLine", 1) if isinstance(info.get("startLine"), int) else 1
        return "\n".join(f"{first + n:>6}\t{line}" for n, line in enumerate(str(info.get("content", "")).split("\n")))
    if name in ("Edit", "MultiEdit"):
        return (f"The file {call.input.get('file_path')} has been updated. Here's the result of running `cat -n` "
                f"on a snippet of the edited file:\n" + str(call.input.get("new_string", ""))[:2000])
    if name == "Write":
        return f"File created successfully at: {call.input.get('file_path')}"
    if name in ("Grep", "Glob") and isinstance(response.get("filenames"), list):
        names = response["filenames"]
        if name == "Glob":
            return "\n".join(names) or "No files found"
        return f"Found {len(names)} file{'s' if len(names) != 1 else ''}\n" + "\n".join(names)
    if name == "Grep" and isinstance(response.get("content"), str):
        return response["content"]
    return json.dumps(response)


class _Lines:
    """Builds one file's lines: the uuid chain and the clock."""

    def __init__(self, session: Session, *, sidechain: bool = False, agent_id: str | None = None,
                 prefix: str = "") -> None:
        self.session = session
        self.sidechain = sidechain
        self.agent_id = agent_id
        self.prefix = prefix or session.session_id
        self.lines: list[dict[str, Any]] = []
        self.parent: str | None = None
        self.clock = session.start
        self.count = 0

    def add(self, kind: str, body: dict[str, Any]) -> str:
        self.count += 1
        uuid = f"{self.prefix}-{self.count:05d}"
        line: dict[str, Any] = {"parentUuid": self.parent, "isSidechain": self.sidechain}
        if self.agent_id:
            line["agentId"] = self.agent_id
        line.update({"userType": "external", "entrypoint": "cli", "cwd": self.session.cwd,
                     "sessionId": self.session.session_id, "version": VERSION, "gitBranch": self.session.branch,
                     "type": kind, **body, "uuid": uuid, "timestamp": iso(self.clock)})
        self.lines.append(line)
        self.parent = uuid
        self.clock += self.session.step
        return uuid

    def assistant(self, message_id: str, block: dict[str, Any], stop_reason: str | None) -> str:
        message = {"id": message_id, "type": "message", "role": "assistant", "model": MODEL, "content": [block],
                   "stop_reason": stop_reason, "stop_sequence": None,
                   "usage": {"input_tokens": 4, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 12000,
                             "output_tokens": 120, "service_tier": "standard"}}
        return self.add("assistant", {"message": message, "requestId": f"req_{message_id[4:]}"})

    def turns(self, turns: list[Turn], files: dict[Path, list[dict[str, Any]]], folder: Path) -> None:
        for number, turn in enumerate(turns):
            prompt_id = turn.prompt_id or f"{self.prefix}-prompt-{number}"
            self.add("user", {"promptId": prompt_id, "message": {"role": "user", "content": turn.prompt},
                              "permissionMode": turn.permission_mode})
            for index, call in enumerate(turn.calls):
                message_id = f"msg_{self.prefix}_{number}_{index}"
                note = turn.notes.get(index)
                if note is not None:
                    self.assistant(message_id, {"type": "text", "text": note}, None)
                used = self.assistant(message_id, {"type": "tool_use", "id": call.tool_use_id, "name": call.name,
                                                   "input": call.input}, "tool_use")
                if call.subagent is not None:
                    agent = call.agent_id or f"a{call.tool_use_id[-12:]}"
                    nested = _Lines(self.session, sidechain=True, agent_id=agent, prefix=f"{self.prefix}-{agent}")
                    nested.clock = self.clock
                    nested.turns(call.subagent, files, folder)
                    files[folder / self.session.session_id / "subagents" / f"agent-{agent}.jsonl"] = nested.lines
                    self.clock = max(self.clock, nested.clock)
                result = {"tool_use_id": call.tool_use_id, "type": "tool_result", "content": result_text(call),
                          "is_error": call.error is not None}
                self.add("user", {"promptId": prompt_id, "message": {"role": "user", "content": [result]},
                                  "toolUseResult": call.response if call.error is None else f"Error: {call.error}",
                                  "sourceToolAssistantUUID": used})
            self.assistant(f"msg_{self.prefix}_{number}_end", {"type": "text", "text": turn.reply}, "end_turn")


def session_files(session: Session, folder: Path) -> dict[Path, list[dict[str, Any]]]:
    """The lines of a session's transcript and of its subagents' transcripts, by path under ``folder`` (the
    project's folder in ``projects/``)."""
    files: dict[Path, list[dict[str, Any]]] = {}
    main = _Lines(session)
    main.turns(session.turns, files, folder)
    files[folder / f"{session.session_id}.jsonl"] = main.lines
    return files


def write_session(session: Session, config_dir: Path, *, extra: bool = False) -> list[Path]:
    """Write the session (and its subagents) under ``config_dir/projects/<encoded cwd>/``, each file last modified
    at its last line's time; returns the paths.

    ``extra`` adds the bookkeeping lines Claude Code writes besides the conversation (a
    ``file-history-snapshot`` per prompt, a ``system`` ``stop_hook_summary`` per turn, a closing
    ``last-prompt``), which a reader must pass over.
    """
    folder = config_dir / "projects" / encode_cwd(session.cwd)
    written = []
    for path, lines in session_files(session, folder).items():
        if extra and not lines[0].get("isSidechain"):
            lines = _with_bookkeeping(lines, session.session_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            for line in lines:
                handle.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
        last = max(datetime.strptime(line["timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
                   for line in lines if "timestamp" in line).timestamp()
        os.utime(path, (last, last))  # last written when its session ended, as a past session's file was
        written.append(path)
    return written


def _with_bookkeeping(lines: list[dict[str, Any]], session_id: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for line in lines:
        message = line.get("message", {})
        if line["type"] == "user" and isinstance(message.get("content"), str):
            out.append({"type": "file-history-snapshot", "messageId": line["uuid"], "isSnapshotUpdate": False,
                        "snapshot": {"messageId": line["uuid"], "trackedFileBackups": {},
                                     "timestamp": line["timestamp"]}})
        out.append(line)
        if line["type"] == "assistant" and message.get("stop_reason") == "end_turn":
            out.append({"parentUuid": line["uuid"], "isSidechain": False, "type": "system",
                        "subtype": "stop_hook_summary", "hookCount": 1, "hookInfos": [], "hookErrors": [],
                        "preventedContinuation": False, "stopReason": "", "hasOutput": False, "level": "suggestion",
                        "timestamp": line["timestamp"], "uuid": line["uuid"] + "-s", "sessionId": session_id})
    prompts = [line["message"]["content"] for line in lines
               if line["type"] == "user" and isinstance(line["message"].get("content"), str)]
    if prompts:
        out.append({"type": "last-prompt", "lastPrompt": prompts[-1][:200], "sessionId": session_id})
    return out


def coderecall_session(raw: dict[str, Any], project: str, start: datetime | None = None) -> Session:
    """One ``coderecall-dev`` session (placeholders already replaced, with ``project`` as the cwd) as the
    transcript Claude Code would have written: the request (the dataset transcript's first line), one call per
    PostToolUse payload with its ``tool_response`` as ``toolUseResult``, the Stop payload's
    ``last_assistant_message`` as the final reply; times from the dataset's transcript, or from ``start`` on."""
    first = raw["transcript"][0]
    if start is None:
        start = datetime.strptime(first["timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    calls, reply, prompt_id, mode = [], "", None, "default"
    for event in raw["events"]:
        payload = event["payload"]
        if event["hook"] in ("PostToolUse", "PostToolUseFailure"):
            prompt_id = prompt_id or payload.get("prompt_id")
            mode = payload.get("permission_mode", mode)
            calls.append(Call(payload["tool_use_id"], payload["tool_name"], payload["tool_input"],
                              payload.get("tool_response"), error=payload.get("error")))
        elif event["hook"] == "Stop":
            reply = payload.get("last_assistant_message") or ""
    turn = Turn(first["message"]["content"], calls, reply, prompt_id=prompt_id, permission_mode=mode)
    return Session(raw["session_id"], project, first.get("gitBranch") or "main", start, [turn])
