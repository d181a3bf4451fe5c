"""Property-based tests: any hook payload and any tool arguments end within the code's limits.

Hypothesis generates hostile JSON (lone surrogates, deep nesting, wrong types, huge strings,
unknown keys) for each hook event and for every MCP tool's arguments. The properties are the
code's own guarantees: a hook never raises and prints nothing but SessionStart's JSON; a tool
either answers or fails with a tool error (never an internal exception); whatever is stored
fits the content cap, and an observation that can be stored is stored, not dropped.
"""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ccmemory import db as database, memories, projects
from ccmemory.config import load
from ccmemory.mcp import docmem_tools
from ccmemory.errors import CCMemoryError
from ccmemory.hooks import capture, payload as payloads, runner
from ccmemory.mcp import background, docs_tools, memory_tools, runtime
from ccmemory.mcp.registry import ToolContext, ToolError

TEXT = st.text(alphabet=st.characters(blacklist_categories=()), max_size=300)  # surrogates included
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True), TEXT)
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=5),
                                                      st.dictionaries(TEXT, inner, max_size=5)), max_leaves=30)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


def _with_nested_response(payload: dict[str, Any], depth: int) -> bytes:
    """The payload as JSON with a ``tool_response`` nested ``depth`` deep (json.dumps itself cannot)."""
    text = json.dumps(payload)
    return (text[:-1] + ', "tool_response": ' + "[" * depth + '"bottom"' + "]" * depth + "}").encode()


@pytest.fixture(scope="module")
def hook_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("prop-home")
    (home / "project" / ".git").mkdir(parents=True)
    previous = os.environ.get("CCMEMORY_HOME")
    os.environ["CCMEMORY_HOME"] = str(home / "data")
    yield home
    if previous is None:
        os.environ.pop("CCMEMORY_HOME", None)
    else:
        os.environ["CCMEMORY_HOME"] = previous


def _run_hook(name: str, raw: bytes) -> str:
    """Run a hook in-process on ``raw`` stdin; returns its stdout. It must never raise."""
    stdin, stdout = sys.stdin, sys.stdout
    sys.stdin = io.TextIOWrapper(io.BytesIO(raw))
    sys.stdout = io.StringIO()
    try:
        runner.run(name)
        return sys.stdout.getvalue()
    finally:
        sys.stdin, sys.stdout = stdin, stdout


def _count(home: Path) -> int:
    db = database.connect(home / "data" / "ccmemory.db")
    try:
        return db.scalar("SELECT COUNT(*) FROM memories")
    finally:
        db.close()


TOOLS = st.one_of(st.sampled_from(["Bash", "Write", "Edit", "MultiEdit", "Read", "Grep", "Glob", "WebFetch",
                                   "WebSearch", "Task", "NotebookEdit", "mcp__x__y"]), TEXT)


@SETTINGS
@given(tool=TOOLS, tool_input=JSON, response=JSON, extra=st.dictionaries(TEXT, JSON, max_size=3),
       depth=st.sampled_from([0, 0, 50, 5000]), session=st.one_of(TEXT, st.just("s-prop")))
def test_any_capture_payload(hook_home: Path, tool: Any, tool_input: Any, response: Any, extra: dict,
                             depth: int, session: Any) -> None:
    payload = {**extra, "session_id": session, "cwd": str(hook_home / "project"), "tool_name": tool,
               "tool_input": tool_input, "hook_event_name": "PostToolUse"}
    if depth:
        payload.pop("tool_response", None)
        raw = _with_nested_response(payload, depth)
    else:
        raw = json.dumps({**payload, "tool_response": response}).encode()  # lone surrogates as \\udXXX
    before = _count(hook_home)
    assert _run_hook("post_tool_use", raw) == ""
    stored = _count(hook_home) - before
    assert stored in (0, 1)
    config = load()
    storable = (isinstance(session, str) and session.strip() and isinstance(tool, str) and tool.strip()
                and capture.skip_reason(payloads.read(io.BytesIO(raw)), config) is None)
    if storable:
        assert stored == 1, "an observation that can be stored is never dropped"
    db = database.connect(hook_home / "data" / "ccmemory.db")
    try:
        longest = db.scalar("SELECT MAX(length(content)) FROM memories") or 0
    finally:
        db.close()
    assert longest <= memories.MAX_CONTENT_CHARS


