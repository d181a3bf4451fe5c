"""``ccmemory backfill`` on hand-built transcripts: idempotency, running sessions, bad input, privacy, Ctrl+C.

The transcripts are written as Claude Code 2.1.330 writes them (docs in ``ccmemory.transcript``;
the end-to-end test on transcripts the real CLI wrote is ``tests/e2e/test_backfill_e2e.py``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from ccmemory import backfill, config as settings, db as database, observations, projects, search
from testing.env import isolated_env
from testing.hooks import HOOK_PYTHON, run_hook
from testing.repo import HOOKS

OLD = time.time() - 3600


class Transcript:
    """Lines of one session's transcript, in Claude Code's format."""

    def __init__(self, session_id: str, cwd: Path | str, start: int = 0) -> None:
        self.session_id = session_id
        self.cwd = str(cwd)
        self.lines: list[str] = []
        self.second = start
        self.calls = 0

    def _stamp(self) -> str:
        self.second += 1
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(1_780_000_000 + self.second)) + ".000Z"

    def _line(self, kind: str, message: dict[str, Any], **extra: Any) -> None:
        self.lines.append(json.dumps({"type": kind, "message": message, "uuid": f"u{len(self.lines)}",
                                      "timestamp": self._stamp(), "sessionId": self.session_id, "cwd": self.cwd,
                                      "gitBranch": "main", "isSidechain": False, "version": "2.1.330", **extra}))

    def prompt(self, text: str) -> Transcript:
        self._line("user", {"role": "user", "content": text}, promptId="p")
        return self

    def call(self, tool: str, tool_input: dict[str, Any], result: Any = "ok", *, error: bool = False,
             answered: bool = True) -> Transcript:
        self.calls += 1
        tool_use_id = f"toolu_{self.session_id}_{self.calls}"
        self._line("assistant", {"id": f"msg{self.calls}", "role": "assistant", "stop_reason": "tool_use",
                                 "content": [{"type": "tool_use", "id": tool_use_id, "name": tool,
                                              "input": tool_input}]})
        if answered:
            content = result if isinstance(result, str) else json.dumps(result)
            self._line("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use_id,
                                                             "content": content, "is_error": error}]},
                       toolUseResult=result)
        return self

    def reply(self, text: str) -> Transcript:
        self._line("assistant", {"id": "msg-end", "role": "assistant", "stop_reason": "end_turn",
                                 "content": [{"type": "text", "text": text}]})
        return self

    def raw(self, line: str) -> Transcript:
        self.lines.append(line)
        return self

    def write(self, claude: Path, *, old: bool = True, folder: str | None = None) -> Path:
        path = claude / "projects" / (folder or self.cwd.replace("/", "-")) / f"{self.session_id}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(self.lines) + "\n")
        if old:
            os.utime(path, (OLD, OLD))
        return path


def work(session_id: str, cwd: Path, *, start: int = 0) -> Transcript:
    """A session with an edit, a failure fixed later, a secret and a private span."""
    target = str(cwd / "app.py")
    return (Transcript(session_id, cwd, start).prompt("Fix the app <private>my-private-word</private>")
            .call("Edit", {"file_path": target, "old_string": "a = 1", "new_string": "a = 2"},
                  {"filePath": target, "oldString": "a = 1", "newString": "a = 2"})
            .call("Bash", {"command": "pytest -x", "description": "Run the tests"}, "Exit code 1\nFAILED", error=True)
            .call("Bash", {"command": "pytest -x", "description": "Run the tests"},
                  {"stdout": "1 passed", "stderr": "", "interrupted": False})
            .call("Bash", {"command": "echo AKIAIOSFODNN7EXAMPLE"}, {"stdout": "AKIAIOSFODNN7EXAMPLE", "stderr": ""})
            .call("mcp__plugin_ccmemory_memory__memory_search", {"query": "x"}, [{"type": "text", "text": "none"}])
            .reply("Fixed. We went with pytest because it was already there."))


@pytest.fixture
def claude(tmp_path: Path) -> Path:
    return tmp_path / "claude-config"


def run(claude: Path, **options: Any) -> backfill.Report:
    db = database.connect(vectors=False)
    try:
        return backfill.run(db, settings.load(), config_dir=str(claude), **options)
    finally:
        db.close()


def stored(sql: str, params: tuple = ()) -> list[dict[str, Any]]:
    db = database.connect(vectors=False)
    try:
        return db.rows(sql, params)
    finally:
        db.close()


def test_a_past_session_is_stored_as_capture_would_have(home: Path, claude: Path, project_dir: Path) -> None:
    work("s1", project_dir).write(claude)
    report = run(claude)
    assert (report.found, report.taken, report.stored) == (1, 1, 4)
    assert report.calls_skipped == {"one of ccmemory's own tools": 1}
    captured = stored("SELECT * FROM memories WHERE source = 'capture' ORDER BY seq")
    assert [m["created_at"] for m in captured] == sorted(m["created_at"] for m in captured)
    assert captured[0]["created_at"].startswith(time.strftime("%Y-%m-%d", time.gmtime(1_780_000_000)))
    assert [json.loads(m["metadata"])["tool"] for m in captured] == ["Edit", "Bash", "Bash", "Bash"]
    failed = json.loads(captured[1]["metadata"])
    assert failed["outcome"] == "failed" and failed["fixed_by"] == captured[2]["id"]  # settled at Stop
    everything = json.dumps(stored("SELECT * FROM memories")) + json.dumps(stored("SELECT * FROM sessions"))
    assert "AKIAIOSFODNN7EXAMPLE" not in everything and "my-private-word" not in everything
    [session] = stored("SELECT * FROM sessions")
    assert "Request: Fix the app" in session["summary"] and session["ended_at"].startswith("2026")
    [project] = stored("SELECT path FROM projects")
    assert project["path"] == str(project_dir.resolve())
    assert stored("SELECT count(*) AS n FROM local_context_entries")[0]["n"] == 1
    assert all(m["needs_embedding"] == 1 for m in stored("SELECT needs_embedding FROM memories"))


def test_running_again_or_over_live_capture_adds_nothing(home: Path, claude: Path, project_dir: Path) -> None:
    work("s1", project_dir).write(claude)
    live = work("s2", project_dir, start=100)
    live.write(claude)
    db = database.connect(vectors=False)
    try:  # s2's Edit was captured live: backfill adds the rest of s2, but never that call again
        observation = observations.Observation("Edit", "Edited app.py", [], "general", 0.6, {"tool": "Edit"})
        observations.store(db, observation, project_id=projects.project_id(db, project_dir), session_id="s2",
                           tool_use_id="toolu_s2_1", created_at=None)
    finally:
        db.close()
    first = run(claude)
    assert first.stored == 7 and first.calls_skipped["already stored"] == 1
    before = stored("SELECT id, content, salience, tier, metadata FROM memories ORDER BY seq")
    again = run(claude)
    assert (again.taken, again.stored, again.skipped) == (0, 0, {"already in memory": 2})
    assert stored("SELECT id, content, salience, tier, metadata FROM memories ORDER BY seq") == before


def test_a_session_still_being_written_is_taken_up_to_its_last_complete_turn(home: Path, claude: Path,
                                                                             project_dir: Path) -> None:
    session = work("s1", project_dir).prompt("And the docs").call("Bash", {"command": "make docs"}, answered=False)
    session.write(claude, old=False)
    report = run(claude)
    assert report.stored == 4 and "still being written: taken up to its last complete turn" in report.problems
    assert stored("SELECT ended_at FROM sessions")[0]["ended_at"] is not None  # the summary's Stop, not SessionEnd
    assert stored("SELECT count(*) AS n FROM memories WHERE tier = 'project' AND source = 'capture'")[0]["n"] == 0
    session.lines.pop()
    session.call("Bash", {"command": "make docs"}, {"stdout": "built", "stderr": ""}).reply("Docs built.")
    session.write(claude)
    later = run(claude)
    assert later.stored == 1 and later.taken == 1
    assert stored("SELECT count(*) AS n FROM memories WHERE source = 'summary'")[0]["n"] == 1


def test_bad_input_is_counted_and_named_never_fatal(home: Path, claude: Path, project_dir: Path,
                                                   tmp_path: Path) -> None:
    session = work("s1", project_dir)
    session.raw('{"type": "user", "message": {"role": "user", "content": "cut')  # truncated
    session.raw("\x00\x01not json at all \"user\"")
    session.raw(json.dumps({"type": "hologram", "user": 1}))  # a newer Claude Code's entry
    session.raw('{"type": "user", "pad": "' + "x" * (1024 * 1024 + 10) + '"}')  # a line over 1 MiB
    path = session.write(claude)
    (path.parent / "binary.jsonl").write_bytes(os.urandom(4096).replace(b"\n", b" "))
    os.mkfifo(path.parent / "fifo.jsonl")
    outside = tmp_path / "outside.jsonl"
    work("s-out", project_dir).write(tmp_path, folder="elsewhere")
    outside.write_text((tmp_path / "projects" / "elsewhere" / "s-out.jsonl").read_text())
    (path.parent / "link-out.jsonl").symlink_to(outside)
    gone = tmp_path / "deleted-checkout" / "sub"
    work("s-gone", gone).write(claude)
    report = run(claude)
    assert report.taken == 2 and report.stored == 8
    problems = report.problems
    assert problems["line not a JSON object (cut, corrupt or binary)"] == 2
    assert problems["line over 1 MiB"] == 1
    assert problems["entry of an unknown type: hologram"] == 1
    assert problems["not a regular file (a FIFO, a device or a folder)"] == 1
    assert problems["a link out of Claude Code's projects folder"] == 1
    assert problems["working directory no longer exists (kept under its path)"] == 1
    named = {item["path"] for item in report.named}
    assert {str(path.parent / name) for name in ("fifo.jsonl", "link-out.jsonl", "binary.jsonl")} <= named
    assert report.skipped == {"no prompt or tool call in it": 1}  # the binary file
    assert {row["path"] for row in stored("SELECT path FROM projects")} == {str(project_dir.resolve()), str(gone)}


def test_a_session_of_a_deleted_folder_lands_in_the_project_that_held_it(home: Path, claude: Path,
                                                                         project_dir: Path) -> None:
    db = database.connect(vectors=False)
    try:
        projects.project_id(db, project_dir)
    finally:
        db.close()
    work("s1", project_dir.resolve() / "removed" / "deeper").write(claude)
    run(claude)
    assert {row["path"] for row in stored("SELECT path FROM projects")} == {str(project_dir.resolve())}


def test_a_session_of_a_deleted_second_clone_lands_in_its_repository(home: Path, claude: Path, tmp_path: Path) -> None:
    """The folder is gone, but it was seen as a location (an alias) of the project: the session lands there."""
    import shutil
    import subprocess

    first, second = tmp_path / "app", tmp_path / "app-copy"
    first.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=first, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "first"], cwd=first, check=True)
    subprocess.run([*git, "clone", "-q", str(first), str(second)], cwd=tmp_path, check=True)
    db = database.connect(vectors=False)
    try:
        assert projects.project_id(db, first) == projects.project_id(db, second)
    finally:
        db.close()
    shutil.rmtree(second)
    work("s1", second.resolve() / "src").write(claude)
    run(claude)
    assert {row["path"] for row in stored("SELECT path FROM projects")} == {str(first.resolve())}
    assert stored("SELECT COUNT(*) AS n FROM sessions")[0]["n"] == 1


def test_privacy_rules_hold(home: Path, claude: Path, project_dir: Path, tmp_path: Path,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    work("s1", project_dir).write(claude)
    opted = tmp_path / "secret-project"
    (opted / ".git").mkdir(parents=True)
    (opted / ".ccmemory-off").write_text("")
    work("s2", opted).write(claude)
    monkeypatch.setenv("CCMEMORY_DISABLE", "1")
    assert run(claude).skipped == {"CCMEMORY_DISABLE is set": 2}
    monkeypatch.delenv("CCMEMORY_DISABLE")
    (home / "config.json").write_text(json.dumps({"capture": {"enabled": False}}))
    assert run(claude).skipped == {"capture is off (capture.enabled)": 2}
    (home / "config.json").unlink()
    report = run(claude)
    assert report.taken == 1 and report.skipped == {"project opted out (.ccmemory-off)": 1}
    assert {row["session_id"] for row in stored("SELECT DISTINCT session_id FROM memories")} == {"s1"}


def test_project_since_and_dry_run_filter(home: Path, claude: Path, project_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    work("s1", project_dir).write(claude)
    work("s2", other, start=10_000_000).write(claude)
    dry = run(claude, dry_run=True)
    assert (dry.taken, dry.stored) == (2, 8) and not stored("SELECT id FROM memories")
    assert not stored("SELECT id FROM projects")
    since = time.strftime("%Y-%m-%d", time.gmtime(1_780_000_000 + 5_000_000))
    assert run(claude, since=since).skipped == {"ended before --since": 1}
    assert run(claude, project=str(project_dir)).skipped == {"in another project": 1}
    assert {row["session_id"] for row in stored("SELECT DISTINCT session_id FROM memories")} == {"s1", "s2"}


def test_session_start_offers_the_backfill_once(home: Path, claude: Path, project_dir: Path) -> None:
    for number in range(3):
        work(f"old{number}", project_dir).write(claude)
    folder = claude / "projects" / str(project_dir).replace("/", "-")
    payload = {"session_id": "now", "cwd": str(project_dir), "hook_event_name": "SessionStart", "source": "startup",
               "transcript_path": str(folder / "now.jsonl")}
    first = run_hook("session_start", payload, home)
    context = json.loads(first.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "3 earlier sessions" in context and "ccmemory backfill --project ." in context
    again = run_hook("session_start", dict(payload, session_id="later"), home)
    assert b"ccmemory backfill" not in again.stdout
    assert stored("SELECT count(*) AS n FROM memories")[0]["n"] == 0  # nothing imported without the command


def test_the_cli_reports_and_doctor_notes_the_sessions_not_recorded(home: Path, claude: Path, project_dir: Path,
                                                                   cli_env: dict[str, str]) -> None:
    work("s1", project_dir).write(claude)
    env = dict(cli_env, CLAUDE_CONFIG_DIR=str(claude))
    doctor = subprocess.run([sys.executable, "-m", "ccmemory", "doctor"], env=env, capture_output=True, text=True)
    assert "Claude Code kept 1 session(s) ccmemory has not recorded" in doctor.stdout
    shown = subprocess.run([sys.executable, "-m", "ccmemory", "backfill"], env=env, capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert "Sessions: 1 found, 1 taken, 0 skipped. Tool calls: 4 stored, 1 skipped (1 one of ccmemory's own tools)" \
        in shown.stdout
    assert f"{project_dir.resolve()}: 1 session(s), 4 tool call(s)" in shown.stdout


@pytest.fixture
def cli_env(home: Path) -> Iterator[dict[str, str]]:
    yield isolated_env(home)


def test_ctrl_c_keeps_what_is_done_and_the_next_run_continues(home: Path, claude: Path, project_dir: Path,
                                                              tmp_path: Path, cli_env: dict[str, str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for number in range(400):
        session = Transcript(f"bulk{number:03d}", project_dir, start=number * 100).prompt(f"task {number}")
        for call in range(15):
            session.call("Bash", {"command": f"make step{call}"}, {"stdout": f"done {number}.{call}", "stderr": ""})
        session.reply("Done.").write(claude)
    env = dict(cli_env, CLAUDE_CONFIG_DIR=str(claude))
    command = [sys.executable, "-m", "ccmemory", "backfill", "--json"]
    child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and child.poll() is None:
        if (home / "ccmemory.db").exists() and stored("SELECT count(*) AS n FROM sessions")[0]["n"] >= 3:
            break
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 130, err
    assert "Interrupted: the" in err and "run `ccmemory backfill` again to continue" in err
    kept = json.loads(out)
    assert kept["interrupted"] and 0 < kept["sessions"]["taken"] < 400
    sessions_with_calls = stored("SELECT session_id, count(*) AS n FROM memories WHERE source = 'capture' "
                                 "GROUP BY session_id")
    assert all(row["n"] == 15 for row in sessions_with_calls)  # never half a session
    resumed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["sessions"]["taken"] == 400 - kept["sessions"]["taken"]
    whole = tmp_path / "whole"
    uninterrupted = subprocess.run(command, env=dict(env, CCMEMORY_HOME=str(whole)), capture_output=True, text=True,
                                   timeout=300)
    assert uninterrupted.returncode == 0, uninterrupted.stderr
    query = ("SELECT session_id, dedupe_key, content, tier, salience, category, created_at FROM memories "
             "ORDER BY session_id, created_at, dedupe_key")
    after_resume = stored(query)
    monkeypatch.setenv("CCMEMORY_HOME", str(whole))
    assert stored(query) == after_resume


def live_capture(session: Transcript, path: Path, home: Path, cwd: Path) -> None:
    """The hook processes Claude Code would have run for ``session`` (each call's payload from its lines)."""
    base = {"session_id": session.session_id, "transcript_path": str(path), "cwd": str(cwd)}
    run_hook("session_start", dict(base, hook_event_name="SessionStart", source="startup"), home, cwd=cwd)
    lines = [json.loads(line) for line in session.lines]
    results = {block["tool_use_id"]: line for line in lines if isinstance(line["message"]["content"], list)
               for block in line["message"]["content"] if block.get("type") == "tool_result"}
    for line in lines:
        for block in line["message"]["content"] if isinstance(line["message"]["content"], list) else []:
            if block.get("type") == "tool_use":
                payload = dict(base, hook_event_name="PostToolUse", tool_name=block["name"], tool_input=block["input"],
                               tool_use_id=block["id"], tool_response=results[block["id"]]["toolUseResult"])
                run_hook("post_tool_use", payload, home, cwd=cwd)
    reply = lines[-1]["message"]["content"][0]["text"]
    run_hook("stop", dict(base, hook_event_name="Stop", last_assistant_message=reply), home, cwd=cwd)
    run_hook("session_end", dict(base, hook_event_name="SessionEnd", reason="exit"), home, cwd=cwd)


def test_live_capture_and_backfill_store_the_same_rows_in_the_same_order_and_rank_alike(
        home: Path, claude: Path, project_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Search breaks equal scores by storing order: the same sessions, captured live or backfilled, must store
    their memories in the same order, so that memories scoring alike (the same file read twice, in one session
    and in the next) come out in the same order from both stores."""
    target = str(project_dir / "loader.py")
    read = {"type": "text", "file": {"filePath": target, "content": "def load_config(path):\n    return {}\n"}}
    sessions = []
    recent = int(time.time()) - 1_780_000_000 - 900  # the hooks run as the calls happen: their times are close
    for number in range(2):
        session = (Transcript(f"s{number}", project_dir, start=recent + number * 100).prompt("Fix the config loader")
                   .call("Read", {"file_path": target}, read)
                   .call("Bash", {"command": "pytest tests/test_loader.py"}, {"stdout": "1 failed", "stderr": ""})
                   .call("Read", {"file_path": target}, read)
                   .call("Edit", {"file_path": target, "old_string": "{}", "new_string": "load(path)"},
                         {"filePath": target, "oldString": "{}", "newString": "load(path)"})
                   .reply("The config loader reads the file now."))
        sessions.append((session, session.write(claude)))
    live = tmp_path / "live-home"
    for session, path in sessions:
        live_capture(session, path, live, project_dir)
    run(claude)

    def store(data: Path) -> tuple[list[tuple[str, str, str]], dict[str, list[tuple[str, str, str]]]]:
        monkeypatch.setenv("CCMEMORY_HOME", str(data))
        db = database.connect(vectors=False)
        try:
            rows = db.rows("SELECT * FROM memories ORDER BY seq")
            keys = {row["id"]: (row["session_id"], row["source"], row["dedupe_key"] or row["category"])
                    for row in rows}
            project = projects.project_id(db, project_dir, create=False)
            ranked = {query: [keys[hit.memory.id] for hit in search.search(
                db, query, project_id=project, mode="keyword", limit=10, track=False)]
                for query in ("config loader", "loader.py", "pytest test_loader")}
        finally:
            db.close()
        return [keys[row["id"]] for row in rows], ranked

    live_rows, live_ranked = store(live)
    backfilled_rows, backfilled_ranked = store(home)
    assert len(live_rows) == 10  # 4 calls and a summary per session
    assert backfilled_rows == live_rows
    assert backfilled_ranked == live_ranked
    assert all(live_ranked.values())


def test_hooks_that_run_late_and_out_of_order_store_the_transcripts_order_and_times(
        home: Path, claude: Path, project_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code may start a call's PostToolUse hook late: after the next call's, during the turn's Stop, and a
    subagent's call that finished after the turn's reply only after that Stop. Live capture still stores the calls
    at the transcript's times, in its order, with the summary and local context a backfill of it writes."""
    recent = int(time.time()) - 1_780_000_000 - 900
    target = str(project_dir / "app.py")
    session = (Transcript("late", project_dir, start=recent).prompt("Count the lines and greet")
               .call("Bash", {"command": "wc -l app.py"}, {"stdout": "1 app.py", "stderr": ""})
               .call("Edit", {"file_path": target, "old_string": "a = 1", "new_string": "a = 2"},
                     {"filePath": target, "oldString": "a = 1", "newString": "a = 2"})
               .call("Bash", {"command": "make greet"}, {"stdout": "hello", "stderr": ""})
               .reply("Done. We kept the greeting in make because the tests call it."))
    path = session.write(claude)
    agent = Transcript("late", project_dir, start=recent + 8)  # a subagent still at work after the reply
    agent.calls = 100
    agent.prompt("SUBAGENT: count the tests").call("Bash", {"command": "ls tests"}, {"stdout": "t.py", "stderr": ""})
    agent.lines = [json.dumps(dict(json.loads(line), isSidechain=True)) for line in agent.lines]
    agents = path.parent / "late" / "subagents"
    agents.mkdir(parents=True)
    (agents / "agent-a1.jsonl").write_text("\n".join(agent.lines) + "\n")
    os.utime(agents / "agent-a1.jsonl", (OLD, OLD))
    lines = [json.loads(line) for line in session.lines + agent.lines]
    results = {block["tool_use_id"]: line for line in lines if isinstance(line["message"]["content"], list)
               for block in line["message"]["content"] if block.get("type") == "tool_result"}
    base = {"session_id": "late", "transcript_path": str(path), "cwd": str(project_dir)}

    def captured(tool_use_id: str) -> dict[str, Any]:
        block = next(block for line in lines if isinstance(line["message"]["content"], list)
                     for block in line["message"]["content"] if block.get("id") == tool_use_id)
        return dict(base, hook_event_name="PostToolUse", tool_name=block["name"], tool_input=block["input"],
                    tool_use_id=tool_use_id, tool_response=results[tool_use_id]["toolUseResult"])

    live = tmp_path / "live-home"
    run_hook("session_start", dict(base, hook_event_name="SessionStart", source="startup"), live, cwd=project_dir)
    for tool_use_id in ("toolu_late_2", "toolu_late_1"):  # the edit's hook before the count's
        run_hook("post_tool_use", captured(tool_use_id), live, cwd=project_dir)
    stop = subprocess.Popen([HOOK_PYTHON, "-S", str(HOOKS / "run.py"), "stop"], stdin=subprocess.PIPE,
                            env=isolated_env(live), cwd=str(project_dir))
    assert stop.stdin is not None
    stop.stdin.write(json.dumps(dict(base, hook_event_name="Stop", last_assistant_message=session_reply(session)))
                     .encode())
    stop.stdin.close()
    run_hook("post_tool_use", captured("toolu_late_3"), live, cwd=project_dir)  # while Stop runs
    assert stop.wait(timeout=60) == 0
    run_hook("post_tool_use", captured("toolu_late_101"), live, cwd=project_dir)  # the subagent's, after Stop
    run_hook("session_end", dict(base, hook_event_name="SessionEnd", reason="exit"), live, cwd=project_dir)
    run(claude)

    def store(data: Path) -> dict[str, Any]:
        monkeypatch.setenv("CCMEMORY_HOME", str(data))
        return {"calls": [(row["dedupe_key"], row["created_at"]) for row in stored(
                    "SELECT dedupe_key, created_at FROM memories WHERE source = 'capture' ORDER BY created_at, seq")],
                "summary": stored("SELECT summary FROM sessions"),
                "context": stored("SELECT title, details, files, theme FROM local_context_entries ORDER BY id")}

    live_store, backfilled = store(live), store(home)
    assert [key for key, _ in live_store["calls"]] == ["toolu_late_1", "toolu_late_2", "toolu_late_3",
                                                       "toolu_late_101"]
    assert live_store == backfilled
    turn, after = (json.loads(entry["details"]) for entry in live_store["context"])
    assert "Commands: wc -l app.py; make greet" in turn and after == ["Commands: ls tests"]


def test_calls_whose_hooks_run_after_session_end_are_settled_and_promoted_as_a_backfill_does(
        home: Path, claude: Path, project_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code may start a call's hook after SessionEnd: a failure whose hook ran after its fix takes its
    transcript time and is settled (not promoted as a gotcha); a failure nothing fixed is promoted; as in a
    backfill of the same transcript."""
    recent = int(time.time()) - 1_780_000_000 - 900
    session = (Transcript("ends", project_dir, start=recent).prompt("Make the tests pass")
               .call("Bash", {"command": "pytest -x"}, "Exit code 1\nFAILED", error=True)
               .call("Bash", {"command": "pytest -x tests/"}, {"stdout": "3 passed", "stderr": ""})
               .call("Bash", {"command": "npm run lint"}, "Exit code 2", error=True)
               .reply("The tests pass; lint still fails."))
    path = session.write(claude)
    lines = [json.loads(line) for line in session.lines]
    results = {block["tool_use_id"]: (line, block) for line in lines if isinstance(line["message"]["content"], list)
               for block in line["message"]["content"] if block.get("type") == "tool_result"}
    base = {"session_id": "ends", "transcript_path": str(path), "cwd": str(project_dir)}

    def captured(tool_use_id: str) -> dict[str, Any]:
        call = next(block for line in lines if isinstance(line["message"]["content"], list)
                    for block in line["message"]["content"] if block.get("id") == tool_use_id)
        line, result = results[tool_use_id]
        if result["is_error"]:
            return dict(base, hook_event_name="PostToolUseFailure", tool_name=call["name"], tool_input=call["input"],
                        tool_use_id=tool_use_id, error=result["content"])
        return dict(base, hook_event_name="PostToolUse", tool_name=call["name"], tool_input=call["input"],
                    tool_use_id=tool_use_id, tool_response=line["toolUseResult"])

    live = tmp_path / "live-home"
    run_hook("session_start", dict(base, hook_event_name="SessionStart", source="startup"), live, cwd=project_dir)
    run_hook("post_tool_use", captured("toolu_ends_2"), live, cwd=project_dir)
    run_hook("stop", dict(base, hook_event_name="Stop", last_assistant_message=session_reply(session)), live,
             cwd=project_dir)
    run_hook("session_end", dict(base, hook_event_name="SessionEnd", reason="exit"), live, cwd=project_dir)
    for tool_use_id in ("toolu_ends_1", "toolu_ends_3"):  # their hooks start only now
        run_hook("post_tool_use", captured(tool_use_id), live, cwd=project_dir)
    run(claude)

    def calls(data: Path) -> list[tuple[Any, ...]]:
        monkeypatch.setenv("CCMEMORY_HOME", str(data))
        found = stored("SELECT id, dedupe_key, created_at, tier, category, salience, metadata FROM memories "
                       "WHERE source = 'capture' ORDER BY created_at, seq")
        keys = {row["id"]: row["dedupe_key"] for row in found}
        return [(row["dedupe_key"], row["created_at"], row["tier"], row["category"], row["salience"],
                 keys.get(json.loads(row["metadata"]).get("fixed_by"))) for row in found]

    live_calls = calls(live)
    assert [(key, tier, category, fixed_by) for key, _, tier, category, _, fixed_by in live_calls] == [
        ("toolu_ends_1", "session", "general", "toolu_ends_2"), ("toolu_ends_2", "session", "general", None),
        ("toolu_ends_3", "project", "gotcha", None)]
    assert live_calls == calls(home)


def session_reply(session: Transcript) -> str:
    return json.loads(session.lines[-1])["message"]["content"][0]["text"]
