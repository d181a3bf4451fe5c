"""What Stop and SessionEnd read of a session's transcripts: one byte budget for the transcript and its subagents'
(the newest subagents first), calls before the last turn kept without their input or result, and a transcript
path no file can have (a NUL byte, a lone surrogate) read as no transcript, the summary written all the same."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from testing.hooks import assert_quiet_success, bash_call, common, rows, run_hook

from ccmemory import transcript
from ccmemory.hooks import summary

SESSION = "8d83c0de-0000-4000-8000-0000000000b1"


def line(kind: str, stamp: str, content: Any, **fields: Any) -> dict[str, Any]:
    role = "assistant" if kind == "assistant" else "user"
    return {"type": kind, "timestamp": stamp, "sessionId": SESSION, "cwd": "/p", "isSidechain": False,
            "uuid": f"u-{stamp}", "message": {"id": f"m-{stamp}", "role": role, "content": content,
                                             "stop_reason": fields.pop("stop_reason", None)}, **fields}


def call_lines(tool_use_id: str, stamp: str, result: str = "ok") -> list[dict[str, Any]]:
    """A Bash call and its result, the result written at ``stamp``."""
    return [line("assistant", stamp, [{"type": "tool_use", "id": tool_use_id, "name": "Bash",
                                       "input": {"command": f"echo {tool_use_id}"}}]),
            line("user", stamp, [{"type": "tool_result", "tool_use_id": tool_use_id, "content": result}],
                 toolUseResult={"stdout": result, "stderr": ""})]


def write(path: Path, lines: list[dict[str, Any]], padding: int = 0) -> Path:
    """The lines, then ``padding`` bytes of result lines (of 512 KB each) that name no call."""
    path.parent.mkdir(parents=True, exist_ok=True)
    filler = json.dumps(line("user", "2025-01-01T00:00:00.000Z",
                             [{"type": "tool_result", "tool_use_id": "none", "content": "x" * (512 * 1024)}])) + "\n"
    with open(path, "w") as handle:
        handle.writelines(json.dumps(each) + "\n" for each in lines)
        handle.write(filler * (padding // len(filler)))
    return path


def subagent(folder: Path, number: int, tool_use_id: str, stamp: str, padding: int) -> Path:
    path = write(folder / SESSION / "subagents" / f"agent-a{number}.jsonl", call_lines(tool_use_id, stamp), padding)
    os.utime(path, ns=(number * 10**9, number * 10**9))  # agent 1 written first, the last one last
    return path


def main_transcript(folder: Path) -> Path:
    return write(folder / f"{SESSION}.jsonl", [line("user", "2025-01-01T00:00:01.000Z", "Do it.")])


def test_the_transcript_and_its_subagents_share_one_budget_newest_first(tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "-p"
    path = main_transcript(folder)
    mib = 1024 * 1024
    for number in range(1, 7):  # six subagents of 3 MiB, agent 6 the newest
        subagent(folder, number, f"toolu_a{number}", f"2025-01-01T00:00:1{number}.000Z", 3 * mib)
    reading = transcript.read_session(str(path), SESSION, max_bytes=7 * mib)
    assert 6 * mib < reading.bytes_read <= 7 * mib + transcript.MAX_LINE_BYTES
    # Agents 6 and 5 read whole, agent 4 in part (its call is at its start), 1 to 3 never opened.
    assert sorted(call.tool_use_id for call in reading.calls) == ["toolu_a4", "toolu_a5", "toolu_a6"]
    assert reading.left_out == 3
    whole = transcript.read_session(str(path), SESSION, max_bytes=100 * mib)
    assert len(whole.calls) == 6 and whole.left_out == 0
    # The default budget is the one cap of a single transcript, for all of them.
    assert transcript.SESSION_MAX_BYTES == transcript.MAX_TRANSCRIPT_BYTES


def test_the_light_reading_keeps_only_the_last_turns_inputs_and_results(tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "-p"
    lines = [line("user", "2025-01-01T00:00:01.000Z", "First."), *call_lines("toolu_1", "2025-01-01T00:00:02.000Z"),
             line("assistant", "2025-01-01T00:00:03.000Z", [{"type": "text", "text": "Done."}],
                  stop_reason="end_turn"),
             line("user", "2025-01-01T00:00:04.000Z", "Second."), *call_lines("toolu_2", "2025-01-01T00:00:05.000Z")]
    path = write(folder / f"{SESSION}.jsonl", lines)
    subagent(folder, 1, "toolu_old", "2025-01-01T00:00:02.500Z", 0)
    subagent(folder, 2, "toolu_new", "2025-01-01T00:00:04.500Z", 0)
    light = {call.tool_use_id: call for call in transcript.read_session(str(path), SESSION, light=True).calls}
    full = {call.tool_use_id: call for call in transcript.read_session(str(path), SESSION).calls}
    assert list(light) == list(full) == ["toolu_1", "toolu_old", "toolu_new", "toolu_2"]
    for name in ("toolu_1", "toolu_old"):  # before the last turn: only what the hooks use
        assert (light[name].tool_input, light[name].result_text, light[name].tool_use_result) == ({}, None, None)
        assert light[name].result_timestamp == full[name].result_timestamp and light[name].is_error is False
    for name in ("toolu_2", "toolu_new"):
        assert light[name].result_text == "ok" and light[name].tool_use_result == {"stdout": "ok", "stderr": ""}
        assert light[name].tool_input == full[name].tool_input
    assert all(call.result_text == "ok" for call in full.values())


@pytest.mark.parametrize("path", ["/tmp/a\x00b.jsonl", "/tmp/\ud800.jsonl"])
def test_a_path_no_file_can_have_reads_as_no_transcript(path: str) -> None:
    reading = summary.read_transcript(path, SESSION, "Done.")
    assert reading.prompts == [] and reading.calls == [] and reading.turn_end is None


def test_stop_and_session_end_read_at_most_the_budget_of_many_large_subagents(home: Path, project_dir: Path) -> None:
    """Seven subagents of 3.5 MiB (over the 20 MiB budget in all): the newest are read (their calls get the
    transcript's times), the oldest is not (its call keeps the time its capture gave it)."""
    folder = project_dir / "transcripts"
    path = main_transcript(folder)
    for number in range(1, 8):
        subagent(folder, number, f"toolu_a{number}", f"2025-01-01T00:00:1{number}.000Z", 4 * 1024 * 1024)
    for tool_use_id in ("toolu_a1", "toolu_a7"):
        payload = bash_call(SESSION, project_dir, f"echo {tool_use_id}", "ok", tool_use_id)
        assert_quiet_success(run_hook("post_tool_use", {**payload, "transcript_path": str(path)}, home))
    stop = common(SESSION, project_dir, "Stop", transcript_path=str(path), last_assistant_message="Done.",
                  stop_hook_active=False)
    assert_quiet_success(run_hook("stop", stop, home))
    assert_quiet_success(run_hook("session_end", {**common(SESSION, project_dir, "SessionEnd", reason="exit"),
                                                   "transcript_path": str(path)}, home))
    times = {row["dedupe_key"]: row["created_at"] for row in
             rows(home, "SELECT dedupe_key, created_at FROM memories WHERE dedupe_key IS NOT NULL")}
    assert times["toolu_a7"].startswith("2025-01-01")  # read: retimed from the transcript
    assert not times["toolu_a1"].startswith("2025-01-01")  # past the budget: never read
    [session] = rows(home, "SELECT summary, ended_at FROM sessions WHERE id = ?", (SESSION,))
    assert session["summary"] and session["ended_at"] is not None


@pytest.mark.parametrize("event", ["stop", "session_end"])
def test_a_nul_in_the_transcript_path_still_gets_the_session_summarized(home: Path, project_dir: Path,
                                                                          event: str) -> None:
    session_id = "nul-path"
    assert_quiet_success(run_hook("post_tool_use", bash_call(session_id, project_dir, "pytest -q", "3 passed", "t1"),
                                  home))
    name = "Stop" if event == "stop" else "SessionEnd"
    payload = common(session_id, project_dir, name, transcript_path=str(project_dir / "a\x00b.jsonl"),
                     last_assistant_message="The tests pass.", stop_hook_active=False, reason="exit")
    assert_quiet_success(run_hook(event, payload, home))
    [session] = rows(home, "SELECT summary, ended_at FROM sessions WHERE id = ?", (session_id,))
    assert session["summary"] and "pytest -q" in session["summary"]
    if event == "session_end":
        assert session["ended_at"] is not None
