"""Stop: the session summary, extractive by default, model-written through `claude -p` when asked."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from testing.hooks import (
    assert_quiet_success, bash_call, common, HOOK_PYTHON, log_text, memories_of, rows, run_hook, tool_call,
    write_config, write_transcript,
)

from ccmemory import activity, session_summary
from ccmemory.hooks import model_summary, summary


def stop_payload(session_id: str, project: Path, message: str | None = "Done.") -> dict:
    payload = common(session_id, project, "Stop", prompt_id="p1", effort={"level": "medium"},
                     stop_hook_active=False, background_tasks=[], session_crons=[])
    if message is not None:
        payload["last_assistant_message"] = message
    return payload


def record_session(home: Path, project: Path, session_id: str) -> None:
    """A short session: a read, an edit, a passing and a failing command."""
    calls = [
        tool_call(session_id, project, "Read", {"file_path": str(project / "auth.py")}, "def login(): ...", "t1"),
        tool_call(session_id, project, "Edit", {"file_path": str(project / "auth.py"), "old_string": "md5",
                                                "new_string": "bcrypt"}, {"filePath": str(project / "auth.py")}, "t2"),
        bash_call(session_id, project, "pytest -q tests/test_auth.py", "3 passed", "t3"),
    ]
    failing = tool_call(session_id, project, "Bash", {"command": "mypy ."}, None, "t4", event="PostToolUseFailure",
                        error="Exit code 1\nauth.py:3: error: missing return")
    for payload in [*calls, failing]:
        assert_quiet_success(run_hook("post_tool_use", payload, home))


def summaries(home: Path, session_id: str) -> list[dict]:
    return [m for m in memories_of(home, session_id) if m["source"] == "summary"]


def test_stop_writes_an_extractive_reflective_summary(home: Path, project_dir: Path) -> None:
    record_session(home, project_dir, "s1")
    write_transcript(project_dir / "s1.jsonl", ["Switch password hashing to bcrypt, please.", "Now fix mypy."])
    message = ("Switched hashing to bcrypt and fixed the tests. I chose bcrypt rather than argon2 because it is "
               "already a dependency. mypy still reports one error.")
    assert_quiet_success(run_hook("stop", stop_payload("s1", project_dir, message), home))
    [memory] = summaries(home, "s1")
    assert (memory["sector"], memory["tier"], memory["salience"]) == ("reflective", "project", pytest.approx(0.65))
    text = memory["content"]
    assert text.startswith("Session summary (") and "4 tool calls: 2 Bash, 1 Edit, 1 Read)" in text
    assert "Request: Switch password hashing to bcrypt, please." in text
    assert "Last request (2 in all): Now fix mypy." in text
    assert "Outcome: Switched hashing to bcrypt" in text
    assert "Did: changed auth.py; ran pytest, mypy; 1 failed call" in text
    assert "Files changed: auth.py" in text and "Files read:" not in text
    assert "Commands: pytest -q tests/test_auth.py (Run it); mypy . (failed)" in text
    assert "Errors:\n- Ran: mypy . (failed)" in text
    assert json.loads(memory["files"]) == [str(project_dir / "auth.py")]
    [session] = rows(home, "SELECT summary, ended_at, transcript_path FROM sessions WHERE id = 's1'")
    assert session["summary"] == text and session["ended_at"] is not None
    assert session["transcript_path"] == str(project_dir / "s1.jsonl")


def test_each_stop_rewrites_the_one_summary_of_the_session(home: Path, project_dir: Path) -> None:
    record_session(home, project_dir, "s2")
    assert_quiet_success(run_hook("stop", stop_payload("s2", project_dir, "First turn done."), home))
    [first] = summaries(home, "s2")
    assert_quiet_success(run_hook("post_tool_use", bash_call("s2", project_dir, "git commit -m x", "ok", "t9"), home))
    assert_quiet_success(run_hook("stop", stop_payload("s2", project_dir, "Committed."), home))
    [second] = summaries(home, "s2")
    assert second["id"] == first["id"]
    assert "Outcome: Committed." in second["content"] and "git commit -m x" in second["content"]
    hits = rows(home, """SELECT rowid FROM memories_fts WHERE memories_fts MATCH '"Outcome Committed"'""")
    assert [h["rowid"] for h in hits] == [second["seq"]]


def test_a_failure_the_session_fixed_later_is_settled_not_a_gotcha(home: Path, project_dir: Path) -> None:
    failing = tool_call("f1", project_dir, "Bash", {"command": "pytest -q tests/test_auth.py"}, None, "t1",
                        event="PostToolUseFailure", error="Exit code 1\n1 failed, 2 passed")
    build = tool_call("f1", project_dir, "Bash", {"command": "npm run build"}, None, "t2",
                      event="PostToolUseFailure", error="Exit code 2")
    edit = tool_call("f1", project_dir, "Edit", {"file_path": str(project_dir / "auth.py"), "old_string": "a",
                                                 "new_string": "b"}, {"filePath": str(project_dir / "auth.py")}, "t3")
    passing = bash_call("f1", project_dir, "pytest tests/", "3 passed", "t4")
    for payload in (failing, build, edit, passing):
        assert_quiet_success(run_hook("post_tool_use", payload, home))
    assert_quiet_success(run_hook("stop", stop_payload("f1", project_dir, "Fixed the login test."), home))
    assert_quiet_success(run_hook("session_end", common("f1", project_dir, "SessionEnd", reason="other"), home))
    by_call = {json.loads(m["metadata"]).get("tool_use_id"): m for m in memories_of(home, "f1")}
    fixed, unfixed = by_call["t1"], by_call["t2"]
    assert (fixed["category"], fixed["tier"]) == ("general", "session")
    assert fixed["salience"] <= 0.5 and json.loads(fixed["metadata"])["fixed_by"] == by_call["t4"]["id"]
    assert (unfixed["category"], unfixed["tier"]) == ("gotcha", "project")
    [memory] = summaries(home, "f1")
    assert "2 failed calls, 1 fixed later in the session" in memory["content"]
    assert "Errors:\n- Ran: npm run build (failed)" in memory["content"] and "pytest -q tests/test_auth.py (failed)" \
        not in memory["content"].split("Errors:")[1]


def test_a_one_word_command_is_matched_whatever_its_description(home: Path, project_dir: Path) -> None:
    """Claude describes each call in its own words: "make" failing as "Build it" and passing as "Build again"
    is one command, so the failure is settled and the summary says "ran make"."""
    failing = tool_call("d1", project_dir, "Bash", {"command": "make", "description": "Build it"}, None, "t1",
                        event="PostToolUseFailure", error="Exit code 2")
    passing = tool_call("d1", project_dir, "Bash", {"command": "make", "description": "Build again"},
                        {"stdout": "ok", "stderr": ""}, "t2")
    for payload in (failing, passing):
        assert_quiet_success(run_hook("post_tool_use", payload, home))
    assert_quiet_success(run_hook("stop", stop_payload("d1", project_dir, "Built."), home))
    by_call = {json.loads(m["metadata"]).get("tool_use_id"): m for m in memories_of(home, "d1")}
    assert by_call["t1"]["category"] == "general"
    assert json.loads(by_call["t1"]["metadata"])["fixed_by"] == by_call["t2"]["id"]
    [memory] = summaries(home, "d1")
    assert "ran make; 1 failed call, 1 fixed later in the session" in memory["content"]


def test_a_failure_captured_after_the_call_that_fixed_it_is_still_settled(home: Path, project_dir: Path) -> None:
    """Claude Code may start a failed call's hook late: capture stores the fix first, and "later" is the calls'
    time, not the order of storing (seen in the real CLI)."""
    from ccmemory import config as settings, db as database, lifecycle, observations, projects

    config, root = settings.load(), str(project_dir)
    failing = tool_call("late", project_dir, "Bash", {"command": "cat NOTES.md"}, None, "t1",
                        event="PostToolUseFailure", error="Exit code 1\nNo such file")
    passing = bash_call("late", project_dir, "cat NOTES.md", "# Notes", "t2")
    db = database.connect(vectors=False)
    try:
        project = projects.project_id(db, root)
        for payload, when in ((passing, "2026-11-27T09:53:09.056Z"), (failing, "2026-11-27T09:53:08.909Z")):
            observations.store(db, observations.from_payload(payload, config, cwd=root, root=root), project_id=project,
                               session_id="late", tool_use_id=payload["tool_use_id"], created_at=when)
        lifecycle.end_session(db, config, project_id=project, session_id="late", cwd=root, root=root, prompts=[])
    finally:
        db.close()
    by_call = {json.loads(m["metadata"]).get("tool_use_id"): m for m in memories_of(home, "late")}
    assert by_call["t1"]["seq"] > by_call["t2"]["seq"]
    assert (by_call["t1"]["category"], by_call["t1"]["tier"]) == ("general", "session")
    assert json.loads(by_call["t1"]["metadata"])["fixed_by"] == by_call["t2"]["id"]


def test_a_failed_call_captured_after_the_last_stop_is_in_the_summary_and_the_turns_entry(home: Path,
                                                                                         project_dir: Path) -> None:
    """Stop does not wait for a failed call's hook; when it runs after the turn's Stop, SessionEnd puts the call in
    the summary and in that turn's local context entry (no entry of its own), as a backfill of the transcript
    files it by its time (seen in the real CLI). The summary rewritten keeps the day of the turn's reply, not the
    day SessionEnd ran (a session ended after midnight), and is stamped as changed when SessionEnd ran."""
    from ccmemory import clock, config as settings, db as database, lifecycle, observations, projects

    config, root = settings.load(), str(project_dir)
    ok = bash_call("tail", project_dir, "wc -l greeting.py", "1 greeting.py", "t1")
    failing = tool_call("tail", project_dir, "Bash", {"command": "echo end"}, None, "t2",
                        event="PostToolUseFailure", error="Exit code 1")
    turn_end = "2026-11-27T09:00:05.000Z"
    db = database.connect(vectors=False)

    def capture(payload: dict, when: str) -> None:
        observations.store(db, observations.from_payload(payload, config, cwd=root, root=root), project_id=project,
                           session_id="tail", tool_use_id=payload["tool_use_id"], created_at=when)

    def entries() -> list[dict]:
        return db.rows("SELECT title, details FROM local_context_entries WHERE session_id = 'tail' ORDER BY id")

    try:
        project = projects.project_id(db, root)
        capture(ok, "2026-11-27T09:00:01.000Z")
        with clock.replaying(turn_end):  # as Stop stamps the turn
            lifecycle.end_turn(db, config, project_id=project, session_id="tail", cwd=root, root=root,
                               prompts=["Count the lines"], last_message="Done.", turn_end=turn_end)
        capture(failing, "2026-11-27T09:00:03.000Z")  # its hook ran after Stop
        lifecycle.end_session(db, config, project_id=project, session_id="tail", cwd=root, root=root,
                              prompts=["Count the lines"], last_reply="Done.", turn_end=turn_end)
        [entry] = entries()
    finally:
        db.close()
    [summary] = summaries(home, "tail")
    assert summary["content"].startswith("Session summary (2026-11-27; 2 tool calls")
    assert summary["updated_at"] > turn_end  # the rewrite is newer than Stop's version, for a copy taken between
    assert "echo end" in summary["content"]
    assert "Outcome: Done." in summary["content"]
    assert entry["title"] == "Count the lines" and "echo end" in entry["details"] and "Outcome: Done." in entry["details"]


def test_a_session_that_only_looked_gets_a_less_salient_summary(home: Path, project_dir: Path) -> None:
    write_transcript(project_dir / "q1.jsonl", ["Remind me how we fixed the login timeout?"])
    read = tool_call("q1", project_dir, "Read", {"file_path": str(project_dir / "auth.py")}, "def login(): ...", "t1")
    look = bash_call("q1", project_dir, "git log --oneline -5", "abc fix login timeout", "t2")
    for payload in (read, look):
        assert_quiet_success(run_hook("post_tool_use", payload, home))
    assert_quiet_success(run_hook("stop", stop_payload("q1", project_dir, "We raised the timeout to 30 s."), home))
    [asked] = summaries(home, "q1")
    assert asked["salience"] == pytest.approx(session_summary.LOOKED_ONLY_SALIENCE)
    assert "Did: ran git log; only looked, changed nothing" in asked["content"]
    record_session(home, project_dir, "q2")
    assert_quiet_success(run_hook("stop", stop_payload("q2", project_dir, "Done."), home))
    [did] = summaries(home, "q2")
    assert did["salience"] == pytest.approx(session_summary.SUMMARY_SALIENCE)


def test_stop_with_nothing_to_say_stores_nothing(home: Path, project_dir: Path) -> None:
    assert_quiet_success(run_hook("stop", stop_payload("s3", project_dir, message=None), home))
    assert summaries(home, "s3") == []


@pytest.mark.parametrize("raw", [b"", b"{", b'{"session_id": null}', b'{"hook_event_name": "Stop"}', b"42"])
def test_stop_never_fails_on_bad_input(home: Path, raw: bytes) -> None:
    result = run_hook("stop", None, home, raw=raw)
    assert_quiet_success(result)


def test_recursion_guard_silences_stop(home: Path, project_dir: Path) -> None:
    record_session(home, project_dir, "s4")
    assert_quiet_success(run_hook("stop", stop_payload("s4", project_dir), home, CCMEMORY_SUMMARY_CHILD="1"))
    assert summaries(home, "s4") == []


def test_decisions_are_sentences_with_a_choice_or_reason() -> None:
    found = activity.decisions(["We went with SQLite. It is small.\n- Chose WAL mode because readers never block."])
    assert found == ["We went with SQLite.", "Chose WAL mode because readers never block."]


def test_the_prompts_read_skip_meta_and_unknown_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_transcript(path, ["first", "<command-name>/clear</command-name>", "second"])
    assert summary.read_transcript(str(path), "s").prompts == ["first", "second"]
    assert summary.read_transcript(str(tmp_path / "missing.jsonl"), "s").prompts == []


# -- the opt-in model-written summary, against a stand-in `claude` executable ----------------------------

FAKE_CLAUDE = """#!{python}
import json, os, subprocess, sys, time
record = {{"argv": sys.argv[1:], "guard": os.environ.get("CCMEMORY_SUMMARY_CHILD"), "pid": os.getpid(),
          "prompt": sys.stdin.read()}}
