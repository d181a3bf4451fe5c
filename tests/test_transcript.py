"""The transcript reader: typed prompts, replies and tool calls paired with their results, within caps.

The lines are built in the shapes Claude Code 2.1.330 wrote (``/work/shared/specs/claude-code.md`` §2.3):
one content block per assistant line, lines of one API response sharing ``message.id``, each result in a
user line of ``tool_result`` blocks with the line's ``toolUseResult`` beside, and the other line types
(``attachment``, ``system``, ``queue-operation`` …) around them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from testing.hooks import write_transcript

from ccmemory import transcript
from ccmemory.errors import ValidationError
from ccmemory.hooks import summary
from ccmemory.transcript import Prompt, Reply, ToolCall

SESSION = "8d83c0de-0000-4000-8000-000000000001"
CWD = "/home/u/proj"


class Lines:
    """A transcript as Claude Code writes it, line by line, each with its uuid, parent and time."""

    def __init__(self, session_id: str = SESSION, *, sidechain: bool = False) -> None:
        self.session_id = session_id
        self.sidechain = sidechain
        self.lines: list[dict[str, Any]] = [{"type": "queue-operation", "operation": "enqueue", "sessionId": session_id}]
        self.parent: str | None = None

    def _add(self, kind: str, message: dict[str, Any], **fields: Any) -> dict[str, Any]:
        number = len(self.lines)
        line = {"parentUuid": self.parent, "isSidechain": self.sidechain, "type": kind, "message": message,
                "uuid": f"uuid-{number}", "timestamp": f"2026-11-22T01:55:{number:02d}.000Z", "cwd": CWD,
                "sessionId": self.session_id, "version": "2.1.330", "gitBranch": "master", "userType": "external",
                "entrypoint": "cli", **fields}
        self.parent = line["uuid"]
        self.lines.append(line)
        return line

    def prompt(self, text: str, **fields: Any) -> Lines:
        self._add("user", {"role": "user", "content": text}, promptId="prompt-1", permissionMode="default", **fields)
        return self

    def call(self, tool_use_id: str, name: str, tool_input: dict[str, Any], message_id: str = "") -> Lines:
        self._add("assistant", {"id": message_id or f"msg_{tool_use_id}", "type": "message", "role": "assistant",
                                "model": "claude-sonnet-4-5", "stop_reason": "tool_use",
                                "content": [{"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input}]})
        return self

    def result(self, tool_use_id: str, content: Any, response: Any = None, *, is_error: bool = False) -> Lines:
        return self.results([(tool_use_id, content, is_error)], response)

    def results(self, answers: list[tuple[str, Any, bool]], response: Any = None) -> Lines:
        blocks = [{"tool_use_id": tool_use_id, "type": "tool_result", "content": content, "is_error": is_error}
                  for tool_use_id, content, is_error in answers]
        self._add("user", {"role": "user", "content": blocks}, promptId="prompt-1", toolUseResult=response,
                  sourceToolAssistantUUID=self.parent)
        return self

    def reply(self, text: str, stop_reason: str | None = "end_turn") -> Lines:
        self._add("assistant", {"id": f"msg_reply{len(self.lines)}", "type": "message", "role": "assistant",
                                "content": [{"type": "text", "text": text}], "stop_reason": stop_reason})
        return self

    def other(self, line: dict[str, Any]) -> Lines:
        self.lines.append(line)
        return self

    def write(self, path: Path, tail: bytes = b"") -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(json.dumps(line).encode() + b"\n" for line in self.lines) + tail)
        return path


def read(path: Path, **caps: Any) -> list[transcript.Record]:
    return list(transcript.records(str(path), **caps))


def kinds(found: list[transcript.Record]) -> list[str]:
    """Each record in short: ``prompt:<text>``, ``turn-start``, ``reply:<text>``, ``call:<id>`` (``!`` failed, ``?`` unanswered)."""
    out = []
    for record in found:
        if isinstance(record, Prompt):
            out.append(f"prompt:{record.text}")
        elif isinstance(record, transcript.TurnStart):
            out.append("turn-start")
        elif isinstance(record, Reply):
            out.append(f"reply:{record.text}")
        else:
            assert isinstance(record, ToolCall)
            out.append(f"call:{record.tool_use_id}" + ("?" if not record.answered else "!" if record.is_error else ""))
    return out


def test_a_turn_reads_as_prompts_replies_and_paired_calls(tmp_path: Path) -> None:
    bash = {"stdout": "3 passed", "stderr": "", "interrupted": False, "isImage": False, "noOutputExpected": False}
    lines = (Lines()
             .other({"type": "file-history-snapshot", "messageId": "m0", "snapshot": {}})
             .prompt("Run the tests, then fix app.py")
             .other({"type": "attachment", "attachment": {"type": "hook_additional_context", "content": ["user"]}})
             .reply("Running them.", stop_reason=None)
             .call("toolu_1", "Bash", {"command": "pytest -q", "description": "Run tests"})
             .result("toolu_1", "3 passed", bash)
             .call("toolu_2", "Edit", {"file_path": "/home/u/proj/app.py", "old_string": "a", "new_string": "b"})
             .result("toolu_2", "<tool_use_error>String to replace not found in file.</tool_use_error>",
                     "Error: String to replace not found in file.", is_error=True)
             .call("toolu_3", "mcp__plugin_x_y__search", {"query": "auth"})
             .result("toolu_3", [{"type": "text", "text": "first"}, {"type": "image", "source": {}},
                                 {"type": "text", "text": "second"}], [{"type": "text", "text": "first"}])
             .reply("Done: the tests pass.")
             .other({"type": "system", "subtype": "stop_hook_summary", "hookCount": 1})
             .other({"type": "last-prompt", "lastPrompt": "Run the tests", "sessionId": SESSION}))
    found = read(lines.write(tmp_path / f"{SESSION}.jsonl"))
    assert kinds(found) == ["prompt:Run the tests, then fix app.py", "reply:Running them.", "call:toolu_1",
                            "call:toolu_2!", "call:toolu_3", "reply:Done: the tests pass."]
    prompt, _, bash_call, edit, mcp, final = found
    assert prompt.as_dict() == {"uuid": "uuid-2", "timestamp": "2026-11-22T01:55:02.000Z", "session_id": SESSION,
                                "cwd": CWD, "git_branch": "master", "sidechain": False,
                                "text": "Run the tests, then fix app.py", "prompt_id": "prompt-1"}
    assert bash_call.as_dict() == {
        "uuid": "uuid-5", "timestamp": "2026-11-22T01:55:05.000Z", "session_id": SESSION, "cwd": CWD,
        "git_branch": "master", "sidechain": False, "tool_use_id": "toolu_1", "tool_name": "Bash",
        "tool_input": {"command": "pytest -q", "description": "Run tests"}, "answered": True,
        "result_text": "3 passed", "tool_use_result": bash, "is_error": False,
        "result_timestamp": "2026-11-22T01:55:06.000Z"}
    assert (edit.tool_name, edit.is_error, edit.tool_use_result) == (
        "Edit", True, "Error: String to replace not found in file.")
    assert edit.result_text.startswith("<tool_use_error>")
    assert (mcp.result_text, mcp.tool_use_result) == ("first\nsecond", [{"type": "text", "text": "first"}])
    assert final.stop_reason == "end_turn" and final.message_id.startswith("msg_")
    assert transcript.complete(found) == found


def test_parallel_calls_keep_their_order_whatever_order_they_are_answered_in(tmp_path: Path) -> None:
    lines = (Lines().prompt("Read both files")
             # one API response, one line per block, sharing message.id
             .call("toolu_a", "Read", {"file_path": "/home/u/proj/a.py"}, message_id="msg_1")
             .call("toolu_b", "Read", {"file_path": "/home/u/proj/b.py"}, message_id="msg_1")
             .call("toolu_c", "Grep", {"pattern": "x"}, message_id="msg_1")
             .result("toolu_c", "c.py", {"filenames": ["c.py"]})
             .result("toolu_a", "a = 1", {"type": "text", "file": {"filePath": "/home/u/proj/a.py"}})
             .result("toolu_b", "b = 2", {"type": "text", "file": {"filePath": "/home/u/proj/b.py"}})
             .call("toolu_d", "Read", {"file_path": "/home/u/proj/d.py"}, message_id="msg_2")
             .call("toolu_e", "Read", {"file_path": "/home/u/proj/e.py"}, message_id="msg_2")
             # two results in one line: whose toolUseResult it is cannot be told
             .results([("toolu_e", "e", False), ("toolu_d", "d", True)], {"ambiguous": True})
             .reply("Both read."))
    found = read(lines.write(tmp_path / "t.jsonl"))
    assert kinds(found) == ["prompt:Read both files", "call:toolu_a", "call:toolu_b", "call:toolu_c", "call:toolu_d!",
                            "call:toolu_e", "reply:Both read."]
    assert [record.tool_use_result for record in found[1:4]] == [
        {"type": "text", "file": {"filePath": "/home/u/proj/a.py"}},
        {"type": "text", "file": {"filePath": "/home/u/proj/b.py"}}, {"filenames": ["c.py"]}]
    assert [(record.result_text, record.tool_use_result) for record in found[4:6]] == [("d", None), ("e", None)]


def test_a_call_left_without_result_is_still_reported(tmp_path: Path) -> None:
    """Interrupted mid-session (the user typed again) the call is final; at the end of the file it may still run."""
    lines = (Lines().prompt("Build it")
             .call("toolu_1", "Bash", {"command": "make"})
             .prompt("Stop, run the tests instead")
             .call("toolu_2", "Bash", {"command": "pytest"})
             .result("toolu_2", "1 passed", {"stdout": "1 passed"})
             .reply("Tests pass.")
             .prompt("Deploy")
             .call("toolu_3", "Bash", {"command": "make deploy"}))
    found = read(lines.write(tmp_path / "t.jsonl"))
    assert kinds(found) == ["prompt:Build it", "call:toolu_1?", "prompt:Stop, run the tests instead", "call:toolu_2",
                            "reply:Tests pass.", "prompt:Deploy", "call:toolu_3?"]
    interrupted = found[1]
    assert (interrupted.result_text, interrupted.tool_use_result, interrupted.is_error,
            interrupted.result_timestamp) == (None, None, None, None)
    assert kinds(transcript.complete(found)) == kinds(found)[:5]


def test_complete_keeps_the_turns_that_ended(tmp_path: Path) -> None:
    lines = Lines().prompt("one").call("toolu_1", "Read", {"file_path": "/x"}).result("toolu_1", "x").reply("ok")
    path = tmp_path / "t.jsonl"
    assert kinds(transcript.complete(read(lines.write(path)))) == ["prompt:one", "call:toolu_1", "reply:ok"]
    lines.prompt("two").reply("Let me look.", stop_reason=None)  # the reply is not the turn's last yet
    assert kinds(transcript.complete(read(lines.write(path)))) == ["prompt:one", "call:toolu_1", "reply:ok"]
    lines.call("toolu_2", "Read", {"file_path": "/y"})  # running
    assert kinds(transcript.complete(read(lines.write(path)))) == ["prompt:one", "call:toolu_1", "reply:ok"]
    lines.result("toolu_2", "y").reply("Found it.")
    assert kinds(transcript.complete(read(lines.write(path)))) == [
        "prompt:one", "call:toolu_1", "reply:ok", "prompt:two", "reply:Let me look.", "call:toolu_2", "reply:Found it."]
    lines.call("toolu_3", "Bash", {"command": "true"})  # a Stop hook kept the turn going
    assert kinds(transcript.complete(read(lines.write(path)))) == ["prompt:one", "call:toolu_1", "reply:ok"]
    assert transcript.complete([]) == []


def test_a_cut_last_line_is_skipped(tmp_path: Path) -> None:
    """The file is written as Claude Code goes: its last line may be half there."""
    lines = Lines().prompt("Build").call("toolu_1", "Bash", {"command": "make"})
    whole = json.dumps(Lines().result("toolu_1", "ok", {"stdout": "ok"}).lines[-1]).encode()
    found = read(lines.write(tmp_path / "t.jsonl", tail=whole[: len(whole) // 2]))
    assert kinds(found) == ["prompt:Build", "call:toolu_1?"]
    assert transcript.complete(found) == []


def test_lines_that_are_not_typed_prompts(tmp_path: Path) -> None:
    lines = (Lines()
             .prompt("<command-name>/clear</command-name>\n<command-message>clear</command-message>")
             .prompt("<local-command-stdout></local-command-stdout>")
             .prompt("Caveat: The messages below were generated by the user while running local commands.")
             .prompt("meta noise", isMeta=True)
             .prompt("This session is being continued from a previous conversation ...", isCompactSummary=True)
             .prompt("   ")
             # a background agent's notification, as Claude Code 2.1.330 writes it (and an older shape: text only)
             .prompt("<task-notification>\n<task-id>a1</task-id>\n<status>completed</status>\n</task-notification>",
                     promptSource="system", turnOrigin="task_notification",
                     origin={"kind": "task-notification", "producer": "session-task"})
             .prompt("<task-notification>\n<task-id>a2</task-id>\n</task-notification>")
             .prompt("Agent finished", origin={"kind": "task-notification"})
             .other({"type": "summary", "summary": "Fixing the build", "leafUuid": "x"})
             .other({"type": "user", "message": {"role": "user", "content": [
                 {"type": "text", "text": "[Request interrupted by user for tool use]"}]}})
             .other({"type": "user", "message": "not a message"})
             .prompt("  What changed?  "))
    sub = Lines(sidechain=True).prompt("Explore the auth module")
    path = lines.write(tmp_path / "t.jsonl")
    found = read(path)
    # The notifications start turns of their own (Claude answers them, Stop follows) but are no prompt.
    assert kinds(found) == ["turn-start"] * 3 + ["prompt:What changed?"]
    assert read(sub.write(tmp_path / "agent.jsonl")) == []
    write_transcript(tmp_path / "hooks.jsonl", ["first", "<command-name>/clear</command-name>", "second"])
    for each in (path, tmp_path / "hooks.jsonl"):  # the Stop hook reads the same prompts
        assert [record.text for record in read(each) if isinstance(record, Prompt)] == summary.read_transcript(str(each), None).prompts


def test_subagent_lines_and_odd_blocks(tmp_path: Path) -> None:
    lines = (Lines(sidechain=True)
             .other({"type": "assistant", "message": {"content": [{"type": "thinking", "thinking": "hm"}]}})
             .call("toolu_s1", "Grep", {"pattern": "login"})
             .call("toolu_s1", "Grep", {"pattern": "again"})  # the same id twice: the first counts
             .other({"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "NoId", "input": {}}]}})
             .other({"type": "assistant", "message": {"content": [
                 {"type": "tool_use", "id": "toolu_s2", "name": "Read", "input": "not a dict"}]}})
             .result("toolu_unknown", "nobody asked")
             .result("toolu_s1", "auth.py")
             .result("toolu_s2", 42)
             .reply("The login lives in auth.py."))
    found = read(lines.write(tmp_path / "agent-def456.jsonl"))
    assert kinds(found) == ["call:toolu_s1", "call:toolu_s2", "reply:The login lives in auth.py."]
    assert [record.sidechain for record in found] == [True, False, True]  # the bare line says nothing
    assert (found[0].tool_input, found[0].result_text) == ({"pattern": "login"}, "auth.py")
    # where the call's own line does not say, its result's line does
    assert (found[1].tool_input, found[1].result_text, found[1].session_id, found[1].cwd) == ({}, "", SESSION, CWD)
    assert transcript.complete(found) == found


def test_an_oversized_line_is_skipped_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transcript, "MAX_LINE_BYTES", 2000)
    lines = (Lines().prompt("Dump the log")
             .call("toolu_1", "Bash", {"command": "cat big.log"})
             .result("toolu_1", "x" * 5000, {"stdout": "x" * 5000})
             .call("toolu_2", "Bash", {"command": "wc -l big.log"})
             .result("toolu_2", "1 big.log")
             .prompt("y" * 3000)
             .reply("Done."))
    found = read(lines.write(tmp_path / "t.jsonl"))
    assert kinds(found) == ["prompt:Dump the log", "call:toolu_1?", "call:toolu_2", "reply:Done."]


def test_reads_stop_at_the_byte_and_record_caps(tmp_path: Path) -> None:
    lines = Lines().prompt("go")
    for number in range(10):
        lines.call(f"toolu_{number}", "Read", {"file_path": f"/f{number}"}).result(f"toolu_{number}", f"r{number}")
    path = lines.write(tmp_path / "t.jsonl")
    assert kinds(read(path, limit=3)) == ["prompt:go", "call:toolu_0", "call:toolu_1"]
    size = len(path.read_bytes().split(b"\n", 5)[0]) + 1  # the first line only
    assert read(path, max_bytes=size) == []
    # At the cap, the calls made are still answered: a line of parallel calls, then their results.
    parallel = (Lines().prompt("go").call("toolu_a", "Read", {}, "msg_1").call("toolu_b", "Read", {}, "msg_1")
                .result("toolu_a", "a").result("toolu_b", "b").prompt("next"))
    assert kinds(read(parallel.write(tmp_path / "p.jsonl"), limit=2)) == ["prompt:go", "call:toolu_a"]


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory", "missing"])
def test_only_a_regular_file_is_read(tmp_path: Path, kind: str) -> None:
    path = {"fifo": tmp_path / "t.jsonl", "dev-zero": Path("/dev/zero"), "directory": tmp_path,
            "missing": tmp_path / "nope.jsonl"}[kind]
    if kind == "fifo":
        os.mkfifo(path)  # no writer: opening it for a read would block
    with pytest.raises(ValidationError):
        read(path)


def test_root_refuses_a_transcript_that_resolves_outside(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    outside = Lines().prompt("secret").write(tmp_path / "elsewhere" / "t.jsonl")
    (root / "-home-u-proj").mkdir(parents=True)
    link = root / "-home-u-proj" / "s.jsonl"
    link.symlink_to(outside)
    with pytest.raises(ValidationError, match="outside"):
        read(link, root=str(root))
    assert kinds(read(link)) == ["prompt:secret"]  # without a root, the path given is the one read


def test_session_files_lists_transcripts_and_subagents_inside_projects(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "claude"
    projects = config / "projects"
    first = projects / "-home-u-proj"
    Lines("s1").prompt("one").write(first / "s1.jsonl")
    Lines("s2").prompt("two").write(first / "s2.jsonl")
    Lines("s2", sidechain=True).reply("found").write(first / "s2" / "subagents" / "agent-def456.jsonl")
    Lines("s2", sidechain=True).reply("found").write(first / "s2" / "subagents" / "agent-abc123.jsonl")
    (first / "s2" / "subagents" / "notes.txt").write_text("not a transcript")
    (first / "s2" / "subagents" / "agent-.jsonl").write_text("")
    (first / "s1.json").write_text("{}")
    (first / ".jsonl").write_text("")
    (projects / "stray.jsonl").write_text("")  # not in a project folder
    os.mkfifo(first / "fifo.jsonl")
    Lines("s3").prompt("three").write(projects / "-home-u-other" / "s3.jsonl")
    # Links: one inside the projects folder is followed, those leaving it are not.
    elsewhere = tmp_path / "elsewhere"
    Lines("x").prompt("secret").write(elsewhere / "x.jsonl")
    (elsewhere / "agents").mkdir()
    (first / "escape.jsonl").symlink_to(elsewhere / "x.jsonl")
    (projects / "-linked-out").symlink_to(elsewhere)
    (projects / "-loop").symlink_to(projects)
    (first / "s1").mkdir()
    (first / "s1" / "subagents").symlink_to(elsewhere / "agents")
    (first / "alias.jsonl").symlink_to(first / "s1.jsonl")

    found = transcript.session_files(str(config))
    real = os.path.realpath
    assert [(item.project, item.session_id, item.path, item.subagents) for item in found] == [
        ("-home-u-other", "s3", real(projects / "-home-u-other" / "s3.jsonl"), []),
        ("-home-u-proj", "alias", real(first / "s1.jsonl"), []),
        ("-home-u-proj", "s1", real(first / "s1.jsonl"), []),
        ("-home-u-proj", "s2", real(first / "s2.jsonl"),
         [("abc123", real(first / "s2" / "subagents" / "agent-abc123.jsonl")),
          ("def456", real(first / "s2" / "subagents" / "agent-def456.jsonl"))]),
    ]
    root = transcript.projects_dir(str(config))
    assert [kinds(read(Path(item.path), root=root)) for item in found] == [
        ["prompt:three"], ["prompt:one"], ["prompt:one"], ["prompt:two"]]

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    assert transcript.projects_dir() == str(projects)
    assert [item.path for item in transcript.session_files()] == [item.path for item in found]
    assert transcript.session_files(str(tmp_path / "no-claude-here")) == []


def test_session_files_refuses_a_projects_folder_of_links_out(tmp_path: Path) -> None:
    """The projects folder may itself be a link (dotfiles); what is inside must stay inside its real path."""
    dotfiles = tmp_path / "dotfiles" / "projects"
    Lines("s1").prompt("one").write(dotfiles / "-p" / "s1.jsonl")
    (tmp_path / "claude").mkdir()
    (tmp_path / "claude" / "projects").symlink_to(dotfiles)
    found = transcript.session_files(str(tmp_path / "claude"))
    assert [item.path for item in found] == [os.path.realpath(dotfiles / "-p" / "s1.jsonl")]


@pytest.mark.parametrize("stamp, expected", [
    ("2026-11-22T01:55:45.147Z", "2026-11-22T01:55:45.147Z"),  # Claude Code's own format, taken as it is
    ("2026-11-22T03:55:45+02:00", "2026-11-22T01:55:45.000Z"),
    ("2026-ab-22T01:55:45.147Z", None),
    ("2026-11-22T01:55:45.1a7Z", None),
    ("yesterday", None),
    (1764000000, None),
])
def test_a_transcript_time_is_taken_only_when_it_is_a_time(stamp: object, expected: str | None) -> None:
    from ccmemory.clock import canonical

    assert canonical(stamp) == expected
