"""A captured tool call as structured metadata: built from payloads, read back, and given to old rows by migration 12."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from testing.hooks import assert_quiet_success, memories_of, run_hook, tool_call

from ccmemory import db as database, memories, migrations, observations, projects
from ccmemory.config import load
from ccmemory.hooks.context import index_text
from testing.schema import add_memory, old_project, store_before

ROOT = "/work/proj"


def observe(tool: str, tool_input: dict[str, Any], response: Any = None, **extra: Any) -> observations.Observation:
    data = {"session_id": "s", "tool_name": tool, "tool_input": tool_input, "tool_response": response,
            "tool_use_id": f"toolu_{tool}", **extra}
    return observations.from_payload(data, load(Path("/nonexistent/config.json")), cwd=ROOT, root=ROOT)


FAILED = {"hook_event_name": "PostToolUseFailure", "error": "Exit code 1"}


def test_a_bash_call_records_its_command_description_and_key() -> None:
    seen = observe("Bash", {"command": "pytest -q tests/test_a.py", "description": "Run it"}, {"stdout": "1 passed"})
    assert seen.content.split("\n")[0] == "Ran: pytest -q tests/test_a.py (Run it)"
    assert seen.metadata == {"tool": "Bash", "tool_use_id": "toolu_Bash", "command": "pytest -q tests/test_a.py",
                             "description": "Run it"}
    assert observations.outcome(seen.metadata) == observations.OK and not observations.failed(seen.metadata)
    assert observations.shown_command(seen.metadata) == "pytest -q tests/test_a.py (Run it)"
    assert observations.command_key(seen.metadata["command"]) == "pytest"


def test_a_failure_is_recorded_as_its_outcome_and_marked_on_the_head() -> None:
    seen = observe("Bash", {"command": "npm run build"}, None, **FAILED)
    assert seen.content.split("\n")[0] == "Ran: npm run build" + observations.FAILED_MARK
    assert (seen.category, seen.metadata["outcome"]) == ("gotcha", observations.FAILED)
    assert observations.marked_on_first_line(seen.metadata)
    assert observations.shown_command(seen.metadata) == "npm run build (failed)"
    assert observations.shown_command(seen.metadata, marked=False) == "npm run build"
    assert observations.command_key(observations.shown_command(seen.metadata, marked=False)) == "npm run build"


def test_a_failed_script_of_several_lines_shows_its_first_line_and_says_the_mark_is_further_down() -> None:
    seen = observe("Bash", {"command": "cd src &&\nmake all", "description": "Build"}, None, **FAILED)
    assert seen.content.split("\n")[:2] == ["Ran: cd src &&", "make all (Build) (failed)"]
    assert seen.metadata["multiline"] is True and observations.failed(seen.metadata)
    assert not observations.marked_on_first_line(seen.metadata)
    assert observations.shown_command(seen.metadata) == "cd src &&"


def test_edits_record_their_files_and_scope() -> None:
    source = "class Option:\n    def get_help_record(self):\n        return 1\n"
    target = f"{ROOT}/click/core.py"
    seen = observe("MultiEdit", {"file_path": target, "edits": [{"old_string": "return 1", "new_string": "return 2"},
                                                                 {"old_string": "class Option", "new_string": "class Opt"}]},
                   {"filePath": f"{ROOT}/click/moved.py", "originalFile": source})
    assert seen.files == [target, f"{ROOT}/click/moved.py"]
    assert seen.content.split("\n")[0] == "Edited click/core.py (2 edits)"
    assert seen.metadata == {"tool": "MultiEdit", "tool_use_id": "toolu_MultiEdit"}
    edit = observe("Edit", {"file_path": target, "old_string": "return 1", "new_string": "return 2"},
                   {"filePath": target, "originalFile": source}, **FAILED)
    assert edit.metadata == {"tool": "Edit", "tool_use_id": "toolu_Edit", "outcome": "failed",
                             "scope": "Option.get_help_record"}
    assert edit.content.split("\n")[0] == "Edited click/core.py in Option.get_help_record (failed)"


def test_what_capture_stores_reads_back_from_the_metadata_column(home: Path, project_dir: Path) -> None:
    payload = tool_call("s-obs", project_dir, "Bash", {"command": "make test", "description": "Run the tests"}, None,
                        "toolu_obs", event="PostToolUseFailure", error="Exit code 2")
    assert_quiet_success(run_hook("post_tool_use", payload, home))
    [row] = memories_of(home, "s-obs")
    built = observations.from_payload(payload, load(Path("/nonexistent/config.json")), cwd=str(project_dir),
                                      root=str(project_dir))
    metadata = observations.metadata_of(row["metadata"])
    assert metadata == built.metadata and row["content"] == built.content
    assert observations.tool_of(metadata) == "Bash" and observations.outcome(metadata) == observations.FAILED
    assert observations.metadata_of("") == observations.metadata_of("[1]") == observations.metadata_of("{") == {}
    assert observations.tool_of({}) == "tool"


@pytest.mark.parametrize("command,key", [
    ("pytest -x tests/", "pytest"), ("cd app && npm run build", "npm run build"), ("FOO=1 sudo make", "make"),
    ("python3 -m pytest -q", "pytest"), ("/usr/bin/git status --short", "git status"), ("", ""),
])
def test_command_key_keeps_what_a_command_does(command: str, key: str) -> None:
    assert observations.command_key(command) == key


# -- migration 12: rows stored before the metadata existed ---------------------------------------------------------

#: (tool, input, response, failed): one of each shape of head the readers care about.
CALLS = [
    ("Bash", {"command": "pytest -q tests/test_a.py", "description": "Run it"}, {"stdout": "ok"}, False),
    ("Bash", {"command": "make test", "description": "Build"}, None, True),
    ("Bash", {"command": "cd src &&\nmake all", "description": "Build"}, None, True),
    ("Bash", {"command": "for f in *; do\n  echo $f\ndone"}, {"stdout": "a"}, False),
    ("Bash", {"command": "git log --oneline", "run_in_background": True}, {"stdout": "abc"}, False),
    ("Grep", {"pattern": "first\nsecond"}, None, True),
    ("Edit", {"file_path": f"{ROOT}/a.py", "old_string": "x", "new_string": "y"},
     {"filePath": f"{ROOT}/a.py", "originalFile": "def f():\n    x\n"}, False),
    ("Read", {"file_path": f"{ROOT}/a.py"}, "text", True),
]


def _readers(metadata: dict[str, Any]) -> tuple:
    """Everything a reader takes from an observation's metadata."""
    shown = observations.shown_command(metadata)
    return (observations.tool_of(metadata), observations.outcome(metadata), observations.marked_on_first_line(metadata),
            shown, observations.shown_command(metadata, marked=False), observations.command_key(shown),
            metadata.get("scope"), metadata.get("tool_use_id"))


