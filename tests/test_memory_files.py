"""The memory tool's commands, result strings and error strings, on a real SQLite store.

Strings are Anthropic's ``memory_20250818`` ones (``peers.md`` §4.7); each test names the
command and the string it shows. Concurrency uses real processes on one database file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ccmemory import projects
from ccmemory.db import Database
from ccmemory.files import commands, paths, store
from ccmemory.files.commands import MAX_FILE_BYTES, VIEW_MAX_CHARS, Call
from ccmemory.files.paths import MemoryFileError
from testing.env import isolated_env


@pytest.fixture
def call(project: int) -> Call:
    return Call(project, "session-1", "test")


def run(db: Database, call: Call, **arguments) -> str:
    return commands.execute(db, arguments, call)


def fails(db: Database, call: Call, **arguments) -> MemoryFileError:
    with pytest.raises(MemoryFileError) as caught:
        commands.execute(db, arguments, call)
    return caught.value


def test_create_then_view_file_with_line_numbers(db, call) -> None:
    assert run(db, call, command="create", path="/memories/notes.md", file_text="alpha\nbeta\n") == \
        "File created successfully at: /memories/notes.md"
    assert run(db, call, command="view", path="/memories/notes.md") == (
        "Here's the content of /memories/notes.md with line numbers:\n     1\talpha\n     2\tbeta")


def test_create_accepts_seed_003_content_alias(db, call) -> None:
    run(db, call, command="create", path="/memories/alias.md", content="from content")
    assert "from content" in run(db, call, command="view", path="/memories/alias.md")


def test_create_refuses_an_existing_file(db, call) -> None:
    run(db, call, command="create", path="/memories/once.md", file_text="1")
    error = fails(db, call, command="create", path="/memories/once.md", file_text="2")
    assert str(error) == "Error: File /memories/once.md already exists" and error.failed
    assert "1" in run(db, call, command="view", path="/memories/once.md")


def test_create_is_markdown_only(db, call) -> None:
    error = fails(db, call, command="create", path="/memories/notes.txt", file_text="x")
    assert str(error) == "Error: Only Markdown files are stored: /memories/notes.txt must end in .md."


@pytest.mark.parametrize("arguments, message", [
    ({"command": "create", "path": "/memories/x.md"}, "Error: Parameter `file_text` is required for command: create"),
    ({"command": "create", "file_text": "x"}, "Error: Parameter `path` is required for command: create"),
    ({"command": "str_replace", "path": "/memories/x.md"},
     "Error: Parameter `old_str` is required for command: str_replace"),
    ({"command": "insert", "path": "/memories/x.md"},
     "Error: Parameter `insert_text` is required for command: insert"),
    ({"command": "rename", "old_path": "/memories/x.md"}, "Error: Parameter `new_path` is required for command: rename"),
    ({"command": "delete"}, "Error: Parameter `path` is required for command: delete"),
    ({"command": "create", "path": "/memories/x.md", "file_text": 5},
     "Error: Parameter `file_text` of create must be a string, got int"),
    ({"command": "str_replace", "path": "/memories/x.md", "old_str": "a", "new_str": ["b"]},
     "Error: Parameter `new_str` of str_replace must be a string, got list"),
    ({"command": "format_disk"}, "Error: Unknown command 'format_disk'. The memory tool's commands are: view, "
                                 "create, str_replace, insert, delete, rename."),
    ({}, "Error: Unknown command 'None'."),
])
def test_missing_parameters_and_unknown_commands(db, call, arguments, message) -> None:
    assert str(fails(db, call, **arguments)).startswith(message)


def test_view_of_a_missing_path(db, call) -> None:
    for path in ("/memories/missing.md", "/memories/no-such-dir"):
        assert str(fails(db, call, command="view", path=path)) == \
            f"The path {path} does not exist. Please provide a valid path."


def test_view_directory_lists_two_levels_with_sizes(db, call) -> None:
    run(db, call, command="create", path="/memories/top.md", file_text="x" * 2048)
    run(db, call, command="create", path="/memories/a/b/deep.md", file_text="y" * 100)
    run(db, call, command="create", path="/memories/a/c/deeper/deepest.md", file_text="z")
    run(db, call, command="create", path="/memories/user/prefs.md", file_text="tabs")
    assert run(db, call, command="view", path="/memories") == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and "
        "node_modules:\n"
        "2.1K\t/memories\n101\t/memories/a\n100\t/memories/a/b\n1\t/memories/a/c\n2.0K\t/memories/top.md\n"
        "4\t/memories/user\n4\t/memories/user/prefs.md")
    assert run(db, call, command="view") == run(db, call, command="view", path="/memories/")
    assert run(db, call, command="view", path="/memories/a").endswith(
        "101\t/memories/a\n100\t/memories/a/b\n100\t/memories/a/b/deep.md\n1\t/memories/a/c\n1\t/memories/a/c/deeper")


def test_empty_scopes_can_be_viewed(db, call) -> None:
    assert run(db, call, command="view").endswith("node_modules:\n0\t/memories")
    assert run(db, call, command="view", path="/memories/user").endswith("node_modules:\n0\t/memories/user")


def test_view_range_and_its_errors(db, call) -> None:
    run(db, call, command="create", path="/memories/r.md", file_text="".join(f"line {n}\n" for n in range(1, 11)))
    assert run(db, call, command="view", path="/memories/r.md", view_range=[3, 4]) == (
        "Here's the content of /memories/r.md with line numbers:\n     3\tline 3\n     4\tline 4")
    assert run(db, call, command="view", path="/memories/r.md", view_range=[9, -1]).endswith(
        "     9\tline 9\n    10\tline 10")
    for bad in ([0, 2], [5, 11], [6, 5], [11, -1]):
        assert str(fails(db, call, command="view", path="/memories/r.md", view_range=bad)) == (
            f"Error: Invalid `view_range` parameter: [{bad[0]}, {bad[1]}]. It should be within the range of "
            "lines of the file: [1, 10]")
    assert str(fails(db, call, command="view", path="/memories/r.md", view_range=[1])).startswith(
        "Error: Invalid `view_range` parameter: it should be a list of two integers")


def test_a_long_view_is_capped_and_pages_with_view_range(db, call) -> None:
    text = "".join(f"{n:05d} " + "w" * 94 + "\n" for n in range(1, 1001))  # 1,000 lines of 100 characters
    run(db, call, command="create", path="/memories/long.md", file_text=text)
    first = run(db, call, command="view", path="/memories/long.md")
    assert len(first) <= VIEW_MAX_CHARS + 200
    note = first.rsplit("\n", 1)[-1]
    assert note.startswith("[… lines ") and "Call view with view_range [" in note
    start, end = (int(n) for n in note.split("view_range [")[1].rstrip(" to read on.]").split(", "))  # noqa: B005 - strips the characters of the note's tail
    assert end == 1000
    seen = [line for line in first.splitlines()[1:-1]]
    while True:
        page = run(db, call, command="view", path="/memories/long.md", view_range=[start, end])
        assert len(page) <= VIEW_MAX_CHARS + 200
        lines = page.splitlines()[1:]
        if lines[-1].startswith("[… lines "):
            seen += lines[:-1]
            start = int(lines[-1].split("view_range [")[1].split(",")[0])
        else:
            seen += lines
            break
    assert [int(line.split("\t")[1][:5]) for line in seen] == list(range(1, 1001))


def test_str_replace_shows_a_numbered_snippet(db, call) -> None:
    run(db, call, command="create", path="/memories/s.md", file_text="".join(f"l{n}\n" for n in range(1, 13)))
    result = run(db, call, command="str_replace", path="/memories/s.md", old_str="l6", new_str="six")
    assert result == "The memory file has been edited.\n" + "\n".join(
        f"{n:>6}\t{'six' if n == 6 else f'l{n}'}" for n in range(2, 11))
    assert "six" in run(db, call, command="view", path="/memories/s.md", view_range=[6, 6])


def test_str_replace_errors(db, call) -> None:
    run(db, call, command="create", path="/memories/e.md", file_text="same\nother\nsame\n")
    error = fails(db, call, command="str_replace", path="/memories/e.md", old_str="absent", new_str="x")
    assert str(error) == "No replacement was performed, old_str `absent` did not appear verbatim in /memories/e.md."
    error = fails(db, call, command="str_replace", path="/memories/e.md", old_str="same", new_str="x")
    assert str(error) == ("No replacement was performed. Multiple occurrences of old_str `same` in lines: 1, 3. "
                          "Please ensure it is unique")
    for path in ("/memories/none.md", "/memories"):  # a directory counts as does-not-exist
        assert str(fails(db, call, command="str_replace", path=path, old_str="a", new_str="b")) == \
            f"Error: The path {path} does not exist"


def test_str_replace_with_no_new_str_deletes_the_text(db, call) -> None:
    run(db, call, command="create", path="/memories/d.md", file_text="keep drop keep\n")
    run(db, call, command="str_replace", path="/memories/d.md", old_str=" drop")
    assert run(db, call, command="view", path="/memories/d.md").endswith("\tkeep keep")


def test_insert_at_a_line_and_at_start_or_end(db, call) -> None:
    run(db, call, command="create", path="/memories/i.md", file_text="one\ntwo\n")
    assert run(db, call, command="insert", path="/memories/i.md", insert_line=1, insert_text="one and a half\n") == \
        "The file /memories/i.md has been edited."
    run(db, call, command="insert", path="/memories/i.md", position="start", content="zero")
    run(db, call, command="insert", path="/memories/i.md", position="end", insert_text="three\n")
    run(db, call, command="insert", path="/memories/i.md", insert_line="5", insert_text="four")
    row = store.get(db, call.project_id, "i.md")
    assert row.content == "zero\none\none and a half\ntwo\nthree\nfour\n"


def test_insert_errors(db, call) -> None:
    run(db, call, command="create", path="/memories/j.md", file_text="a\nb\nc\n")
    for line in (-1, 4, 99):
        assert str(fails(db, call, command="insert", path="/memories/j.md", insert_line=line, insert_text="x")) == (
            f"Error: Invalid `insert_line` parameter: {line}. It should be within the range of lines of the file: "
            "[0, 3]")
    assert str(fails(db, call, command="insert", path="/memories/j.md", insert_line=1.5, insert_text="x")) == \
        "Error: Parameter `insert_line` must be an integer, got 1.5"
    assert str(fails(db, call, command="insert", path="/memories/j.md", position="middle", insert_text="x")) == \
        "Error: Invalid `position` parameter: middle. It should be start or end"
    assert str(fails(db, call, command="insert", path="/memories/j.md", insert_text="x")) == \
        "Error: Parameter `insert_line` is required for command: insert"
    assert str(fails(db, call, command="insert", path="/memories/k.md", insert_line=0, insert_text="x")) == \
        "Error: The path /memories/k.md does not exist"


def test_delete_a_file_a_directory_and_the_errors(db, call) -> None:
    run(db, call, command="create", path="/memories/gone.md", file_text="x")
    run(db, call, command="create", path="/memories/dir/a.md", file_text="x")
    run(db, call, command="create", path="/memories/dir/sub/b.md", file_text="x")
    assert run(db, call, command="delete", path="/memories/gone.md") == "Successfully deleted /memories/gone.md"
    assert run(db, call, command="delete", path="/memories/dir") == "Successfully deleted /memories/dir"
    assert store.visible(db, call.project_id) == []
    assert str(fails(db, call, command="delete", path="/memories/gone.md")) == \
        "Error: The path /memories/gone.md does not exist"
    for root in ("/memories", "/memories/user"):
        assert str(fails(db, call, command="delete", path=root)).startswith(
            f"Error: Cannot delete the {root} directory itself")


def test_rename_files_and_directories_and_the_errors(db, call) -> None:
    run(db, call, command="create", path="/memories/draft.md", file_text="d")
    run(db, call, command="create", path="/memories/taken.md", file_text="t")
    run(db, call, command="create", path="/memories/folder/x.md", file_text="x")
    assert run(db, call, command="rename", old_path="/memories/draft.md", new_path="/memories/final.md") == \
        "Successfully renamed /memories/draft.md to /memories/final.md"
    assert run(db, call, command="rename", old_path="/memories/folder", new_path="/memories/moved/here") == \
        "Successfully renamed /memories/folder to /memories/moved/here"
    assert store.get(db, call.project_id, "moved/here/x.md").content == "x"
    assert str(fails(db, call, command="rename", old_path="/memories/final.md", new_path="/memories/taken.md")) == \
        "Error: The destination /memories/taken.md already exists"
    assert store.get(db, call.project_id, "taken.md").content == "t"
    assert str(fails(db, call, command="rename", old_path="/memories/nope.md", new_path="/memories/n.md")) == \
        "Error: The path /memories/nope.md does not exist"
    assert str(fails(db, call, command="rename", old_path="/memories/final.md", new_path="/memories/f.txt")) == \
        "Error: Only Markdown files are stored: /memories/f.txt must end in .md."
    assert str(fails(db, call, command="rename", old_path="/memories/moved", new_path="/memories/moved/in")) == \
        "Error: Cannot move the directory /memories/moved into itself (/memories/moved/in)."
    assert str(fails(db, call, command="rename", old_path="/memories/moved", new_path="/memories/m.md")).startswith(
        "Error: /memories/moved is a directory")
    assert str(fails(db, call, command="rename", old_path="/memories/user", new_path="/memories/u")).startswith(
        "Error: Cannot rename the /memories/user directory itself")


def test_rename_moves_between_the_project_and_the_user_scope(db, call, tmp_path) -> None:
    run(db, call, command="create", path="/memories/pref.md", file_text="tabs")
    run(db, call, command="rename", old_path="/memories/pref.md", new_path="/memories/user/pref.md")
    other = projects.project_id(db, tmp_path)
    assert "tabs" in run(db, Call(other), command="view", path="/memories/user/pref.md")


# -- limits ------------------------------------------------------------------------------------------
def test_the_100_kb_limit_on_create_str_replace_and_insert(db, call) -> None:
    exactly = "x" * MAX_FILE_BYTES
    assert run(db, call, command="create", path="/memories/full.md", file_text=exactly).startswith("File created")
    over = fails(db, call, command="create", path="/memories/over.md", file_text="é" * (MAX_FILE_BYTES // 2 + 1))
    assert str(over) == ("Error: File /memories/over.md would be 102,402 bytes; a memory file holds at most 102,400 "
                         "bytes (100 KB). Split it into several files or shorten it.")
    assert str(fails(db, call, command="str_replace", path="/memories/full.md", old_str="xx", new_str="xxx")) \
        .startswith("No replacement was performed. Multiple occurrences")
    run(db, call, command="create", path="/memories/near.md", file_text="a" * (MAX_FILE_BYTES - 1))
    assert "would be 102,402 bytes" in str(fails(db, call, command="insert", path="/memories/near.md",
                                                  position="end", insert_text="bb"))
    run(db, call, command="create", path="/memories/small.md", file_text="b" * (MAX_FILE_BYTES - 10) + "TAIL")
    assert "would be 102,410 bytes" in str(fails(db, call, command="str_replace", path="/memories/small.md",
                                                  old_str="TAIL", new_str="T" * 20))
    assert store.get(db, call.project_id, "near.md").size == MAX_FILE_BYTES - 1
    assert store.get(db, call.project_id, "over.md") is None


def test_secrets_are_redacted_on_every_write(db, call) -> None:
    key = "sk-ant-api03-" + "A1b2C3d4" * 5
    result = run(db, call, command="create", path="/memories/s.md", file_text=f"deploy key {key}\n")
    assert result == ("File created successfully at: /memories/s.md\nNote: 1 secret-looking value replaced with "
                      "[REDACTED] before saving; memory files never hold secrets.")
    run(db, call, command="str_replace", path="/memories/s.md", old_str="deploy", new_str="DB_PASSWORD=hunter2hunter2")
    run(db, call, command="insert", path="/memories/s.md", position="end", insert_text=f"again {key}")
    content = store.get(db, call.project_id, "s.md").content
    assert key not in content and "hunter2hunter2" not in content and content.count("[REDACTED]") == 3
    assert "<private>" not in run(db, call, command="create", path="/memories/p.md",
                                  file_text="public <private>hidden</private> end")
    assert store.get(db, call.project_id, "p.md").content == "public  end"


def test_every_operation_is_in_the_audit_log_without_content(db, call) -> None:
    run(db, call, command="create", path="/memories/a.md", file_text="secret-free body")
    fails(db, call, command="view", path="/memories/../../etc/passwd")
    run(db, call, command="rename", old_path="/memories/a.md", new_path="/memories/b.md")
    rows = store.log_rows(db, call.project_id)
    assert [(r["command"], r["ok"], r["path"], r["new_path"]) for r in rows] == [
        ("rename", 1, "/memories/a.md", "/memories/b.md"),
        ("view", 0, "/memories/../../etc/passwd", None),
        ("create", 1, "/memories/a.md", None),
    ]
    assert {r["session_id"] for r in rows} == {"session-1"} and {r["source"] for r in rows} == {"test"}
    assert all("secret-free body" not in r["detail"] for r in rows)


# -- paths -------------------------------------------------------------------------------------------
HOSTILE_PATHS = [
    "/memories/../etc/passwd.md",
    "/memories/../../etc/passwd",
    "/memories/a/../../b.md",
    "/memories/./x.md",
    "/memories/a/./b.md",
    "/memories/..",
    "/memories/..\\..\\windows\\win.ini",
    "\\memories\\x.md",
    "/memories\\..\\x.md",
    "/memories/%2e%2e/x.md",
    "/memories/%2e%2e%2fsecret.md",
    "/memories/%252e%252e/x.md",
    "/memories/..%2fx.md",
    "/memories/%2E%2E/x.md",
    "/memories//x.md",
    "//memories/x.md",
    "/memories/a//b.md",
    "/etc/passwd",
    "/tmp/x.md",
    "memories/x.md",
    "x.md",
    "",
    "/memoriesx/y.md",
    "/memories-other/y.md",
    "/memories/.hidden.md",
    "/memories/.ssh/id_rsa.md",
    "/memories/a\x00.md",
    "/memories/a\n.md",
    "/memories/\u2025/x.md",
    "/memories/\uff0e\uff0e/x.md",
    "/memories/caf\u00e9.md",
    "/memories/a b.md",
    "/memories/~/x.md",
    "/memories/$HOME.md",
    "/memories/a.md/b.md",
    "/memories/" + "a" * 500 + ".md",
    "/memories/-rf.md",
    "/memories/sk-ant-api03-" + "A1b2C3d4" * 5 + ".md",
    "file:///memories/x.md",
    "/memories/x.md?y=1",
]


def test_hostile_paths_table_has_enough_rows() -> None:
    assert len(HOSTILE_PATHS) >= 30 and len(set(HOSTILE_PATHS)) == len(HOSTILE_PATHS)


@pytest.mark.parametrize("hostile", HOSTILE_PATHS)
def test_hostile_paths_are_rejected_by_every_command_and_nothing_is_written(db, call, hostile, tmp_path,
                                                                            home) -> None:
    run(db, call, command="create", path="/memories/safe.md", file_text="safe")
    before_files = sorted(p for p in tmp_path.rglob("*") if "ccmemory.db" not in p.name)
    attempts = [
        {"command": "view", "path": hostile},
        {"command": "create", "path": hostile, "file_text": "pwned"},
        {"command": "str_replace", "path": hostile, "old_str": "safe", "new_str": "pwned"},
        {"command": "insert", "path": hostile, "insert_line": 0, "insert_text": "pwned"},
        {"command": "delete", "path": hostile},
        {"command": "rename", "old_path": "/memories/safe.md", "new_path": hostile},
        {"command": "rename", "old_path": hostile, "new_path": "/memories/stolen.md"},
    ]
    for arguments in attempts:
        error = fails(db, call, **arguments)
        assert str(error).startswith(("Error: The path", "Error: Only Markdown")), (arguments, str(error))
        assert "not allowed" in str(error) or "Only Markdown" in str(error) or "does not exist" in str(error)
    rows = db.rows("SELECT project_id, path, content FROM memory_files")
    assert rows == [{"project_id": call.project_id, "path": "safe.md", "content": "safe"}]
    assert sorted(p for p in tmp_path.rglob("*") if "ccmemory.db" not in p.name) == before_files


def test_paths_are_checked_by_an_allowlist_not_rewritten() -> None:
    assert paths.parse("/memories/").path == "/memories"
    assert paths.parse("/memories/user/x.md").user and paths.parse("/memories/user/x.md").rel == "x.md"
    assert not paths.parse("/memories/user.md").user
    assert paths.parse("/memories/v1.2/notes_2-final.md").is_file
    with pytest.raises(MemoryFileError):
        paths.parse("/memories/" + "a/" * 250 + "b.md")


# -- concurrency and scopes --------------------------------------------------------------------------
WRITER = r"""
import sys
from ccmemory import db as database
from ccmemory.files import commands
from ccmemory.files.paths import MemoryFileError