mode = {mode!r}
if mode == "hang":
    record["grandchild"] = subprocess.Popen(["sleep", "300"]).pid
open({record!r}, "w").write(json.dumps(record))
if mode == "hang":
    time.sleep(300)
if mode == "fail":
    sys.stderr.write("Invalid API key\\n")
    sys.exit(1)
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False,
                  "result": "- Moved hashing to bcrypt\\n- mypy error left in auth.py", "num_turns": 1}}))
"""


def fake_claude(tmp_path: Path, mode: str) -> tuple[Path, Path]:
    record = tmp_path / f"claude-{mode}.json"
    script = tmp_path / f"claude-{mode}"
    script.write_text(FAKE_CLAUDE.format(python=HOOK_PYTHON, mode=mode, record=str(record)))
    script.chmod(0o755)
    return script, record


def wait_for(condition, seconds: float = 60.0) -> bool:
    """Poll until ``condition()`` holds; a generous bound, never an assertion about speed."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def test_model_summary_replaces_the_extractive_one(home: Path, project_dir: Path, tmp_path: Path) -> None:
    script, record = fake_claude(tmp_path, "ok")
    write_config(home, {"summary": {"mode": "claude", "claude_command": str(script), "model": "haiku"}})
    record_session(home, project_dir, "s5")
    assert_quiet_success(run_hook("stop", stop_payload("s5", project_dir, "Done with bcrypt."), home))
    assert wait_for(lambda: summaries(home, "s5")[0]["content"].startswith("Session summary (model-written)"))
    [memory] = summaries(home, "s5")
    assert "- Moved hashing to bcrypt" in memory["content"]
    assert json.loads(memory["metadata"]) == {"method": "claude"}
    sent = json.loads(record.read_text())
    assert sent["argv"] == ["-p", "--setting-sources=", "--tools", "", "--no-session-persistence", "--max-turns",
                            "1", "--output-format", "json", "--model", "haiku"]
    assert sent["guard"] == "1"
    assert "Extractive summary:" in sent["prompt"] and "Ran: mypy . (failed)" in sent["prompt"]