def test_migration_12_gives_old_captures_the_metadata_their_readers_need(tmp_path: Path) -> None:
    path = tmp_path / "v11.db"
    old = store_before(migrations._m012_observation_metadata, path)
    built = [observe(tool, tool_input, response, **(FAILED if failed else {}))
             for tool, tool_input, response, failed in CALLS]
    with old.transaction():
        project = old_project(old, str(tmp_path))
        stored = []
        for n, seen in enumerate(built):
            # what capture stored before: the tool, the call's id and an edit's scope
            before = {key: seen.metadata[key] for key in ("tool", "scope", "tool_use_id") if key in seen.metadata}
            if n == len(built) - 1:
                before.pop("tool")  # the oldest rows named their tool only in their tags
            stored.append(add_memory(old, project_id=project, content=seen.content, session_id="s-old",
                                       category=seen.category, tags=[seen.tool], files=seen.files, source="capture",
                                       metadata=before, dedupe_key=f"toolu_{n}").id)
        settled = add_memory(old, project_id=project, content="Ran: pytest -x (failed)\nError:\nExit code 1",
                               session_id="s-old", tags=["Bash"], source="capture",
                               metadata={"tool": "Bash", "fixed_by": "m-2"}).id
        curated = add_memory(old, project_id=project, content="Ran: a note, not a capture (failed)",
                               metadata={"tool": "Bash"}).id
        old.execute("UPDATE memories SET needs_embedding = 0")  # as if embedded: only metadata may change
    old.close()

    db = database.connect(path)
    try:
        assert migrations.current_version(db) == migrations.target_version()
        for memory_id, seen in zip(stored, built):
            memory = memories.get(db, memory_id, project_id=project)
            assert _readers(memory.metadata) == _readers(seen.metadata), seen.content.split("\n")[0]
            assert index_text(memory) == seen.content.split("\n")[0] + (
                "" if seen.category != "gotcha" or observations.marked_on_first_line(seen.metadata) else " … (failed)")
            if seen.metadata.get("multiline") and observations.failed(seen.metadata):
                assert memory.metadata["multiline"] is True
        settled_memory = memories.get(db, settled, project_id=project)
        assert settled_memory.metadata == {"outcome": "failed", "command": "pytest -x", "tool": "Bash",
                                           "fixed_by": "m-2"}
        assert memories.get(db, curated, project_id=project).metadata == {"tool": "Bash"}, "only captured tool calls are parsed"
        assert db.scalar("SELECT COUNT(*) FROM memories WHERE needs_embedding = 1") == 0
        assert migrations.migrate(db) == 0
    finally:
        db.close()


