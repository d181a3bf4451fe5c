"""The backfill benchmark's transcripts read back, through ccmemory's own reader, as the calls they were made from."""

from __future__ import annotations

import gzip
import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from ccmemory import transcript

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import coderecall  # noqa: E402
import transcripts  # noqa: E402
import year_of_use  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "bench-data" / "coderecall-dev.json.gz"
if not DATA.exists():
    DATA = Path("/work/shared/bench-data/coderecall-dev.json.gz")


@pytest.fixture(scope="module")
def coderecall_sessions() -> list[dict]:
    if not DATA.exists():
        pytest.skip(f"{DATA} is not here (it lives in ../shared/bench-data beside the project)")
    with gzip.open(DATA, "rt", encoding="utf-8") as handle:
        data = json.load(handle)
    sessions = data["sessions"]
    return [sessions[0], sessions[3], sessions[57], sessions[-1]]


def test_encoded_cwd_is_claude_codes_folder_name():
    assert transcripts.encode_cwd("/home/u/proj") == "-home-u-proj"
    assert transcripts.encode_cwd("/home/u/my.proj_2") == "-home-u-my-proj-2"


def test_coderecall_sessions_read_back_as_their_hook_payloads(tmp_path: Path, coderecall_sessions: list[dict]):
    project = str(tmp_path / "project")
    config = tmp_path / "claude"
    for raw in coderecall_sessions:
        session = coderecall.substitute(raw, project, str(tmp_path / "transcripts"))
        written = transcripts.write_session(transcripts.coderecall_session(session, project), config)
        assert written == [config / "projects" / transcripts.encode_cwd(project) / f"{session['session_id']}.jsonl"]
        found = list(transcript.records(str(written[0]), root=transcript.projects_dir(str(config))))
        assert transcript.complete(found) == found, "every turn of a finished session is complete"
        calls = [record for record in found if isinstance(record, transcript.ToolCall)]
        payloads = [event["payload"] for event in session["events"] if event["hook"] == "PostToolUse"]
        assert [(c.tool_use_id, c.tool_name, c.tool_input, c.tool_use_result) for c in calls] == \
            [(p["tool_use_id"], p["tool_name"], p["tool_input"], p["tool_response"]) for p in payloads]
        assert all(c.answered and c.is_error is False for c in calls)
        assert {(c.session_id, c.cwd, c.sidechain) for c in calls} == {(session["session_id"], project, False)}
        prompts = [record for record in found if isinstance(record, transcript.Prompt)]
        assert [(p.text, p.prompt_id) for p in prompts] == \
            [(session["transcript"][0]["message"]["content"], payloads[0]["prompt_id"])]
        stop = next(event["payload"] for event in session["events"] if event["hook"] == "Stop")
        assert isinstance(found[-1], transcript.Reply) and found[-1].stop_reason == "end_turn"
        assert found[-1].text == stop["last_assistant_message"]
        assert found[0].timestamp == session["transcript"][0]["timestamp"]
    listed = transcript.session_files(str(config))
    assert sorted(f.session_id for f in listed) == sorted(s["session_id"] for s in coderecall_sessions)


def test_coderecall_sessions_can_be_dated_from_a_given_moment(tmp_path: Path, coderecall_sessions: list[dict]):
    start = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    project = str(tmp_path / "project")
    session = coderecall.substitute(coderecall_sessions[1], project, str(tmp_path / "transcripts"))
    written = transcripts.write_session(transcripts.coderecall_session(session, project, start), tmp_path / "claude")
    found = list(transcript.records(str(written[0])))
    assert found[0].timestamp == "2026-01-02T03:04:05.000Z"
    assert found[-1].timestamp > found[0].timestamp
    assert written[0].stat().st_mtime == pytest.approx(datetime.fromisoformat(found[-1].timestamp).timestamp())


def test_a_generated_year_reads_back_whole(tmp_path: Path):
    config = tmp_path / "claude"
    plan = year_of_use.generate(tmp_path / "projects", sessions=12, calls=600, seed=7)
    for session in plan.sessions:
        transcripts.write_session(session, config, extra=True)
    listed = transcript.session_files(str(config))
    assert len(listed) == 12
    assert {f.project for f in listed} == {transcripts.encode_cwd(session.cwd) for session in plan.sessions}
    made = {call.tool_use_id: call for call in year_of_use.all_calls(plan)}
    read: dict[str, transcript.ToolCall] = {}
    for found in listed:
        for path in [found.path, *(path for _, path in found.subagents)]:
            records = list(transcript.records(path, root=transcript.projects_dir(str(config))))
            assert transcript.complete(records) == records
            read.update((r.tool_use_id, r) for r in records if isinstance(r, transcript.ToolCall))
    assert read.keys() == made.keys()
    for tool_use_id, call in made.items():
        got = read[tool_use_id]
        assert (got.tool_name, got.tool_input, got.is_error) == (call.name, call.input, call.error is not None)
        assert got.tool_use_result == (call.response if call.error is None else f"Error: {call.error}")
    assert any(call.error for call in made.values()) and any(found.subagents for found in listed)
    assert any(r.sidechain for r in read.values())