def test_failing_model_keeps_the_extractive_summary(home: Path, project_dir: Path, tmp_path: Path) -> None:
    script, _ = fake_claude(tmp_path, "fail")
    write_config(home, {"summary": {"mode": "claude", "claude_command": str(script)}})
    record_session(home, project_dir, "s6")
    assert_quiet_success(run_hook("stop", stop_payload("s6", project_dir), home))
    assert wait_for(lambda: "model summary failed" in log_text(home))
    assert "exited with 1: Invalid API key" in log_text(home)
    assert summaries(home, "s6")[0]["content"].startswith("Session summary (")
    assert "model-written" not in summaries(home, "s6")[0]["content"]


def test_missing_claude_binary_keeps_the_extractive_summary(home: Path, project_dir: Path, tmp_path: Path) -> None:
    write_config(home, {"summary": {"mode": "claude", "claude_command": str(tmp_path / "no-such-claude")}})
    record_session(home, project_dir, "s7")
    assert_quiet_success(run_hook("stop", stop_payload("s7", project_dir), home))
    assert wait_for(lambda: "could not start" in log_text(home))
    assert "model-written" not in summaries(home, "s7")[0]["content"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split(")")[-1].split()[0] == "Z")


def test_hanging_model_is_killed_with_everything_it_started(home: Path, project_dir: Path, tmp_path: Path) -> None:
    script, record = fake_claude(tmp_path, "hang")
    write_config(home, {"summary": {"mode": "claude", "claude_command": str(script), "timeout_seconds": 1}})
    record_session(home, project_dir, "s8")
    assert_quiet_success(run_hook("stop", stop_payload("s8", project_dir), home))
    assert wait_for(lambda: "gave no summary within 1 s" in log_text(home))
    started = json.loads(record.read_text())
    assert wait_for(lambda: not _alive(started["pid"]) and not _alive(started["grandchild"]))
    assert "model-written" not in summaries(home, "s8")[0]["content"]


