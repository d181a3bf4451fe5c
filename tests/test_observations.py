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