@SETTINGS
@given(event=st.sampled_from(["stop", "session_end", "session_start"]), payload=JSON,
       fields=st.dictionaries(st.sampled_from(["session_id", "transcript_path", "cwd", "source",
                                               "last_assistant_message", "reason", "prompt"]), JSON, max_size=7))
def test_any_session_payload(hook_home: Path, event: str, payload: Any, fields: dict) -> None:
    if isinstance(payload, dict):
        payload.update(fields)
    out = _run_hook(event, json.dumps(payload).encode())
    if event != "session_start":
        assert out == ""
    elif out:
        assert "hookSpecificOutput" in json.loads(out)


@pytest.fixture(scope="module")
def tool_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ToolContext]:
    home = tmp_path_factory.mktemp("tool-home")
    project = home / "project"
    (project / ".git").mkdir(parents=True)
    (project / "CLAUDE.md").write_text("# Project\n")
    db = database.connect(home / "ccmemory.db", vectors=True)
    worker = background.Background()
    worker.load_model()
    ctx = ToolContext(db=db, project_id=projects.project_id(db, project), project_dir=str(project),
                      session_id="s-tools", state={background.STATE_KEY: worker})
    memory = memories.add(db, project_id=ctx.project_id, content="The deploy uses blue-green switching")
    docmem_tools.docmem_create(ctx, {"root_id": "proptree"})
    ctx.state["known"] = [memory.id, memory.id[:8], "proptree"]
    yield ctx
    db.close()


ALL_TOOLS = {tool.name: tool for module in (memory_tools, docs_tools, docmem_tools) for tool in module.TOOLS}


def _arguments(tool_name: str) -> st.SearchStrategy[dict[str, Any]]:
    schema = ALL_TOOLS[tool_name].input_schema
    names = list(schema["properties"])
    value = st.one_of(JSON, st.sampled_from(["proptree", "append-child", "add", "remove", "keyword", "1", "true"]))
    unknown = st.dictionaries(TEXT, JSON, max_size=3)
    if not names:  # a tool without parameters still gets whatever a client may send
        return unknown
    return st.dictionaries(st.sampled_from(names), value, max_size=len(names)) | unknown


@pytest.mark.parametrize("tool_name", sorted(set(ALL_TOOLS) - {"docs_ingest"}))
def test_any_tool_arguments(tool_context: ToolContext, tool_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tool_context.project_dir)

    @SETTINGS
    @given(args=_arguments(tool_name), use_known=st.booleans())
    def check(args: dict[str, Any], use_known: bool) -> None:
        if use_known:
            for key in ("memory_id", "anchor_id", "node_id", "id", "target_id", "source_id"):
                if key in args:
                    args[key] = tool_context.state["known"][0 if "memory" in key or "anchor" in key else 2]
        try:
            text = runtime.bounded_result(ALL_TOOLS[tool_name].handler(tool_context, args))
        except (ToolError, CCMemoryError) as exc:
            text = str(exc)
        assert isinstance(text, str) and len(text) <= runtime.MAX_RESULT_CHARS + 200
        text.encode("utf-8")

    check()


@SETTINGS
@given(args=st.dictionaries(st.sampled_from(["path", "url", "content", "title"]),
                            st.one_of(JSON, st.sampled_from(["/dev/zero", "/etc/hostname", "CLAUDE.md", "..",
                                                             "file:///etc/passwd", "http://127.0.0.1:9/"])),
                            max_size=2))
def test_any_docs_ingest_arguments(tool_context: ToolContext, args: dict[str, Any]) -> None:
    try:
        docs_tools.docs_ingest(tool_context, args)
    except (ToolError, CCMemoryError) as exc:
        assert str(exc)
    for path in ("/dev/zero", "/etc/hostname"):
        if args.get("path") == path:
            assert not tool_context.db.scalar("SELECT COUNT(*) FROM documents WHERE source_path = ?", (path,))