project_id, name, rounds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
db = database.connect()
call = commands.Call(project_id, name, "test")
retries = 0
for n in range(rounds):
    commands.execute(db, {"command": "insert", "path": "/memories/shared.md", "position": "end",
                          "insert_text": f"{name} {n}"}, call)
    while True:  # read, then replace what was read: a stale read fails and is retried, never overwrites
        text = commands.execute(db, {"command": "view", "path": "/memories/counter.md"}, call)
        value = int(text.splitlines()[1].split("count: ")[1])
        try:
            commands.execute(db, {"command": "str_replace", "path": "/memories/counter.md",
                                  "old_str": f"count: {value}\n", "new_str": f"count: {value + 1}\n"}, call)
            break
        except MemoryFileError:
            retries += 1
print(retries)
"""


def test_two_writers_editing_one_file_lose_no_update(db, call, home) -> None:
    run(db, call, command="create", path="/memories/shared.md", file_text="")
    run(db, call, command="create", path="/memories/counter.md", file_text="count: 0\n")
    rounds = 60
    env = isolated_env(home)
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(call.project_id), name, str(rounds)],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for name in ("alice", "bob")]
    for writer in writers:
        out, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err
    lines = store.get(db, call.project_id, "shared.md").content.splitlines()
    assert sorted(lines) == sorted(f"{name} {n}" for name in ("alice", "bob") for n in range(rounds))
    assert [line for line in lines if line.startswith("alice")] == [f"alice {n}" for n in range(rounds)]
    assert store.get(db, call.project_id, "counter.md").content == f"count: {2 * rounds}\n"


def test_scopes_isolate_projects_and_share_the_user_scope(db, tmp_path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        (folder / ".git").mkdir(parents=True)
    a, b = Call(projects.project_id(db, first)), Call(projects.project_id(db, second))
    run(db, a, command="create", path="/memories/plan.md", file_text="A's plan")
    assert str(fails(db, b, command="view", path="/memories/plan.md")) == \
        "The path /memories/plan.md does not exist. Please provide a valid path."
    for arguments in ({"command": "str_replace", "path": "/memories/plan.md", "old_str": "A", "new_str": "B"},
                      {"command": "insert", "path": "/memories/plan.md", "insert_line": 0, "insert_text": "B"},
                      {"command": "delete", "path": "/memories/plan.md"},
                      {"command": "rename", "old_path": "/memories/plan.md", "new_path": "/memories/b.md"}):
        assert "does not exist" in str(fails(db, b, **arguments))
    run(db, b, command="create", path="/memories/plan.md", file_text="B's plan")
    assert "A's plan" in run(db, a, command="view", path="/memories/plan.md")
    assert "B's plan" in run(db, b, command="view", path="/memories/plan.md")
    assert "/memories/plan.md" in run(db, b, command="view")

    run(db, a, command="create", path="/memories/user/style.md", file_text="tabs, not spaces\n")
    run(db, b, command="str_replace", path="/memories/user/style.md", old_str="tabs", new_str="Tabs")
    assert "Tabs, not spaces" in run(db, a, command="view", path="/memories/user/style.md")
    listing_a, listing_b = run(db, a, command="view"), run(db, b, command="view")
    assert "/memories/user/style.md" in listing_a and "/memories/user/style.md" in listing_b
    assert [row.display for row in store.visible(db, a.project_id)] == ["/memories/plan.md",
                                                                         "/memories/user/style.md"]


def test_cli_editor_round_trip_refuses_a_stale_version(db, call) -> None:
    assert commands.overwrite(db, "/memories/e.md", "v1", call, expected_version=None) == "Saved /memories/e.md"
    row = store.get(db, call.project_id, "e.md")
    run(db, call, command="insert", path="/memories/e.md", position="end", insert_text="from Claude")
    error = pytest.raises(MemoryFileError, commands.overwrite, db, "/memories/e.md", "v2", call,
                          expected_version=row.version).value
    assert str(error) == ("Error: /memories/e.md changed while it was being edited (version 1 -> 2); nothing was "
                          "saved. Run the edit again to start from the new text.") and error.failed
    assert store.get(db, call.project_id, "e.md").content == "v1\nfrom Claude"
    assert pytest.raises(MemoryFileError, commands.overwrite, db, "/memories/new.md", "x", call,
                         expected_version=3).value.failed


def test_the_scope_file_count_is_bounded(db, call, monkeypatch) -> None:
    monkeypatch.setattr(commands, "MAX_FILES_PER_SCOPE", 3)
    for path in ("/memories/d/a.md", "/memories/d/b.md", "/memories/user/u.md", "/memories/user/v.md",
                 "/memories/f.md"):
        run(db, call, command="create", path=path, file_text="x")
    assert str(fails(db, call, command="create", path="/memories/g.md", file_text="x")) == (
        "Error: /memories would hold more than 3 files, the most one scope may hold. Merge or delete some files "
        "first.")
    assert str(fails(db, call, command="rename", old_path="/memories/d", new_path="/memories/user/d")).startswith(
        "Error: /memories/user would hold more than 3 files")
    run(db, call, command="rename", old_path="/memories/d/a.md", new_path="/memories/user/a.md")
    assert len(store.under(db, None, "")) == 3


def test_results_are_json_safe_for_mcp(db, call) -> None:
    run(db, call, command="create", path="/memories/u.md", file_text="unicode ✓ \u2028 text")
    json.dumps(run(db, call, command="view", path="/memories/u.md"))


def test_deleting_a_project_deletes_its_files_but_not_the_user_scope(db, call) -> None:
    run(db, call, command="create", path="/memories/p.md", file_text="p")
    run(db, call, command="create", path="/memories/user/u.md", file_text="u")
    with db.transaction():
        db.execute("DELETE FROM projects WHERE id = ?", (call.project_id,))
    assert [r["path"] for r in db.rows("SELECT path FROM memory_files")] == ["u.md"]


def test_directory_names_cannot_look_like_files(db, call) -> None:
    assert "a directory name cannot end in .md" in str(fails(db, call, command="create", path="/memories/a.md/b.md",
                                                             file_text="x"))


def test_human_sizes() -> None:
    assert [commands.human_size(n) for n in (0, 912, 1024, 5632, 1258291)] == ["0", "912", "1.0K", "5.5K", "1.2M"]


def test_the_line_numbers_of_view_match_split_lines() -> None:
    assert commands.split_lines("") == [] and commands.split_lines("a\n") == ["a"]
    assert commands.split_lines("a\n\nb") == ["a", "", "b"]
    assert commands.numbered(["x", "y"], 9) == "     9\tx\n    10\ty"


def test_paths_shown_in_errors_are_escaped(db, call) -> None:
    message = str(fails(db, call, command="view", path="/memories/a\nb.md"))
    assert "\n" not in message.split("is not allowed")[0] and "\\n" in message


def test_no_file_is_left_when_the_store_is_used_from_another_directory(db, call, tmp_path: Path) -> None:
    os.chdir(tmp_path)
    run(db, call, command="create", path="/memories/rel.md", file_text="x")
    assert not (tmp_path / "memories").exists() and not (tmp_path / "rel.md").exists()


def test_a_line_number_that_is_not_a_finite_number_is_refused(vdb, project) -> None:
    from ccmemory.files import commands

    call = commands.Call(project, None, "test")
    commands.execute(vdb, {"command": "create", "path": "/memories/notes.md", "file_text": "a\nb\n"}, call)
    for bad in (float("nan"), float("inf"), float("-inf")):
        with pytest.raises(commands.MemoryFileError, match="must be an integer"):
            commands.execute(vdb, {"command": "insert", "path": "/memories/notes.md", "insert_line": bad,
                                   "insert_text": "x"}, call)