def test_an_export_written_before_migration_12_imports_with_the_observation_metadata(tmp_path: Path) -> None:
    import io

    from ccmemory.archive import jsonl, records
    from ccmemory.redaction import redact

    old = database.connect(tmp_path / "old.db")
    with old.transaction():
        project = old_project(old, str(tmp_path))
        memories.add(old, project_id=project, content="Ran: make deploy (failed)\nError:\nExit code 2",
                     category="gotcha", tags=["Bash"], source="capture", metadata={"tool": "Bash"})
    written = io.StringIO()
    jsonl.export(old, written, records.Scope(project_ids=(project,)))
    old.close()
    assert '"metadata":{"tool":"Bash"}' in written.getvalue()  # as an export of that time has it

    new = database.connect(tmp_path / "new.db")
    try:
        report = jsonl.import_file(new, io.BytesIO(written.getvalue().encode()), redact=redact, all_projects=True)
        assert not report.failed
        [memory] = memories.list_memories(new, project_id=projects.project_id(new, str(tmp_path)))
        assert memory.metadata == {"tool": "Bash", "outcome": "failed", "command": "make deploy"}
        assert index_text(memory) == "Ran: make deploy (failed)"
    finally:
        new.close()


# -- Claude Code 2's result shapes ------------------------------------------------------------------------------

def test_a_call_the_user_interrupted_is_marked_so_not_stored_as_a_failure() -> None:
    """Esc is the user's choice, not the tool failing: no gotcha, no failure salience, nothing to promote."""
    interrupt = {"hook_event_name": "PostToolUseFailure", "error": "[Request interrupted by user for tool use]",
                 "is_interrupt": True}
    seen = observe("Bash", {"command": "npm test -- --watch", "description": "Watch tests"}, None, **interrupt)
    assert seen.content == "Ran: npm test -- --watch (Watch tests)" + observations.INTERRUPTED_MARK
    assert (seen.category, seen.salience) == ("general", observations.SALIENCE["Bash"])
    assert seen.metadata["outcome"] == observations.INTERRUPTED and not observations.failed(seen.metadata)
    assert observations.shown_command(seen.metadata) == "npm test -- --watch (Watch tests) (interrupted)"
    # A transcript (backfill) has no flag, only the result's text.
    replayed = observe("Bash", {"command": "sleep 100"}, None, hook_event_name="PostToolUseFailure",
                       error="[Request interrupted by user for tool use]")
    assert replayed.metadata["outcome"] == observations.INTERRUPTED


def test_the_fields_that_echo_a_file_back_do_not_count_towards_the_size_limit() -> None:
    """Claude Code 2 adds ``gitDiff`` to Edit and Write, and NotebookEdit returns the whole notebook twice."""
    config = load(Path("/nonexistent/config.json"))
    big = "x = 1\n" * 5000
    edit = {"filePath": f"{ROOT}/a.py", "oldString": "x = 1", "newString": "x = 2", "originalFile": big,
            "structuredPatch": [], "userModified": False, "replaceAll": True,
            "gitDiff": {"filename": "a.py", "status": "modified", "additions": 5000, "deletions": 5000,
                        "changes": 10000, "patch": "-x = 1\n+x = 2\n" * 5000}}
    notebook = {"new_source": "print(1)", "old_source": big, "cell_id": "c1", "cell_type": "code",
                "language": "python", "edit_mode": "replace", "notebook_path": f"{ROOT}/n.ipynb",
                "original_file": big, "updated_file": big}
    for tool, tool_input, response in (
            ("Edit", {"file_path": f"{ROOT}/a.py", "old_string": "x = 1", "new_string": "x = 2", "replace_all": True},
             edit),
            ("NotebookEdit", {"notebook_path": f"{ROOT}/n.ipynb", "cell_id": "c1", "new_source": "print(1)"},
             notebook)):
        data = {"session_id": "s", "tool_name": tool, "tool_input": tool_input, "tool_response": response}
        assert observations.skip_reason(data, config) is None, tool


