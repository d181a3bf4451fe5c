"""The rolling local context (seed 002): condensation rules, the 1,000-line cap, clear, the switch,
and what the real Stop and SessionStart hooks do with it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from testing.hooks import (
    assert_quiet_success, bash_call, common, rows, run_hook, tool_call, write_config, write_transcript,
)

from ccmemory import clock, db as database, local_context
from ccmemory.files import commands
from ccmemory import activity


def add_entries(db, directory: Path, count: int, *, themes: int = 3, details: int = 6, start: int = 0) -> None:
    for n in range(start, start + count):
        local_context.record(db, str(directory), session_id="s", title=f"task {n}",
                             details=[f"detail {d} of task {n}" for d in range(details)],
                             files=[f"/p/area{n % themes}/f{n}.py"], theme=f"area{n % themes}", last_seq=n,
                             at=f"2026-01-{1 + n // 1000:02d}T00:{(n // 60) % 60:02d}:{n % 60:02d}.000Z")


def test_the_three_condensation_rules(db, tmp_path: Path) -> None:
    add_entries(db, tmp_path, 100, themes=4)
    text = local_context.render(db, str(tmp_path))
    recent = text.split("## The last 20 entries\n")[1]
    # Rule 1: the newest 20 in full, each with its details.
    assert [line for line in recent.splitlines() if line.startswith("[")] == \
        [f"[{clock.minute(e['at'])}] task {n}"
         for n, e in zip(range(80, 100), local_context.entries(db, str(tmp_path))[-20:])]
    assert recent.count("  - detail ") == 20 * 6
    # Rule 2: entries 21-40 one line each, no details.
    one_line = text.split("one line each\n")[1].split("\n\n")[0].splitlines()
    assert len(one_line) == 20 and all(line.startswith("[") and "detail" not in line for line in one_line)
    assert [line.split("] ")[1].split(" (files")[0] for line in one_line] == [f"task {n}" for n in range(60, 80)]
    # Rule 3: the 60 older ones grouped by theme, counts adding up, latest titles kept.
    grouped = text.split("## Earlier work by theme\n")[1].split("\n\n")[0].splitlines()
    assert len(grouped) == 4
    assert sum(int(line.split(": ")[1].split(" entries")[0]) for line in grouped) == 60
    assert "- area3: 15 entries" in text and "latest: task 59; task 55; task 51" in text
    assert db.scalar("SELECT count(*) FROM local_context_entries") == local_context.KEPT


def test_the_log_never_exceeds_1000_lines_nor_its_row_bounds(db, tmp_path: Path) -> None:
    add_entries(db, tmp_path, 3000, themes=400, details=20)
    text = local_context.render(db, str(tmp_path))
    assert len(text.splitlines()) <= local_context.MAX_LINES
    assert db.scalar("SELECT count(*) FROM local_context_entries") == local_context.KEPT
    assert db.scalar("SELECT count(*) FROM local_context_themes") == local_context.MAX_THEMES
    assert db.scalar("SELECT sum(entries) FROM local_context_themes") == 3000 - local_context.KEPT
    assert "- other: " in text
    worst = local_context.MAX_THEMES + (local_context.KEPT - local_context.DETAILED) \
        + local_context.DETAILED * (1 + local_context.MAX_DETAIL_LINES) + 12
    assert worst <= local_context.MAX_LINES


def test_clear_starts_fresh_and_old_observations_do_not_come_back(db, tmp_path: Path) -> None:
    add_entries(db, tmp_path, 50)
    assert local_context.clear(db, str(tmp_path)) == 50
    text = local_context.render(db, str(tmp_path))
    assert text.splitlines()[2].startswith("Context cleared at ") and "task" not in text
    assert local_context.watermark(db, str(tmp_path), "s")[0] >= 0


def test_the_switch_is_per_directory_inherited_and_has_a_default(db, tmp_path: Path) -> None:
    child = tmp_path / "pkg" / "sub"
    child.mkdir(parents=True)
    assert local_context.is_enabled(db, str(child), True) is True
    assert local_context.is_enabled(db, str(child), False) is False
    local_context.set_enabled(db, str(tmp_path), False)
    assert local_context.is_enabled(db, str(child), True) is False
    local_context.set_enabled(db, str(child), True)
    assert local_context.is_enabled(db, str(child), False) is True
    assert local_context.is_enabled(db, str(tmp_path / "pkg"), True) is False
    local_context.set_enabled(db, str(child), None)
    assert local_context.setting(db, str(child)) == (False, str(tmp_path.resolve()))


def test_themes_follow_the_files_touched() -> None:
    root = "/repo"
    assert activity.theme_of(["/repo/src/auth/jwt.py", "/repo/src/auth/keys.py", "/repo/README.md"], root, False) \
        == "src/auth"
    assert activity.theme_of(["/repo/README.md"], root, False) == "top level"
    assert activity.theme_of(["/elsewhere/x"], root, False) == "outside the project"
    assert activity.theme_of([], root, True) == "shell commands"
    assert activity.theme_of([], root, False) == "conversation"


# -- through the real hooks --------------------------------------------------------------------------
def stop(session_id: str, project: Path, message: str) -> dict:
    return common(session_id, project, "Stop", stop_hook_active=False, last_assistant_message=message)


def session_start(session_id: str, project: Path) -> dict:
    return common(session_id, project, "SessionStart", source="startup", model="claude-sonnet-4-6")


def turn(home: Path, project: Path, session: str, prompts: list[str], calls: list[dict], message: str) -> None:
    write_transcript(project / f"{session}.jsonl", prompts)
    for payload in calls:
        assert_quiet_success(run_hook("post_tool_use", payload, home))
    assert_quiet_success(run_hook("stop", stop(session, project, message), home))


def injected(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stderr.decode()
    return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


def test_stop_records_one_entry_per_turn_from_what_the_hooks_saw(home: Path, project_dir: Path) -> None:
    target = project_dir / "src" / "auth" / "jwt.py"
    turn(home, project_dir, "lc1", ["Add JWT signing"], [
        tool_call("lc1", project_dir, "Write", {"file_path": str(target), "content": "x = 1\n"},
                  {"filePath": str(target)}, "w1"),
        bash_call("lc1", project_dir, "pytest -q", "3 passed", "b1"),
    ], "Done. We decided to use RS256 because the keys rotate.")
    turn(home, project_dir, "lc1", ["Add JWT signing", "Now document it"], [
        tool_call("lc1", project_dir, "Edit", {"file_path": str(project_dir / "README.md"), "old_string": "a",
                                               "new_string": "b"}, {"filePath": str(project_dir / "README.md")},
                  "e1"),
    ], "Documented.")
    entries = rows(home, "SELECT title, details, theme FROM local_context_entries ORDER BY id")
    assert [(e["title"], e["theme"]) for e in entries] == [("Add JWT signing", "src/auth"),
                                                          ("Now document it", "top level")]
    first = json.loads(entries[0]["details"])
    assert first[0] == "Files changed: src/auth/jwt.py"
    assert "Commands: pytest -q (Run it)" in first and "Decisions: We decided to use RS256 because the keys rotate." in first
    assert json.loads(entries[1]["details"])[0] == "Files changed: README.md"

    context = injected(run_hook("session_start", session_start("lc2", project_dir), home))
    assert "Recent activity in this directory" in context
    assert context.index("Now document it") < context.index("Add JWT signing")


def test_a_directory_switched_off_records_and_injects_nothing(home: Path, project_dir: Path) -> None:
    db = database.connect(vectors=False)
    local_context.set_enabled(db, str(project_dir), False)
    db.close()
    turn(home, project_dir, "off1", ["Quiet work"], [bash_call("off1", project_dir, "ls", "a", "t1")], "ok")
    assert rows(home, "SELECT * FROM local_context_entries") == []
    assert "Recent activity" not in run_hook("session_start", session_start("off2", project_dir), home).stdout.decode()


def test_config_default_off_is_documented_and_obeyed(home: Path, project_dir: Path) -> None:
    write_config(home, {"local_context": {"enabled": False}})
    turn(home, project_dir, "cfg1", ["Work"], [bash_call("cfg1", project_dir, "ls", "a", "t1")], "ok")
    assert rows(home, "SELECT * FROM local_context_entries") == []


def test_cleared_context_does_not_return_at_the_next_stop(home: Path, project_dir: Path) -> None:
    turn(home, project_dir, "c1", ["First"], [bash_call("c1", project_dir, "make", "ok", "t1")], "ok")
    db = database.connect(vectors=False)
    local_context.clear(db, str(project_dir))
    db.close()
    turn(home, project_dir, "c1", ["First", "Second"], [bash_call("c1", project_dir, "make test", "ok", "t2")],
         "ok")
    entries = rows(home, "SELECT title, details FROM local_context_entries")
    assert [e["title"] for e in entries] == ["Second"]
    assert json.loads(entries[0]["details"])[0] == "Commands: make test (Run it)"


def test_session_end_records_a_last_turn_that_never_reached_stop(home: Path, project_dir: Path) -> None:
    turn(home, project_dir, "se1", ["First"], [bash_call("se1", project_dir, "make", "ok", "t1")], "ok")
    write_transcript(project_dir / "se1.jsonl", ["First", "Interrupted one"])
    assert_quiet_success(run_hook("post_tool_use", bash_call("se1", project_dir, "make deploy", "", "t2"), home))
    assert_quiet_success(run_hook("session_end", common("se1", project_dir, "SessionEnd", reason="other"), home))
    assert_quiet_success(run_hook("session_end", common("se1", project_dir, "SessionEnd", reason="other"), home))
    entries = rows(home, "SELECT title, details FROM local_context_entries ORDER BY id")
    assert [e["title"] for e in entries] == ["First", "Interrupted one"]
    assert json.loads(entries[1]["details"]) == ["Commands: make deploy (Run it)"]


def test_session_start_puts_memory_files_first_and_stays_in_budget(home: Path, project_dir: Path) -> None:
    write_config(home, {"context": {"max_tokens": 1000}})
    turn(home, project_dir, "f1", ["Set things up"], [bash_call("f1", project_dir, "make", "ok", "t1")],
         "We decided to keep make because CI uses it.")
    db = database.connect(vectors=False)
    from ccmemory import projects

    call = commands.Call(projects.project_id(db, project_dir))
    commands.execute(db, {"command": "create", "path": "/memories/progress.md",
                          "file_text": "# Progress\n- step 1 done\n"}, call)
    commands.execute(db, {"command": "create", "path": "/memories/user/prefs.md", "file_text": "Use tabs.\n"}, call)
    commands.execute(db, {"command": "create", "path": "/memories/big.md", "file_text": "B" * 20_000}, call)
    db.close()
    context = injected(run_hook("session_start", session_start("f2", project_dir), home))
    assert len(context) <= 1000 * 4
    assert context.index("Memory files") < context.index("Recent activity") < context.index("Recent sessions")
    assert '<file path="/memories/progress.md"' in context and "- step 1 done" in context
    assert '<file path="/memories/user/prefs.md"' in context
    assert "Not shown, view them when needed: /memories/big.md" in context or "more characters: view /memories/big.md" \
        in context


# -- the CLI -----------------------------------------------------------------------------------------
def cli(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    from testing.cli import spawn

    return spawn(home, None, *args, stdin=stdin)


def test_context_show_clear_and_switch_from_the_cli(home: Path, project_dir: Path) -> None:
    turn(home, project_dir, "cli1", ["Build the parser"], [bash_call("cli1", project_dir, "make parser", "ok", "t1")],
         "ok")
    shown = cli(home, "context", "show", "--dir", str(project_dir))
    assert shown.returncode == 0 and "] Build the parser" in shown.stdout and "Commands: make parser (Run it)" in shown.stdout
    written = cli(home, "context", "show", "--dir", str(project_dir), "--write")
    assert (project_dir / "local-context.md").read_text() == shown.stdout and "Written to" in written.stderr
    as_json = json.loads(cli(home, "context", "show", "--dir", str(project_dir), "--json").stdout)
    assert as_json["state"].startswith("on (the default") and as_json["entries"][0]["title"] == "Build the parser"

    off = cli(home, "context", "off", "--dir", str(project_dir))
    assert off.stdout.strip() == f"Local context for {project_dir.resolve()}: off (set here)."
    assert cli(home, "context", "default", "--dir", str(project_dir)).stdout.strip().endswith(
        "on (the default, local_context.enabled in config.json).")
    cleared = cli(home, "context", "clear", "--dir", str(project_dir))
    assert cleared.stdout.strip() == f"Context cleared for {project_dir.resolve()} (1 entries). Starting fresh."
    assert "Context cleared at" in cli(home, "context", "show", "--dir", str(project_dir)).stdout
    assert cli(home, "context", "--preview", "--project", str(project_dir)).returncode == 0


def test_write_refuses_a_symlink(home: Path, project_dir: Path, tmp_path: Path) -> None:
    turn(home, project_dir, "sl1", ["x"], [bash_call("sl1", project_dir, "ls", "a", "t1")], "ok")
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    (project_dir / "local-context.md").symlink_to(outside)
    result = cli(home, "context", "show", "--dir", str(project_dir), "--write")
    assert result.returncode == 1 and "not a regular file" in result.stderr
    assert outside.read_text() == "keep"


@pytest.mark.parametrize("args", [["list"], ["show", "notes.md"], ["rm", "notes.md"], ["mv", "a.md", "b.md"],
                                  ["log"]])
def test_files_cli_commands_have_help(home: Path, args: list[str]) -> None:
    assert cli(home, "files", args[0], "--help").returncode == 0
