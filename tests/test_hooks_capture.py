"""PostToolUse capture, run as the real hook subprocess against a real database file."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from testing.env import isolated_env
from testing.hooks import (
    assert_quiet_success, bash_call, HOOK_PYTHON, log_text, memories_of, OLDEST_PYTHON, rows, run_hook, tool_call,
    write_config,
)
from testing.repo import HOOKS

from ccmemory import excerpts, observations, redaction
from ccmemory.config import load
from ccmemory import privacy


def test_captures_a_read_and_links_it_to_the_session(home: Path, project_dir: Path) -> None:
    payload = tool_call("s-read", project_dir, "Read", {"file_path": str(project_dir / "src/app.py")},
                        {"type": "text", "file": {"filePath": str(project_dir / "src/app.py"), "content": "x = 1",
                                                  "numLines": 1, "startLine": 1, "totalLines": 1}}, "toolu_r1")
    assert_quiet_success(run_hook("post_tool_use", payload, home))
    [memory] = memories_of(home, "s-read")
    assert memory["content"] == "Read src/app.py (1 of 1 lines)"
    assert (memory["sector"], memory["tier"], memory["source"], memory["category"]) == \
        ("episodic", "session", "capture", "general")
    assert json.loads(memory["files"]) == [str(project_dir / "src/app.py")]
    assert memory["salience"] == pytest.approx(0.3)
    assert memory["session_id"] == "s-read"  # session membership is the memory's session_id ...
    assert rows(home, "SELECT * FROM session_memories") == []  # ... not a usage row repeating it
    [session] = rows(home, "SELECT id FROM sessions")
    assert session["id"] == "s-read"
    [project] = rows(home, "SELECT path FROM projects")
    assert project["path"] == str(project_dir.resolve())


def test_seed_payload_with_tool_result_field_is_accepted(home: Path, project_dir: Path) -> None:
    payload = {"session_id": "s-seed", "cwd": str(project_dir), "tool_name": "Write",
               "tool_input": {"file_path": "/test/new.ts"}, "tool_result": "ok"}
    assert_quiet_success(run_hook("post_tool_use", payload, home))
    [memory] = memories_of(home, "s-seed")
    assert memory["content"].startswith("Wrote /test/new.ts")
    assert memory["session_id"] == "s-seed"


def test_documented_bash_payload(home: Path, project_dir: Path) -> None:
    assert_quiet_success(run_hook("post_tool_use", bash_call("s-bash", project_dir, "echo hi-from-fake",
                                                             "hi-from-fake", "toolu_fake1"), home))
    [memory] = memories_of(home, "s-bash")
    assert memory["content"] == "Ran: echo hi-from-fake (Run it)\nOutput:\nhi-from-fake"
    # the tool call's id (ties the memory to its transcript entry), the tool and the command with its
    # description (ccmemory.observations); the event name and the duration the payload also carries are
    # not kept (nothing read them), and the JSON has no spaces
    assert memory["metadata"] == ('{"tool":"Bash","tool_use_id":"toolu_fake1","command":"echo hi-from-fake",'
                                  '"description":"Run it"}')
    assert memory["dedupe_key"] == "toolu_fake1"


def test_skips_results_over_10000_characters(home: Path, project_dir: Path) -> None:
    big = tool_call("s-big", project_dir, "Read", {"file_path": "/test/file.ts"}, "x" * 20000, "toolu_big")
    assert_quiet_success(run_hook("post_tool_use", big, home))
    assert memories_of(home, "s-big") == []
    assert "the result is 20002 characters, over capture.max_result_chars=10000: Read" in log_text(home)
    write_config(home, {"capture": {"max_result_chars": 50000}})
    assert_quiet_success(run_hook("post_tool_use", big, home))
    assert len(memories_of(home, "s-big")) == 1


def test_edit_of_a_large_file_is_not_skipped_for_the_echoed_file(home: Path, project_dir: Path) -> None:
    target = str(project_dir / "big.py")
    response = {"filePath": target, "oldString": "a = 1", "newString": "a = 2", "originalFile": "y" * 50000,
                "structuredPatch": [{"lines": ["-a = 1", "+a = 2"]}], "userModified": False, "replaceAll": False}
    payload = tool_call("s-edit", project_dir, "Edit", {"file_path": target, "old_string": "a = 1",
                                                        "new_string": "a = 2"}, response, "toolu_e1")
    assert_quiet_success(run_hook("post_tool_use", payload, home))
    [memory] = memories_of(home, "s-edit")
    assert memory["content"] == "Edited big.py\n- a = 1\n+ a = 2"
    assert memory["salience"] == pytest.approx(0.6)


def test_an_edit_names_the_function_it_changed(home: Path, project_dir: Path) -> None:
    target = str(project_dir / "core.py")
    original = ("import os\n\nclass Option:\n    def get_help_record(self, ctx):\n        extra = []\n"
                "        return extra\n\ndef main():\n    pass\n")
    edits = [({"oldStart": 4, "oldLines": 3, "lines": ["     def get_help_record(self, ctx):", "-        extra = []",
                                                      "+        extra = {}", "         return extra"]}, "extra = []",
              "Edited core.py in Option.get_help_record"),
             (None, "    pass", "Edited core.py in main"),
             (None, "import os", "Edited core.py")]
    for number, (hunk, old, first_line) in enumerate(edits):
        response = {"filePath": target, "originalFile": original, "structuredPatch": [hunk] if hunk else []}
        payload = tool_call("s-scope", project_dir, "Edit", {"file_path": target, "old_string": old,
                                                             "new_string": "x"}, response, f"toolu_s{number}")
        assert_quiet_success(run_hook("post_tool_use", payload, home))
        assert memories_of(home, "s-scope")[-1]["content"].split("\n")[0] == first_line
    assert [json.loads(m["metadata"]).get("scope") for m in memories_of(home, "s-scope")] == [
        "Option.get_help_record", "main", None]


def test_mcp_content_array_response(home: Path, project_dir: Path) -> None:
    payload = tool_call("s-mcp", project_dir, "mcp__github__get_issue", {"number": 7},
                        [{"type": "text", "text": "Issue 7: login fails on Safari"}, {"type": "image"}], "toolu_m1",
                        mcp_server={"name": "github", "source": "user"})
    assert_quiet_success(run_hook("post_tool_use", payload, home))
    [memory] = memories_of(home, "s-mcp")
    assert memory["content"] == ('Called MCP tool get_issue on server github\nInput: {"number": 7}\n'
                                 "Result:\nIssue 7: login fails on Safari\n[image]")


@pytest.mark.parametrize("tool", ["mcp__plugin_ccmemory_memory__memory_search", "mcp__ccmemory__memory_add",
                                  "TodoWrite"])
def test_own_tools_and_default_skip_list_are_not_recorded(home: Path, project_dir: Path, tool: str) -> None:
    payload = tool_call("s-own", project_dir, tool, {"query": "auth"}, [{"type": "text", "text": "no memories"}],
                        "toolu_o1")
    assert_quiet_success(run_hook("post_tool_use", payload, home))
    assert memories_of(home, "s-own") == []


def test_configured_skip_list_with_prefix(home: Path, project_dir: Path) -> None:
    write_config(home, {"capture": {"skip_tools": ["Web*", "Glob"]}})
    for number, tool in enumerate(["WebFetch", "WebSearch", "Glob", "Grep"]):
        run_hook("post_tool_use", tool_call("s-skip", project_dir, tool, {"pattern": "x"}, {}, f"t{number}"), home)
    assert [json.loads(m["metadata"])["tool"] for m in memories_of(home, "s-skip")] == ["Grep"]


def test_redelivered_payload_is_stored_once(home: Path, project_dir: Path) -> None:
    payload = bash_call("s-dup", project_dir, "make test", "ok", "toolu_same")
    for _ in range(3):
        assert_quiet_success(run_hook("post_tool_use", payload, home))
    assert len(memories_of(home, "s-dup")) == 1
    assert rows(home, "SELECT COUNT(*) AS n FROM session_memories") == [{"n": 0}]


def test_failure_is_a_salient_gotcha(home: Path, project_dir: Path) -> None:
    payload = tool_call("s-fail", project_dir, "Bash", {"command": "pytest -q"}, None, "toolu_f1",
                        event="PostToolUseFailure", error="Exit code 1\nFAILED test_x.py::test_y", is_interrupt=False)
    del payload["tool_response"]
    assert_quiet_success(run_hook("post_tool_use", payload, home))
    [memory] = memories_of(home, "s-fail")
    assert memory["content"] == "Ran: pytest -q (failed)\nError:\nExit code 1\nFAILED test_x.py::test_y"
    assert (memory["category"], memory["salience"]) == ("gotcha", pytest.approx(0.75))


def test_private_spans_and_secrets_never_reach_the_database(home: Path, project_dir: Path) -> None:
    command = ("export ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789 && "
               "curl -H 'Authorization: Bearer abc.def.ghijklmnop' https://deploy:hunter2hunter@example.com/api")
    stdout = ("db password: Sw0rdfish!\n<private>the launch codes</private>\n"
              "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
              "ghp_0123456789abcdefghijklmnopqrstuvwxyz AKIAIOSFODNN7EXAMPLE")
    assert_quiet_success(run_hook("post_tool_use", bash_call("s-secret", project_dir, command, stdout, "t1"), home))
    [memory] = memories_of(home, "s-secret")
    stored = json.dumps(rows(home, "SELECT * FROM memories")) + json.dumps(
        rows(home, "SELECT * FROM memories_fts WHERE memories_fts MATCH 'REDACTED'"))
    for secret in ("abcdefghijklmnopqrstuvwxyz0123456789", "abc.def.ghijklmnop", "hunter2hunter", "Sw0rdfish",
                   "launch codes", "b3BlbnNzaC1rZXktdjEAAAAA", "ghp_0123", "AKIAIOSFODNN7EXAMPLE"):
        assert secret not in stored
    assert "ANTHROPIC_API_KEY=[REDACTED]" in memory["content"]
    assert "Authorization: Bearer [REDACTED]" in memory["content"]
    assert "https://deploy:[REDACTED]@example.com" in memory["content"]


def test_injected_context_is_not_recorded_back(home: Path, project_dir: Path) -> None:
    echoed = f"before <{redaction.CONTEXT_TAG}>\n- [abcd1234] earlier memory\n</{redaction.CONTEXT_TAG}> after"
    assert_quiet_success(run_hook("post_tool_use", bash_call("s-ctx", project_dir, "cat notes", echoed, "t1"), home))
    [memory] = memories_of(home, "s-ctx")
    assert "earlier memory" not in memory["content"] and "before  after" in memory["content"]


def test_opt_out_marker_and_kill_switches(home: Path, project_dir: Path) -> None:
    nested = project_dir / "pkg" / "sub"
    nested.mkdir(parents=True)
    (project_dir / privacy.OPT_OUT_MARKER).write_text("")
    payload = bash_call("s-off", nested, "ls", "a", "t1")
    assert_quiet_success(run_hook("post_tool_use", payload, home))
    (project_dir / privacy.OPT_OUT_MARKER).unlink()
    assert_quiet_success(run_hook("post_tool_use", payload, home, CCMEMORY_DISABLE="1"))
    assert_quiet_success(run_hook("post_tool_use", payload, home, CCMEMORY_SUMMARY_CHILD="1"))
    assert not (home / "ccmemory.db").exists()
    assert_quiet_success(run_hook("post_tool_use", payload, home, CCMEMORY_DISABLE="0"))
    assert len(memories_of(home, "s-off")) == 1


def test_cwd_missing_falls_back_to_claude_project_dir(home: Path, project_dir: Path) -> None:
    payload = bash_call("s-nocwd", project_dir, "ls", "a", "t1")
    del payload["cwd"]
    assert_quiet_success(run_hook("post_tool_use", payload, home, CLAUDE_PROJECT_DIR=str(project_dir)))
    assert rows(home, "SELECT path FROM projects") == [{"path": str(project_dir.resolve())}]


@pytest.mark.parametrize("raw", [
    b"", b"   \n", b"not json", b'{"session_id": "s-bad", "tool_name": "Bash", "tool_inp', b"[1, 2, 3]", b"null",
    b"\xff\xfe\x00garbage", b'{"session_id": "s-bad"}', b'{"tool_name": "Bash", "tool_input": {}}',
    b'{"session_id": 5, "tool_name": ["x"], "tool_input": "str"}',
])
def test_malformed_and_truncated_payloads_exit_quietly(home: Path, raw: bytes) -> None:
    assert_quiet_success(run_hook("post_tool_use", None, home, raw=raw))
    assert rows(home, "SELECT * FROM memories") == []


def test_malformed_payload_is_logged(home: Path) -> None:
    run_hook("post_tool_use", None, home, raw=b'{"truncated": ')
    text = log_text(home)
    assert " ERROR post_tool_use [" in text and "hook input is not valid JSON" in text
    assert "truncated" not in text  # payload content is never copied into the log


def test_unknown_tool_and_odd_shapes_are_captured_generically(home: Path, project_dir: Path) -> None:
    payload = tool_call("s-odd", project_dir, "FutureTool", {"file_path": "notes.md", "depth": 3},
                        {"answer": 42, "nested": [1, 2]}, "t1", brand_new_field={"x": 1})
    assert_quiet_success(run_hook("post_tool_use", payload, home))
    [memory] = memories_of(home, "s-odd")
    assert memory["content"].startswith('Used tool FutureTool\nInput: {"file_path": "notes.md", "depth": 3}')
    assert json.loads(memory["files"]) == [str(project_dir / "notes.md")]
    weird = tool_call("s-odd", project_dir, "Edit", "not a dict", 12345, "t2")
    assert_quiet_success(run_hook("post_tool_use", weird, home))
    assert len(memories_of(home, "s-odd")) == 2


def test_a_broken_database_file_never_breaks_the_hook(home: Path, project_dir: Path) -> None:
    home.mkdir(parents=True)
    (home / "ccmemory.db").write_bytes(b"this is not a database" * 100)
    assert_quiet_success(run_hook("post_tool_use", bash_call("s-broken", project_dir, "ls", "a", "t1"), home))
    assert "ERROR post_tool_use" in log_text(home)


def test_parallel_hooks_lose_nothing_and_duplicate_nothing(home: Path, project_dir: Path) -> None:
    """Many hook processes at once on a database that does not exist yet, across three sessions."""
    payloads = [bash_call(f"s-par-{i % 3}", project_dir, f"echo {i}", str(i), f"toolu_{i}") for i in range(36)]
    payloads += payloads[:12]  # re-delivered while the originals are still being written

    def run(payload: dict) -> subprocess.CompletedProcess:
        return run_hook("post_tool_use", payload, home)

    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(run, payloads))
    for result in results:
        assert_quiet_success(result)
    assert log_text(home) == ""
    stored = rows(home, "SELECT session_id, content FROM memories")
    assert len(stored) == 36
    assert len({(m["session_id"], m["content"]) for m in stored}) == 36
    assert rows(home, "SELECT COUNT(*) AS n FROM memories WHERE session_id IS NULL") == [{"n": 0}]
    assert rows(home, "SELECT COUNT(*) AS n FROM session_memories") == [{"n": 0}]
    assert rows(home, "SELECT COUNT(*) AS n FROM sessions") == [{"n": 3}]
    assert rows(home, "SELECT COUNT(*) AS n FROM projects") == [{"n": 1}]


@pytest.mark.skipif(OLDEST_PYTHON is None, reason="no Python 3.9 interpreter found: set CCMEMORY_TEST_OLDEST_PYTHON, "
                    "or put python3.9 on PATH or in pyenv")
def test_runs_under_the_oldest_supported_python(home: Path, project_dir: Path) -> None:
    result = run_hook("post_tool_use", bash_call("s-py39", project_dir, "ls", "a", "t1"), home,
                      python=OLDEST_PYTHON)
    assert_quiet_success(result)
    assert log_text(home) == ""
    assert len(memories_of(home, "s-py39")) == 1


def test_an_unknown_hook_name_is_logged_not_fatal(home: Path, project_dir: Path) -> None:
    for name in ("no_such_event", ""):
        result = run_hook(name, bash_call("s-unknown", project_dir, "ls", "a", "t1"), home)
        assert_quiet_success(result)
    assert "unknown hook 'no_such_event'" in log_text(home)
    assert memories_of(home, "s-unknown") == []


def test_entry_script_survives_a_missing_package(tmp_path: Path) -> None:
    """A copied hook script without src/ beside it still exits 0 and prints nothing on stdout."""
    lonely = tmp_path / "plugin" / "hooks"
    lonely.mkdir(parents=True)
    (lonely / "run.py").write_text((HOOKS / "run.py").read_text())
    result = subprocess.run([HOOK_PYTHON, str(lonely / "run.py"), "post_tool_use"], input=b"{}", capture_output=True,
                            env=isolated_env(tmp_path / "home"), timeout=60)
    assert_quiet_success(result)
    assert b"could not start" in result.stderr


# -- formatting (pure functions) ------------------------------------------------------------------------

ROOT = "/work/proj"


def observe(tool: str, tool_input: object, response: object = None, **extra: object) -> observations.Observation:
    data = {"session_id": "s", "tool_name": tool, "tool_input": tool_input, "tool_response": response, **extra}
    return observations.from_payload(data, load(Path("/nonexistent/config.json")), cwd=ROOT, root=ROOT)


@pytest.mark.parametrize("tool,tool_input,response,first_line,files", [
    ("Write", {"file_path": f"{ROOT}/a.py", "content": "x = 1\ny = 2"}, {"type": "create"}, "Wrote a.py (2 lines)",
     [f"{ROOT}/a.py"]),
    ("MultiEdit", {"file_path": f"{ROOT}/b.py", "edits": [{"old_string": "a", "new_string": "b"}] * 7}, {},
     "Edited b.py (7 edits)", [f"{ROOT}/b.py"]),
    ("NotebookEdit", {"notebook_path": f"{ROOT}/n.ipynb", "cell_id": "c1", "new_source": "print(1)"}, {},
     "Edited notebook n.ipynb cell c1 (replace)", [f"{ROOT}/n.ipynb"]),
    ("Grep", {"pattern": "def main", "path": f"{ROOT}/src", "glob": "*.py"},
     {"numFiles": 2, "filenames": [f"{ROOT}/src/a.py", f"{ROOT}/src/b.py"]},
     "Searched code for /def main/ in src [glob=*.py]", [f"{ROOT}/src", f"{ROOT}/src/a.py", f"{ROOT}/src/b.py"]),
    ("Glob", {"pattern": "**/*.md"}, {"numFiles": 1, "filenames": [f"{ROOT}/README.md"]},
     "Listed files matching **/*.md in the project", [f"{ROOT}/README.md"]),
    ("WebFetch", {"url": "https://docs.example.com/x", "prompt": "What is the limit?"},
     {"result": "The limit is 10.", "code": 200}, "Fetched https://docs.example.com/x", []),
    ("WebSearch", {"query": "sqlite wal"}, {"results": [{"content": [{"title": "WAL", "url": "https://sqlite.org/wal"}]}]},
     'Searched the web for "sqlite wal"', []),
    ("Task", {"description": "Find the auth code", "prompt": "Look for login", "subagent_type": "Explore"},
     {"content": [{"type": "text", "text": "It is in auth.py"}], "totalTokens": 10},
     "Delegated to the Explore agent: Find the auth code", []),
])
def test_each_tool_is_formatted(tool: str, tool_input: dict, response: object, first_line: str,
                                files: list[str]) -> None:
    observation = observe(tool, tool_input, response)
    assert observation.content.split("\n")[0] == first_line
    assert observation.files == files


def test_long_fields_keep_head_and_tail_with_an_elision_note() -> None:
    output = "".join(f"line {i}\n" for i in range(2000))
    observation = observe("Bash", {"command": "seq"}, {"stdout": output, "stderr": ""})
    assert "line 0\n" in observation.content and "line 1999" in observation.content
    assert "characters elided" in observation.content
    assert len(observation.content) < 2000
    assert excerpts.cut("abc", 10) == "abc"


def test_web_search_and_task_bodies() -> None:
    search = observe("WebSearch", {"query": "q"}, {"results": [{"title": "T", "url": "https://u"}]})
    assert search.content == 'Searched the web for "q"\n- T <https://u>'
    task = observe("Agent", {"description": "d", "prompt": "p", "subagent_type": "Plan"},
                   {"content": [{"type": "text", "text": "done"}]})
    assert task.content == "Delegated to the Plan agent: d\nPrompt: p\nResult:\ndone"


def test_mcp_error_results_are_gotchas() -> None:
    observation = observe("mcp__db__query", {"sql": "select"}, {"content": [{"type": "text", "text": "no table"}],
                                                                  "isError": True})
    assert observation.category == "gotcha"
    assert observation.content.startswith("Called MCP tool query on server db (failed)")


@pytest.mark.parametrize("text,expected", [
    ("max_tokens=4096 tokenizer = AutoTokenizer()", "max_tokens=4096 tokenizer = AutoTokenizer()"),
    ('{"password": "hunter22", "user": "bob"}', '{"password": "[REDACTED]", "user": "bob"}'),
    ("DB_PASS=abc123 GITHUB_TOKEN=$GH", "DB_PASS=[REDACTED] GITHUB_TOKEN=$GH"),
    ("mysql --password=s3cretpw --user bob", "mysql --password=[REDACTED] --user bob"),
    ("apiKey: 'k-123456'", "apiKey: '[REDACTED]'"),
    ("xoxb-1234567890-abcdefghij and AIzaSyA1234567890abcdefghijklmnopqrstuv",
     "[REDACTED] and [REDACTED]"),
    ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [REDACTED]"),
    ("the author = bob", "the author = bob"),
    ("keep <private>x</private> this <PRIVATE>unclosed",
     "keep  this [private: 17 characters hidden, no closing tag]"),
])
def test_redaction_precision(text: str, expected: str) -> None:
    assert redaction.redact(text) == expected


def test_an_edit_is_stored_as_a_diff_with_its_context_once(home: Path, project_dir: Path) -> None:
    from ccmemory.embedding_text import condensed

    target = str(project_dir / "up.py")
    old = "def retry():\n    delay = 1\n    return delay\n"
    new = "def retry():\n    delay = 5\n    return delay\n"
    payload = tool_call("s-diff", project_dir, "Edit", {"file_path": target, "old_string": old, "new_string": new},
                        {"filePath": target}, "toolu_diff")
    assert_quiet_success(run_hook("post_tool_use", payload, home))
    [memory] = memories_of(home, "s-diff")
    assert memory["content"] == "Edited up.py\n  def retry():\n-     delay = 1\n+     delay = 5\n      return delay"
    # what is embedded is what the older form (context on both sides) gave
    repeated = ("Edited up.py\n- def retry():\n-     delay = 1\n-     return delay\n"
                "+ def retry():\n+     delay = 5\n+     return delay")
    assert condensed(memory["content"], "Edit") == condensed(repeated, "Edit") == \
        "Edited up.py\ndef retry():\n-     delay = 1\n+     delay = 5"