def test_what_a_read_or_a_web_search_returns_but_is_never_stored_does_not_count_either() -> None:
    config = load(Path("/nonexistent/config.json"))
    page = "lorem ipsum " * 2000
    read = {"type": "text", "file": {"filePath": f"{ROOT}/big.py", "content": page, "numLines": 900,
                                     "startLine": 1, "totalLines": 900}}
    search = {"query": "dingo routing", "results": [{"tool_use_id": "s1", "content": [
        {"title": f"Dingo {n}", "url": f"https://example.com/{n}", "snippet": page} for n in range(10)]}]}
    for tool, tool_input, response in (("Read", {"file_path": f"{ROOT}/big.py"}, read),
                                       ("WebSearch", {"query": "dingo routing"}, search)):
        data = {"session_id": "s", "tool_name": tool, "tool_input": tool_input, "tool_response": response}
        assert observations.skip_reason(data, config) is None, tool
    # a result that is stored whole still counts (the seed's own case: a Read answered by a long string)
    data = {"session_id": "s", "tool_name": "Read", "tool_input": {"file_path": "/test/file.ts"}, "tool_response": page}
    assert observations.skip_reason(data, config) is not None
    seen = observe("WebSearch", {"query": "dingo routing"}, search)
    assert seen.content.startswith('Searched the web for "dingo routing"\n- Dingo 0 <https://example.com/0>')
    assert "lorem" not in seen.content


def test_mcp_resources_and_links_are_stored_by_address_and_text_and_media_by_type_alone() -> None:
    image = "iVBORw0KGgo" + "A" * 4000
    seen = observe("mcp__fs__read", {"path": "notes/porcupine.md"}, [
        {"type": "resource", "resource": {"uri": "file:///notes/porcupine.md", "text": "# Porcupine quill notes"}},
        {"type": "resource", "resource": {"uri": "file:///logo.png", "mimeType": "image/png", "blob": image}},
        {"type": "resource_link", "name": "tamandua", "uri": "file:///t.md", "description": "anteater design"},
        {"type": "image", "mimeType": "image/png", "data": image}])
    assert "[resource file:///notes/porcupine.md]\n# Porcupine quill notes" in seen.content
    assert "[resource file:///logo.png image/png, binary, not stored]" in seen.content
    assert "[link tamandua <file:///t.md>] anteater design" in seen.content
    assert "[image image/png]" in seen.content and "AAAA" not in seen.content


def test_an_image_printed_by_bash_is_not_stored_as_base64() -> None:
    data_uri = "data:image/png;base64," + "iVBORw0KGgo" * 400
    seen = observe("Bash", {"command": "python plot.py"}, {"stdout": data_uri, "stderr": "", "isImage": True})
    assert seen.content == f"Ran: python plot.py\nOutput: an image ({len(data_uri):,} characters of base64, not stored)"


def test_grep_in_content_mode_shows_its_lines_without_saying_it_found_nothing() -> None:
    response = {"mode": "content", "numFiles": 0, "filenames": [], "content": "src/a.py:3:puffin = 1", "numLines": 1}
    seen = observe("Grep", {"pattern": "puffin", "output_mode": "content"}, response)
    assert seen.content == "Searched code for /puffin/ in the project [output_mode=content]\nsrc/a.py:3:puffin = 1"
    nothing = observe("Grep", {"pattern": "puffin"}, {"mode": "files_with_matches", "numFiles": 0, "filenames": []})
    assert nothing.content.endswith("\nFound nothing")


def test_an_error_that_is_the_result_itself_is_stored_once() -> None:
    seen = observe("mcp__db__query", {"sql": "select 1 from missing_vole"},
                   {"content": [{"type": "text", "text": "relation missing_vole does not exist"}], "isError": True})
    assert seen.content.count("relation missing_vole does not exist") == 1
    assert observations.failed(seen.metadata)
    edit = observe("Edit", {"file_path": f"{ROOT}/a.py", "old_string": "a", "new_string": "b"},
                   {"isError": True, "content": [{"type": "text", "text": "String to replace not found"}]})
    assert edit.content.endswith("Error:\nString to replace not found")  # not shown by the Edit's own lines