def test_unknown_summary_mode_is_logged_and_extractive_used(home: Path, project_dir: Path) -> None:
    write_config(home, {"summary": {"mode": "gpt"}})
    record_session(home, project_dir, "s9")
    assert_quiet_success(run_hook("stop", stop_payload("s9", project_dir), home))
    assert "summary.mode must be one of extractive, claude, not 'gpt'" in log_text(home)
    assert len(summaries(home, "s9")) == 1


def test_claude_command_line() -> None:
    assert model_summary.claude_command("claude", None) == [
        "claude", "-p", "--setting-sources=", "--tools", "", "--no-session-persistence", "--max-turns", "1",
        "--output-format", "json"]


def test_the_summary_names_the_functions_each_changed_file_had_edited(home: Path, project_dir: Path) -> None:
    target = str(project_dir / "core.py")
    original = "class Option:\n    def get_help_record(self):\n        return []\n\ndef main():\n    pass\n"
    for number, (old, start) in enumerate((("return []", 3), ("pass", 6), ("return []", 3))):
        hunk = {"oldStart": start, "oldLines": 1, "lines": [f"-        {old}", "+        x"]}
        payload = tool_call("s-fn", project_dir, "Edit", {"file_path": target, "old_string": old, "new_string": "x"},
                            {"filePath": target, "originalFile": original, "structuredPatch": [hunk]}, f"t{number}")
        assert_quiet_success(run_hook("post_tool_use", payload, home))
    assert_quiet_success(run_hook("post_tool_use", bash_call("s-fn", project_dir, "pytest -q", "1 passed", "t9"),
                                  home))
    assert_quiet_success(run_hook("stop", stop_payload("s-fn", project_dir), home))
    [memory] = summaries(home, "s-fn")
    assert "Files changed: core.py (Option.get_help_record, main)" in memory["content"]

