"""SessionEnd (end, summary if missing, promotion) and SessionStart (budgeted context) as real hook processes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from testing.env import isolated_env
from testing.hooks import (
    assert_quiet_success, bash_call, common, log_text, memories_of, rows, run_hook, tool_call, write_config,
    write_transcript,
)

from ccmemory import db as database, memories, projects, redaction, sessions
from ccmemory import privacy
from ccmemory.hooks import context
from testing.repo import SOURCE


def session_end(session_id: str, project: Path, reason: str = "other") -> dict:
    return common(session_id, project, "SessionEnd", prompt_id="p1", reason=reason)


def session_start(session_id: str, project: Path, source: str = "startup") -> dict:
    return common(session_id, project, "SessionStart", source=source, model="claude-sonnet-4-6")


def injected(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stderr.decode()
    output = json.loads(result.stdout)
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    return output["hookSpecificOutput"]["additionalContext"]


# -- SessionEnd ----------------------------------------------------------------------------------------

def test_session_end_ends_and_promotes_only_salient_memories(home: Path, project_dir: Path) -> None:
    for payload in (
        bash_call("e1", project_dir, "ls", "a b", "t1"),
        tool_call("e1", project_dir, "Read", {"file_path": str(project_dir / "a.py")}, "x", "t2"),
        tool_call("e1", project_dir, "Bash", {"command": "make"}, None, "t3", event="PostToolUseFailure",
                  error="make: *** No rule to make target"),
    ):
        assert_quiet_success(run_hook("post_tool_use", payload, home))
    db = database.connect(vectors=False)
    try:
        read = next(m for m in memories.list_memories(db, session_id="e1") if m.content.startswith("Read"))
        for _ in range(4):
            memories.reinforce(db, read.id, 0.3, project_id=None)
    finally:
        db.close()
    assert_quiet_success(run_hook("session_end", session_end("e1", project_dir), home))
    tiers = {m["content"].split("\n")[0]: m["tier"] for m in memories_of(home, "e1")}
    assert tiers["Ran: ls (Run it)"] == "session"
    assert tiers["Read a.py"] == "project"
    assert tiers["Ran: make (failed)"] == "project"
    [session] = rows(home, "SELECT ended_at FROM sessions WHERE id = 'e1'")
    assert session["ended_at"] is not None


def test_a_call_the_user_interrupted_is_not_promoted_as_a_failure(home: Path, project_dir: Path) -> None:
    """Esc on a watch-mode test run stays in its session; a real failure of the same session is promoted."""
    for payload in (
        tool_call("e9", project_dir, "Bash", {"command": "npm test -- --watch"}, None, "t1",
                  event="PostToolUseFailure", error="[Request interrupted by user for tool use]", is_interrupt=True),
        tool_call("e9", project_dir, "Bash", {"command": "make"}, None, "t2", event="PostToolUseFailure",
                  error="make: *** No rule to make target", is_interrupt=False),
    ):
        assert_quiet_success(run_hook("post_tool_use", payload, home))
    assert_quiet_success(run_hook("session_end", session_end("e9", project_dir), home))
    stored = {m["content"].split("\n")[0]: (m["tier"], m["category"]) for m in memories_of(home, "e9")
              if m["source"] == "capture"}
    assert stored == {"Ran: npm test -- --watch (interrupted)": ("session", "general"),
                      "Ran: make (failed)": ("project", "gotcha")}


def test_session_end_writes_the_summary_when_no_turn_reached_stop(home: Path, project_dir: Path) -> None:
    write_transcript(project_dir / "e2.jsonl", ["Rename the config module"])
    assert_quiet_success(run_hook("post_tool_use", bash_call("e2", project_dir, "git mv a b", "", "t1"), home))
    assert_quiet_success(run_hook("session_end", session_end("e2", project_dir, "prompt_input_exit"), home))
    [summary] = [m for m in memories_of(home, "e2") if m["source"] == "summary"]
    assert "Request: Rename the config module" in summary["content"]
    assert_quiet_success(run_hook("session_end", session_end("e2", project_dir), home))
    assert len([m for m in memories_of(home, "e2") if m["source"] == "summary"]) == 1


def test_session_end_of_an_unknown_session_does_nothing(home: Path, project_dir: Path) -> None:
    assert_quiet_success(run_hook("session_end", session_end("never-seen", project_dir), home))
    assert rows(home, "SELECT * FROM sessions") == []
    assert log_text(home) == ""


@pytest.mark.parametrize("raw", [b"", b"{]", b'{"reason": "clear"}', b'["SessionEnd"]'])
def test_session_end_never_fails_on_bad_input(home: Path, raw: bytes) -> None:
    assert_quiet_success(run_hook("session_end", None, home, raw=raw))


def test_session_end_leaves_no_process_behind(home: Path, project_dir: Path) -> None:
    """In the default (extractive) mode SessionEnd starts nothing: its process tree is empty when it exits."""
    assert_quiet_success(run_hook("post_tool_use", bash_call("e3", project_dir, "ls", "", "t1"), home))
    probe = ("import subprocess, sys, json;"
             f"p = subprocess.Popen([sys.executable, {str(Path(__file__).parents[1] / 'hooks' / 'run.py')!r}, 'session_end'],"
             " stdin=subprocess.PIPE, start_new_session=True);"
             f"p.communicate({json.dumps(json.dumps(session_end('e3', project_dir)))}.encode());"
             "import os, signal\n"
             "try:\n    os.killpg(p.pid, 0); print('alive')\n"
             "except ProcessLookupError:\n    print('gone')")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, env=isolated_env(home), timeout=60)
    assert result.stdout.decode().strip() == "gone", result.stderr.decode()


# -- captures that come after SessionEnd --------------------------------------------------------------

def by_call(home: Path, session_id: str) -> dict[str, dict]:
    return {m["dedupe_key"]: m for m in memories_of(home, session_id) if m["source"] == "capture"}


def failing_call(session_id: str, project: Path, command: str, tool_use_id: str) -> dict:
    return tool_call(session_id, project, "Bash", {"command": command}, None, tool_use_id,
                     event="PostToolUseFailure", error="Exit code 1\n1 failed")


def test_a_fixing_call_captured_after_session_end_settles_the_failure_it_promoted(home: Path,
                                                                                  project_dir: Path) -> None:
    """Claude Code may start a call's hook after SessionEnd: the failure SessionEnd promoted as a gotcha is
    settled and goes back to the session tier, as a backfill of the session (which sees both calls) leaves it."""
    assert_quiet_success(run_hook("post_tool_use", failing_call("l1", project_dir, "pytest -q", "t1"), home))
    assert_quiet_success(run_hook("session_end", session_end("l1", project_dir), home))
    assert (by_call(home, "l1")["t1"]["category"], by_call(home, "l1")["t1"]["tier"]) == ("gotcha", "project")
    assert_quiet_success(run_hook("post_tool_use", bash_call("l1", project_dir, "pytest tests/", "3 passed", "t2"),
                                  home))
    stored = by_call(home, "l1")
    failure = stored["t1"]
    assert (failure["category"], failure["tier"]) == ("general", "session")
    assert failure["salience"] <= 0.5 and json.loads(failure["metadata"])["fixed_by"] == stored["t2"]["id"]
    assert stored["t2"]["tier"] == "session"
    assert "session l1 had ended: settled and promoted again" in log_text(home)


def test_a_failing_call_captured_after_session_end_is_promoted(home: Path, project_dir: Path) -> None:
    assert_quiet_success(run_hook("post_tool_use", bash_call("l2", project_dir, "ls", "a", "t1"), home))
    assert_quiet_success(run_hook("session_end", session_end("l2", project_dir), home))
    assert_quiet_success(run_hook("post_tool_use", failing_call("l2", project_dir, "make", "t2"), home))
    stored = by_call(home, "l2")
    assert (stored["t2"]["category"], stored["t2"]["tier"]) == ("gotcha", "project")
    assert stored["t1"]["tier"] == "session"


def test_a_resumed_session_is_not_over_until_it_ends_again(home: Path, project_dir: Path) -> None:
    """SessionStart of a resumed session takes its end back: its failures wait for its next SessionEnd, which
    may find them fixed."""
    assert_quiet_success(run_hook("post_tool_use", bash_call("l3", project_dir, "ls", "a", "t1"), home))
    assert_quiet_success(run_hook("session_end", session_end("l3", project_dir), home))
    assert "closed_at" in json.loads(rows(home, "SELECT metadata FROM sessions WHERE id = 'l3'")[0]["metadata"])
    assert run_hook("session_start", session_start("l3", project_dir, "resume"), home).returncode == 0
    assert "closed_at" not in json.loads(rows(home, "SELECT metadata FROM sessions WHERE id = 'l3'")[0]["metadata"])
    assert_quiet_success(run_hook("post_tool_use", failing_call("l3", project_dir, "make -j4", "t2"), home))
    assert by_call(home, "l3")["t2"]["tier"] == "session"
    assert_quiet_success(run_hook("post_tool_use", bash_call("l3", project_dir, "make -j2", "built", "t3"), home))
    assert_quiet_success(run_hook("session_end", session_end("l3", project_dir), home))
    assert (by_call(home, "l3")["t2"]["category"], by_call(home, "l3")["t2"]["tier"]) == ("general", "session")


# -- SessionStart ----------------------------------------------------------------------------------------

def seed_project(home: Path, project_dir: Path) -> None:
    """Two finished sessions with summaries, a promoted failure, and manual project memories."""
    for session_id, outcome in (("old1", "Added the login page."), ("old2", "Moved hashing to bcrypt.")):
        assert_quiet_success(run_hook("post_tool_use", bash_call(session_id, project_dir, "pytest", "ok", "t1"), home))
        failed = tool_call(session_id, project_dir, "Bash", {"command": "npm run build"}, None, "t2",
                           event="PostToolUseFailure", error=f"Exit code 2 in {session_id}")
        assert_quiet_success(run_hook("post_tool_use", failed, home))
        stop = common(session_id, project_dir, "Stop", stop_hook_active=False, last_assistant_message=outcome)
        assert_quiet_success(run_hook("stop", stop, home))
        assert_quiet_success(run_hook("session_end", session_end(session_id, project_dir), home))


def summary_id(home: Path, session_id: str) -> str:
    return rows(home, "SELECT id FROM memories WHERE session_id = ? AND source = 'summary'", (session_id,))[0]["id"]


def test_every_id_in_the_session_start_index_is_one_memory_get_accepts(home: Path, project_dir: Path) -> None:
    seed_project(home, project_dir)
    text = injected(run_hook("session_start", session_start("new", project_dir), home))
    shown = re.findall(r"^- \[([0-9a-f]{8})\]", text, flags=re.M)
    assert len(shown) >= 4  # two sessions, two promoted failures
    db = database.connect(vectors=False)
    try:
        found, missing = memories.get_many(db, shown, project_id=projects.project_id(db, project_dir))
    finally:
        db.close()
    assert missing == [] and {m.id[:8] for m in found} == set(shown)
    assert {m.source for m in found} == {"summary", "capture"}


def test_session_start_with_no_memory_prints_nothing(home: Path, project_dir: Path) -> None:
    result = run_hook("session_start", session_start("n1", project_dir), home)
    assert_quiet_success(result)
    assert rows(home, "SELECT id, transcript_path FROM sessions") == [
        {"id": "n1", "transcript_path": str(project_dir / "n1.jsonl")}]


def test_session_start_injects_summaries_and_salient_memories(home: Path, project_dir: Path) -> None:
    seed_project(home, project_dir)
    db = database.connect(vectors=False)
    try:
        project = projects.project_id(db, project_dir)
        decision = memories.add(db, project_id=project, content="The API uses cursor pagination, never offsets.",
                                sector="semantic", category="architecture", importance=0.9)
        faded = memories.add(db, project_id=project, content="Old note about offsets.", importance=0.8)
        newer = memories.add(db, project_id=project, content="Offsets were removed in v2.", importance=0.2)
        memories.supersede(db, faded.id, newer.id, project_id=None)
        gone = memories.add(db, project_id=project, content="Deleted note.", importance=0.95)
        memories.delete(db, gone.id, project_id=None)
    finally:
        db.close()
    text = injected(run_hook("session_start", session_start("new", project_dir), home))
    assert text.startswith(f"<{redaction.CONTEXT_TAG}>") and text.endswith(f"</{redaction.CONTEXT_TAG}>")
    assert "memory_get" in text and "memory_timeline" in text
    sessions_part, memories_part = text.split("Project memories (most salient first):")
    old1, old2 = summary_id(home, "old1"), summary_id(home, "old2")
    assert sessions_part.index(f"[{old2[:8]}]") < sessions_part.index(f"[{old1[:8]}]")
    assert "Outcome: Moved hashing to bcrypt." in sessions_part
    lines = [line for line in memories_part.splitlines() if line.startswith("- [")]
    assert lines[0].startswith(f"- [{decision.id[:8]}] ") and "semantic/architecture: The API uses cursor" in lines[0]
    assert any(newer.id[:8] in line for line in lines)
    assert faded.id[:8] not in text and gone.id[:8] not in text and "Session summary (" not in memories_part
    assert len(text) <= 2000 * context.CHARS_PER_TOKEN


def test_session_start_excludes_the_current_session_and_respects_the_budget(home: Path, project_dir: Path) -> None:
    seed_project(home, project_dir)
    db = database.connect(vectors=False)
    try:
        project = projects.project_id(db, project_dir)
        for i in range(120):
            memories.add(db, project_id=project, content=f"Fact number {i}: " + "detail " * 30, importance=0.6)
    finally:
        db.close()
    text = injected(run_hook("session_start", session_start("old2", project_dir, "resume"), home))
    assert summary_id(home, "old2")[:8] not in text and summary_id(home, "old1")[:8] in text
    assert 2000 * context.CHARS_PER_TOKEN - 300 < len(text) <= 2000 * context.CHARS_PER_TOKEN
    write_config(home, {"context": {"max_tokens": 300}})
    small = injected(run_hook("session_start", session_start("n2", project_dir), home))
    assert len(small) <= 300 * context.CHARS_PER_TOKEN
    write_config(home, {"context": {"max_tokens": 100000, "memories": 1000}})
    huge = injected(run_hook("session_start", session_start("n3", project_dir), home))
    assert len(huge) <= context.CLAUDE_CODE_LIMIT_CHARS


def test_bad_config_is_logged_and_defaults_used(home: Path, project_dir: Path) -> None:
    seed_project(home, project_dir)
    (home / "config.json").write_text('{"context": {"max_tokens": "lots"}, "nonsense": 1}')
    text = injected(run_hook("session_start", session_start("n4", project_dir), home))
    assert "Recent sessions" in text
    log = log_text(home)
    assert "context.max_tokens must be a whole number" in log and "unknown section 'nonsense'" in log


@pytest.mark.parametrize("raw", [b"", b"{{{", b'{"session_id": 1}', b"[]"])
def test_session_start_never_fails_on_bad_input(home: Path, raw: bytes) -> None:
    assert_quiet_success(run_hook("session_start", None, home, raw=raw))


def test_session_start_honours_the_opt_out(home: Path, project_dir: Path) -> None:
    seed_project(home, project_dir)
    (project_dir / privacy.OPT_OUT_MARKER).write_text("")
    assert_quiet_success(run_hook("session_start", session_start("n5", project_dir), home))


def same_nonce(text: str) -> str:
    """The text with its fence nonce, drawn afresh for each injection, replaced by a fixed one."""
    return re.sub(r"ccmemory-data-[0-9a-f]{16}", "ccmemory-data-NONCE", text)


def test_preview_prints_exactly_what_the_hook_injects(home: Path, project_dir: Path) -> None:
    seed_project(home, project_dir)
    hook = run_hook("session_start", session_start("n6", project_dir), home)
    cli = [sys.executable, "-m", "ccmemory", "context", "--preview", "--project", str(project_dir)]
    env = isolated_env(home, PYTHONPATH=str(SOURCE))
    preview = subprocess.run(cli, capture_output=True, env=env, timeout=120)
    assert preview.returncode == 0, preview.stderr.decode()
    assert same_nonce(preview.stdout.decode()) == same_nonce(injected(hook) + "\n")
    as_json = subprocess.run([*cli, "--json"], capture_output=True, env=env, timeout=120)
    assert same_nonce(as_json.stdout.decode()) == same_nonce(hook.stdout.decode() + "\n")
    unknown = subprocess.run([*cli[:-1], str(project_dir.parent)], capture_output=True, env=env, timeout=120)
    assert unknown.returncode == 0 and unknown.stdout == b"" and b"Nothing would be injected" in unknown.stderr


def test_session_ids_used_by_context_are_fetchable(home: Path, project_dir: Path) -> None:
    seed_project(home, project_dir)
    text = injected(run_hook("session_start", session_start("n7", project_dir), home))
    ids = [line.split("]")[0][3:] for line in text.splitlines() if line.startswith("- [")]
    db = database.connect(vectors=False)
    try:
        found, missing = memories.get_many(db, ids, project_id=None)
        assert missing == [] and len(found) == len(ids) > 0
        assert sessions.get(db, "n7")["started_at"]
    finally:
        db.close()
