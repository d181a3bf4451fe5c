"""Property-based tests: any hook payload and any tool arguments end within the code's limits.

Hypothesis generates hostile JSON (lone surrogates, deep nesting, wrong types, unknown keys) for
each hook event and for every MCP tool the server registers (the list is derived from the
server's registry, so no tool can be left out), and strings drawn just under, at and just over
each size cap of the code (a short random piece repeated, so a 100,000-character value costs
nothing to make). The properties are the code's own guarantees, asserted as limits of its
output, never as wall-clock measurements:

* a hook never raises and prints nothing but SessionStart's JSON, whose context fits
  ``context.max_tokens``; a stored observation is at most ``observations.MAX_OBSERVATION_CHARS``, and
  one that can be stored is stored, not dropped; a payload over ``MAX_PAYLOAD_BYTES`` is not
  read; the transcript is read only up to its byte, line and prompt caps;
* a tool either answers or fails with a tool error (never an internal exception); what the
  server sends, answer or error, is at most ``runtime.MAX_RESULT_CHARS`` plus the note saying
  what was cut; a value over a cap is refused with an error naming the limit, one under it is
  accepted, and what is stored (after redaction, which may lengthen it) fits the cap;
* a docmem query returns at most its row limit, no value over ``MAX_VALUE_BYTES``, values cut to
  ``MAX_RESULT_CHARS``, and when it runs too long it stops at its deadline (a deadline of a few
  milliseconds makes that a property of the code, not of the machine).
"""

from __future__ import annotations

import dataclasses
import importlib
import io
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ccmemory import background, db as database, documents, memories, observations, projects, search, transcript
from ccmemory.config import SCHEMA, load
from ccmemory.docmem import nodes as docmem_nodes, query as docmem_query
from ccmemory.errors import CCMemoryError, ToolError, ValidationError
from ccmemory.files import commands as file_commands, paths as file_paths
from ccmemory.hooks import context as session_context, payload as payloads, runner, summary
from ccmemory.mcp import registry, runtime
from ccmemory.mcp.registry import ToolContext
from ccmemory.redaction import redact
from ccmemory.vocabulary import CAPTURE_SOURCE
from testing.hooks import write_config

CHARS = st.characters(blacklist_categories=())  # lone surrogates included
TEXT = st.text(alphabet=CHARS, max_size=300)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True), TEXT)
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=5),
                                                      st.dictionaries(TEXT, inner, max_size=5)), max_leaves=30)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
FEW = settings(SETTINGS, max_examples=25)


def _repeat(piece: str, length: int) -> str:
    return (piece * (length // len(piece) + 1))[:length]


def near(cap: int, *, spread: int = 2, alphabet: st.SearchStrategy[str] = CHARS) -> st.SearchStrategy[str]:
    """Text of ``cap - spread`` to ``cap + spread`` characters: a short random piece repeated."""
    return st.builds(_repeat, st.text(alphabet, min_size=1, max_size=5), st.integers(max(cap - spread, 0),
                                                                                     cap + spread))


#: Every size cap an argument may meet (characters; the memory file's is in bytes).
CAPS = sorted({docmem_nodes.MAX_CONTEXT_CHARS, memories.MAX_ID_CHARS, file_paths.MAX_PATH_CHARS,
               search.MAX_QUERY_CHARS, memories.MAX_CONTENT_CHARS, docmem_query.MAX_SQL_CHARS,
               file_commands.MAX_FILE_BYTES, docmem_nodes.MAX_NODE_CHARS, runtime.MAX_RESULT_CHARS})
LONG = st.one_of([near(cap) for cap in CAPS])
#: What the server may send: the answer cut to MAX_RESULT_CHARS, then a note of how much was cut.
_NOTE = len(runtime.bounded_result("x" * (runtime.MAX_RESULT_CHARS + 1))) - runtime.MAX_RESULT_CHARS - len("1")
ANSWER_LIMIT = runtime.MAX_RESULT_CHARS + _NOTE + len("999,999,999,999")
_serial = iter(range(10**9))  # unique names and tool_use_ids


def _with_nested_response(payload: dict[str, Any], depth: int) -> bytes:
    """The payload as JSON with a ``tool_response`` nested ``depth`` deep (json.dumps itself cannot)."""
    text = json.dumps(payload)
    return (text[:-1] + ', "tool_response": ' + "[" * depth + '"bottom"' + "]" * depth + "}").encode()


# -- hooks ---------------------------------------------------------------------------------------------
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


def _scalar(home: Path, sql: str, params: tuple = ()) -> Any:
    db = database.connect(home / "data" / "ccmemory.db")
    try:
        return db.scalar(sql, params)
    finally:
        db.close()


def _count(home: Path) -> int:
    return _scalar(home, "SELECT COUNT(*) FROM memories")


def _check_stored_observations(home: Path) -> None:
    """Every captured observation fits MAX_OBSERVATION_CHARS; every memory fits MAX_CONTENT_CHARS."""
    assert (_scalar(home, "SELECT MAX(length(content)) FROM memories WHERE source = ?", (CAPTURE_SOURCE,))
            or 0) <= observations.MAX_OBSERVATION_CHARS
    assert (_scalar(home, "SELECT MAX(length(content)) FROM memories") or 0) <= memories.MAX_CONTENT_CHARS


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
    data = payloads.read(io.BytesIO(raw))
    payloads.unusable_fields(data)  # an id the hook cannot use (a NUL, a lone surrogate, too long) counts as missing
    storable_call = (payloads.text(data, "session_id") and payloads.text(data, "tool_name")
                     and observations.skip_reason(data, config) is None)
    if storable_call:
        assert stored == 1, "an observation that can be stored is never dropped"
    _check_stored_observations(hook_home)


#: Text JSON writes as itself (no escapes), so a string's JSON size is its length plus the two quotes.
PLAIN = st.characters(whitelist_categories=("Ll", "Lu", "Nd", "Zs", "Lo"))
CAPTURE_DEFAULTS = {key: spec["default"] for key, spec in SCHEMA["capture"].items()}
FIELD_SIZES = [CAPTURE_DEFAULTS["max_field_chars"], observations.MAX_OBSERVATION_CHARS,
               observations.MAX_OBSERVATION_CHARS + 2 * observations.REDACTION_MARGIN]


@SETTINGS
@given(tool=st.sampled_from(["Bash", "Write", "Read", "Grep", "mcp__x__y", "Other"]),
       command=st.one_of([near(size, spread=3) for size in FIELD_SIZES]),
       response=near(CAPTURE_DEFAULTS["max_result_chars"] - 2, spread=3, alphabet=PLAIN), failing=st.booleans())
def test_capture_near_its_caps(hook_home: Path, tool: str, command: str, response: str, failing: bool) -> None:
    """Fields just under and over the field cut, the observation cap and the redaction margin; a result just
    under and over capture.max_result_chars: stored iff the result fits, and never over MAX_OBSERVATION_CHARS."""
    tool_input = {"command": command, "file_path": command[:300], "content": command, "pattern": command}
    result: Any = {"stdout": response, "stderr": command, "interrupted": False} if tool == "Bash" else response
    if failing:
        result = {"is_error": True, "content": [{"type": "text", "text": response}], "error": command}
    payload = {"session_id": "s-caps", "cwd": str(hook_home / "project"), "tool_name": tool,
               "tool_input": tool_input, "tool_response": result, "tool_use_id": f"t-caps-{next(_serial)}",
               "hook_event_name": "PostToolUse"}
    raw = json.dumps(payload).encode()
    limit = load().get("capture", "max_result_chars")
    fits = observations.result_size(tool, result) <= limit
    before = _count(hook_home)
    assert _run_hook("post_tool_use", raw) == ""
    assert _count(hook_home) - before == (1 if fits else 0)
    if fits:
        newest = _scalar(hook_home, "SELECT length(content) FROM memories WHERE session_id = 's-caps' "
                                    "ORDER BY seq DESC LIMIT 1")
        assert 0 < newest <= observations.MAX_OBSERVATION_CHARS
    _check_stored_observations(hook_home)


@FEW
@given(size=st.integers(-3, 3), tool=st.sampled_from(["Read", "Bash"]))
def test_payload_over_its_cap_is_not_read(hook_home: Path, size: int, tool: str) -> None:
    """A payload over MAX_PAYLOAD_BYTES is not parsed, so nothing is stored; one at the cap is (the cap is
    lowered to the size of this payload so that examples reach it)."""
    payload = {"session_id": "s-payload", "cwd": str(hook_home / "project"), "tool_name": tool,
               "tool_input": {"file_path": "a.txt", "command": "ls"}, "tool_use_id": f"t-payload-{next(_serial)}",
               "tool_response": ""}
    cap = len(json.dumps(payload).encode()) + 100
    payload["tool_response"] = "y" * (100 + size)
    raw = json.dumps(payload).encode()
    saved = payloads.MAX_PAYLOAD_BYTES
    payloads.MAX_PAYLOAD_BYTES = cap
    try:
        before = _count(hook_home)
        assert _run_hook("post_tool_use", raw) == ""
        assert _count(hook_home) - before == (1 if len(raw) <= cap else 0)
    finally:
        payloads.MAX_PAYLOAD_BYTES = saved


@SETTINGS
@given(event=st.sampled_from(["stop", "session_end", "session_start"]), payload=JSON,
       fields=st.dictionaries(st.sampled_from(["session_id", "transcript_path", "cwd", "source",
                                               "last_assistant_message", "reason", "prompt"]),
                              st.one_of(JSON, LONG), max_size=7))
def test_any_session_payload(hook_home: Path, event: str, payload: Any, fields: dict) -> None:
    if isinstance(payload, dict):
        payload.update(fields)
    out = _run_hook(event, json.dumps(payload).encode())
    if event != "session_start":
        assert out == ""
    elif out:
        context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
        assert len(context) <= session_context.CLAUDE_CODE_LIMIT_CHARS
    _check_stored_observations(hook_home)


@pytest.fixture(scope="module")
def full_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with more to recall than any SessionStart budget: long memories, sessions and memory files."""
    home = tmp_path_factory.mktemp("full-home")
    project = home / "project"
    (project / ".git").mkdir(parents=True)
    db = database.connect(home / "data" / "ccmemory.db")
    try:
        project_id = projects.project_id(db, project)
        for index in range(60):
            memories.add(db, project_id=project_id, importance=0.9,
                         content=_repeat(f"Fact {index}: the deploy waits for the health check. ",
                                         memories.MAX_CONTENT_CHARS))
        for index in range(4):
            file_commands.execute(db, {"command": "create", "path": f"/memories/notes{index}.md",
                                       "file_text": _repeat(f"- note {index} line\n", file_commands.MAX_FILE_BYTES)},
                                  file_commands.Call(project_id))
    finally:
        db.close()
    return home


def test_session_start_context_fits_its_budget(full_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SessionStart's context fits context.max_tokens (4 characters a token) and Claude Code's 10,000."""
    monkeypatch.setenv("CCMEMORY_HOME", str(full_home / "data"))
    project = full_home / "project"
    transcript = project / "t.jsonl"
    transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "Deploy it. " * 5000}})
                          + "\n")
    for index in range(3):  # sessions with summaries, so the budget is shared by every part
        _run_hook("stop", json.dumps({"session_id": f"s-full-{index}", "cwd": str(project),
                                      "transcript_path": str(transcript),
                                      "last_assistant_message": "Done because it was needed. " * 500}).encode())

    @FEW
    @given(max_tokens=st.one_of(st.integers(0, 10_000), st.sampled_from([0, 1, 100, 2000, 2450, 2451, 10_000])))
    def check(max_tokens: int) -> None:
        write_config(full_home / "data", {"context": {"max_tokens": max_tokens}})
        out = _run_hook("session_start", json.dumps({"session_id": "s-new", "cwd": str(project),
                                                     "source": "startup"}).encode())
        budget = min(max_tokens * session_context.CHARS_PER_TOKEN, session_context.CLAUDE_CODE_LIMIT_CHARS - 200)
        context = json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""
        assert len(context) <= budget, f"{len(context)} characters for a budget of {budget}"

    check()


@SETTINGS
@given(lines=st.lists(st.one_of(st.tuples(st.just("prompt"), st.integers(1, 300)),
                                st.tuples(st.sampled_from(["junk", "assistant"]), st.integers(0, 300))),
                      max_size=40))
def test_transcript_is_read_within_its_caps(tmp_path_factory: pytest.TempPathFactory, lines: list[tuple[str, int]]
                                            ) -> None:
    """Stop reads the prompts of lines that start before MAX_TRANSCRIPT_BYTES and fit MAX_LINE_BYTES, at most
    MAX_PROMPTS of them (the caps are lowered here so that examples reach them)."""
    caps = {"MAX_TRANSCRIPT_BYTES": 2000, "MAX_LINE_BYTES": 200, "MAX_PROMPTS": 5}
    path = tmp_path_factory.mktemp("transcript") / "t.jsonl"
    data, expected, offset = b"", [], 0
    for number, (kind, size) in enumerate(lines):
        if kind == "prompt":
            prompt = _repeat(f"p{number} ", size).strip() or f"p{number}"
            line = json.dumps({"type": "user", "message": {"role": "user", "content": prompt}})
        elif kind == "assistant":
            line = json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": "x" * size}]}})
        else:
            line = '"user" ' + "{" * size
        raw = line.encode() + b"\n"
        if kind == "prompt" and offset < caps["MAX_TRANSCRIPT_BYTES"] and len(raw) <= caps["MAX_LINE_BYTES"]:
            expected.append(prompt)
        data, offset = data + raw, offset + len(raw)
    path.write_bytes(data)
    home = {"MAX_TRANSCRIPT_BYTES": transcript, "MAX_LINE_BYTES": transcript, "MAX_PROMPTS": summary}
    saved = {name: getattr(home[name], name) for name in caps}
    try:
        for name, value in caps.items():
            setattr(home[name], name, value)
        assert summary.read_transcript(str(path), None).prompts == expected[:caps["MAX_PROMPTS"]]
    finally:
        for name, value in saved.items():
            setattr(home[name], name, value)


# -- MCP tools -----------------------------------------------------------------------------------------
#: The tools the server registers, found as it finds them (server.main and the bootstrap server).
MODULES = runtime.load_tool_modules()
ALL_TOOLS = runtime.collect_tools(MODULES)
#: docs_ingest reads paths and fetches URLs: it has its own test with paths and URLs that matter.
ARGUMENT_TOOLS = sorted(set(ALL_TOOLS) - {"docs_ingest"})

#: Arguments that name things which exist, so that calls get past the lookup to their other checks.
KNOWN_KEYS = ("memory_id", "anchor_id", "old_memory_id", "new_memory_id", "id", "node_id", "target_id",
              "source_id", "start_node_id", "end_node_id", "path", "old_path")
WORDS = ["proptree", "append-child", "before", "add", "remove", "keyword", "1", "true", "/memories",
         "/memories/prop.md", "/memories/user/prop.md", "/memories/../x.md", "/memories/new.md",
         "deploy\ud800", "\udfff" * 8]  # lone surrogates: JSON may carry them, SQLite text cannot


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[runtime.Runtime]:
    """The server's runtime over a private database, with a memory, a docmem tree and a memory file in it."""
    home = tmp_path_factory.mktemp("tool-home")
    project = home / "project"
    (project / ".git").mkdir(parents=True)
    (project / "CLAUDE.md").write_text("# Project\n")
    db = database.connect(home / "ccmemory.db", vectors=True)
    worker = background.Background()
    worker.load_model()
    rt = runtime.Runtime(MODULES, str(project), "s-tools", start_hooks=False, background=worker)
    rt._context = ToolContext(db=db, project_id=projects.project_id(db, project), project_dir=str(project),
                              session_id="s-tools", state=rt.state)  # the connection Runtime._open would open
    memory_id = _send(rt, "memory_add", {"content": "The deploy uses blue-green switching"})[0].split()[2]
    _send(rt, "docmem_create", {"root_id": "proptree"})
    node = _send(rt, "docmem_create_node", {"target_id": "proptree", "content": "first", "context_type": "",
                                            "context_name": "", "context_value": "", "mode": "append-child"})
    _send(rt, "memory", {"command": "create", "path": "/memories/prop.md", "file_text": "# Prop\nline\n"})
    rt.state["known"] = {"memory": memory_id, "node": node[0].rsplit(" ", 1)[1], "path": "/memories/prop.md"}
    yield rt
    db.close()


def _db(rt: runtime.Runtime) -> Any:
    return rt._context.db


def _send(rt: runtime.Runtime, name: str, args: dict[str, Any]) -> tuple[str, bool]:
    """What the server sends for one ``tools/call`` (Runtime.call): the text and whether it is an error.

    An exception other than a tool error fails the test with its own traceback (the server would
    answer "failed unexpectedly"); the text is at most ANSWER_LIMIT characters of valid UTF-8.
    """
    tool = ALL_TOOLS[name]
    unexpected: list[Exception] = []

    def handler(ctx: ToolContext, arguments: dict[str, Any]) -> str:
        try:
            return tool.handler(ctx, arguments)
        except (ToolError, CCMemoryError):
            raise
        except Exception as exc:
            unexpected.append(exc)
            raise

    text, is_error = rt.call(dataclasses.replace(tool, handler=handler), args)
    if unexpected:
        raise unexpected[0]
    assert isinstance(text, str) and text
    assert len(text) <= ANSWER_LIMIT, f"{name} sent {len(text):,} characters"
    text.encode("utf-8")
    return text, is_error


def test_every_registered_tool_is_covered() -> None:
    """The tools tested below are all the server registers: one in a new module cannot be left out."""
    assert [module.__name__ for module in MODULES] == list(registry.TOOL_MODULES)
    declared = [tool.name for name in registry.TOOL_MODULES for tool in importlib.import_module(name).TOOLS]
    assert sorted(declared) == sorted(ALL_TOOLS)
    assert {"memory", "memory_search", "docs_search", "docmem_query_nodes"} <= set(ALL_TOOLS)
    assert set(ARGUMENT_TOOLS) | {"docs_ingest"} == set(ALL_TOOLS)
    assert {case.tool for case in CAP_CASES} <= set(ALL_TOOLS)


def _arguments(tool_name: str) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments by the tool's schema (required ones often present, an enum's values often chosen), or junk."""
    schema = ALL_TOOLS[tool_name].input_schema
    properties = schema["properties"]
    unknown = st.dictionaries(TEXT, JSON, max_size=3)
    if not properties:  # a tool without parameters still gets whatever a client may send
        return unknown
    anything = st.one_of(JSON, LONG, st.sampled_from(WORDS),
                         st.lists(st.one_of(TEXT, near(memories.MAX_ID_CHARS)), max_size=25))
    values = {name: st.booleans().flatmap(lambda valid, enum=spec.get("enum"): st.sampled_from(enum) if valid and enum  # noqa: B008
                                          else anything) for name, spec in properties.items()}
    required = {name: values[name] for name in schema.get("required", ())}
    optional = {name: value for name, value in values.items() if name not in required}
    return st.one_of(st.fixed_dictionaries(required, optional=optional), st.fixed_dictionaries({}, optional=values),
                     unknown)


@pytest.mark.parametrize("tool_name", ARGUMENT_TOOLS)
def test_any_tool_arguments(server: runtime.Runtime, tool_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(server.project_dir)
    known = server.state["known"]

    @SETTINGS
    @given(args=_arguments(tool_name), use_known=st.booleans())
    def check(args: dict[str, Any], use_known: bool) -> None:
        if use_known:
            for key in KNOWN_KEYS:
                if key in args:
                    args[key] = known["memory" if "memory" in key or "anchor" in key
                                      else "path" if "path" in key else "node"]
        _send(server, tool_name, args)

    check()


@SETTINGS
@given(args=st.dictionaries(st.sampled_from(["path", "url", "content", "title"]),
                            st.one_of(JSON, st.sampled_from(["/dev/zero", "/etc/hostname", "CLAUDE.md", "..",
                                                             "file:///etc/passwd", "http://127.0.0.1:9/"])),
                            max_size=2))
def test_any_docs_ingest_arguments(server: runtime.Runtime, args: dict[str, Any]) -> None:
    _send(server, "docs_ingest", args)
    for path in ("/dev/zero", "/etc/hostname"):
        if args.get("path") == path:
            assert not _db(server).scalar("SELECT COUNT(*) FROM documents WHERE source_path = ?", (path,))


_SHORT_PATHS = st.sampled_from(["/memories/a.md", "/memories/a.md", "/memories/d/b.md", "/memories/user/u.md",
                                "/memories/prop.md", "/memories", "/memories/d", "/memories/user", "/x.md"])
_LONG_PATHS = st.builds(lambda name: f"/memories/x{name}.md", near(file_paths.MAX_PATH_CHARS - 14,
                                                                    alphabet=st.sampled_from("ab_1-")))
MEMORY_PATHS = st.integers(0, 9).flatmap(lambda pick: _LONG_PATHS if pick == 0 else _SHORT_PATHS)
FILE_TEXT = st.one_of(TEXT, TEXT, st.sampled_from(["line", "\n", "# Prop"]),
                      near(file_commands.VIEW_MAX_CHARS, spread=60), near(file_commands.MAX_FILE_BYTES // 2),
                      near(file_commands.MAX_FILE_BYTES))
FILE_CALL = st.fixed_dictionaries(
    {"command": st.sampled_from(file_commands.COMMANDS), "path": MEMORY_PATHS, "old_path": MEMORY_PATHS,
     "new_path": MEMORY_PATHS, "file_text": FILE_TEXT, "old_str": FILE_TEXT, "new_str": FILE_TEXT,
     "insert_text": FILE_TEXT},
    optional={"insert_line": st.integers(-2, 5), "position": st.sampled_from(["start", "end", "middle"]),
              "view_range": st.lists(st.integers(-2, 3000), max_size=3)})


@SETTINGS
@given(calls=st.lists(FILE_CALL, min_size=1, max_size=6))
def test_memory_tool_commands(server: runtime.Runtime, calls: list[dict[str, Any]]) -> None:
    """The memory tool's commands in any order: a file view returns at most VIEW_MAX_CHARS (then a note of the
    lines left), and no stored file is over MAX_FILE_BYTES."""
    for args in calls:
        text, is_error = _send(server, "memory", args)
        if args["command"] == "view" and not is_error and "with line numbers" in text:
            assert len(text.split("\n[… lines ", 1)[0]) <= file_commands.VIEW_MAX_CHARS
    biggest = _db(server).scalar("SELECT MAX(length(CAST(content AS BLOB))) FROM memory_files")
    assert (biggest or 0) <= file_commands.MAX_FILE_BYTES


# -- size caps of tool arguments ----------------------------------------------------------------------


def _context(**more: Any) -> dict[str, Any]:
    return {"context_type": "", "context_name": "", "context_value": "", **more}


def _new_node(text: str) -> str:
    return text.rsplit(" ", 1)[-1]  # "result> docmem_create_node append-child: <id>"


def _stored_memory(rt: runtime.Runtime, args: dict[str, Any], text: str) -> int:
    return _db(rt).scalar("SELECT length(content) FROM memories WHERE id = ?", (text.split()[2],))


def _stored_node(column: str) -> Callable[[runtime.Runtime, dict[str, Any], str], int]:
    def size(rt: runtime.Runtime, args: dict[str, Any], text: str) -> int:
        node = args.get("id") or _new_node(text)
        return _db(rt).scalar(f"SELECT length({column}) FROM docmem_nodes WHERE id = ?", (node,))
    return size


def _stored_file(measure: str) -> Callable[[runtime.Runtime, dict[str, Any], str], int]:
    """The stored file's size in bytes (``content``) or its path's length (``path``); then it is deleted."""
    def stored(rt: runtime.Runtime, args: dict[str, Any], text: str) -> int:
        rel = args["path"][len(file_paths.ROOT) + 1:]
        row = _db(rt).one("SELECT length(CAST(content AS BLOB)) AS content, length(path) AS path "
                          "FROM memory_files WHERE path = ?", (rel,))
        _send(rt, "memory", {"command": "delete", "path": args["path"]})  # stay under the scope's file cap
        return row[measure] + (len(file_paths.ROOT) + 1 if measure == "path" else 0)
    return stored


@dataclasses.dataclass(frozen=True)
class Cap:
    """One size cap of a tool argument: a valid call with a value there, what the cap measures, how the
    refusal names it, and the size of what an accepted call stored."""

    name: str
    tool: str
    limit: int
    named: str
    call: Callable[[str], dict[str, Any]]
    size: Callable[[dict[str, Any]], int]
    stored: Callable[[runtime.Runtime, dict[str, Any], str], int] | None = None
    unit: Callable[[str], int] = len  # the size of a value as the cap counts it
    secret: bool = False  # whether values may end with a secret (redaction makes it longer)
    alphabet: st.SearchStrategy[str] = CHARS
    spread: int = 3

    def __str__(self) -> str:
        return self.name


#: Redacted as "token=[REDACTED]", two characters longer: the text stored is not always the text sent.
SECRET = " token=abcd1234"


def _stored_text(value: str) -> int:
    return len(redact(value))


def _utf8(value: str) -> int:
    return len(redact(value).encode("utf-8"))


def _fill(piece: str, size: int, unit: Callable[[str], int]) -> str:
    """``piece`` repeated, then padded with "a", to ``size`` as ``unit`` counts (additive over concatenation)."""
    times = size // max(unit(piece), 1)
    return piece * times + "a" * max(size - times * unit(piece), 0)


CAP_CASES = [
    Cap("search-query", "memory_search", search.MAX_QUERY_CHARS, f"{search.MAX_QUERY_CHARS:,}",
        lambda value: {"query": "deploy " + value, "mode": "keyword"}, lambda args: len(args["query"])),
    Cap("docs-query", "docs_search", search.MAX_QUERY_CHARS, f"{search.MAX_QUERY_CHARS:,}",
        lambda value: {"query": "deploy " + value}, lambda args: len(args["query"])),
    Cap("memory-content", "memory_add", memories.MAX_CONTENT_CHARS, f"{memories.MAX_CONTENT_CHARS:,}",
        lambda value: {"content": "x" + value}, lambda args: len(args["content"]), _stored_memory, secret=True),
    Cap("node-content", "docmem_create_node", docmem_nodes.MAX_NODE_CHARS, f"{docmem_nodes.MAX_NODE_CHARS:,}",
        lambda value: _context(target_id="<tree>", content=value, mode="append-child"),
        lambda args: _stored_text(args["content"]), _stored_node("content"), _stored_text, secret=True),
    Cap("node-update", "docmem_update_content", docmem_nodes.MAX_NODE_CHARS, f"{docmem_nodes.MAX_NODE_CHARS:,}",
        lambda value: {"id": "<node>", "content": value}, lambda args: _stored_text(args["content"]),
        _stored_node("content"), _stored_text, secret=True),
    Cap("node-context", "docmem_create_node", docmem_nodes.MAX_CONTEXT_CHARS, f"0 to {docmem_nodes.MAX_CONTEXT_CHARS}",
        lambda value: _context(target_id="<tree>", content="x", mode="append-child", context_name=value),
        lambda args: _stored_text(args["context_name"]), _stored_node("context_name"), _stored_text, True, spread=8),
    Cap("context-update", "docmem_update_context", docmem_nodes.MAX_CONTEXT_CHARS,
        f"0 to {docmem_nodes.MAX_CONTEXT_CHARS}", lambda value: _context(id="<node>", context_value=value),
        lambda args: _stored_text(args["context_value"]), _stored_node("context_value"), _stored_text, True,
        spread=8),
    Cap("query-sql", "docmem_query_nodes", docmem_query.MAX_SQL_CHARS, f"{docmem_query.MAX_SQL_CHARS:,}",
        lambda value: {"sql": f"SELECT '{value}' AS v"}, lambda args: len(args["sql"]),
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="'\x00")),
    Cap("file-size", "memory", file_commands.MAX_FILE_BYTES, f"{file_commands.MAX_FILE_BYTES:,}",
        lambda value: {"command": "create", "path": f"/memories/cap{next(_serial)}.md", "file_text": value},
        lambda args: _utf8(args["file_text"]), _stored_file("content"), _utf8, secret=True),
    Cap("file-path", "memory", file_paths.MAX_PATH_CHARS, str(file_paths.MAX_PATH_CHARS),
        lambda value: {"command": "create", "path": f"/memories/p{next(_serial)}-{value}.md", "file_text": "x"},
        lambda args: len(args["path"]), _stored_file("path"), alphabet=st.sampled_from("abcxyz019_-"), spread=6),
    Cap("document", "docs_ingest", documents.MAX_DOCUMENT_BYTES, f"{documents.MAX_DOCUMENT_BYTES:,}",
        lambda value: {"content": "x" + value}, lambda args: len(args["content"]), alphabet=PLAIN),
]


@pytest.mark.parametrize("case", CAP_CASES, ids=str)
def test_arguments_near_their_caps(server: runtime.Runtime, case: Cap, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over its cap a value is refused with an error naming the limit; under it, it is accepted, and what is
    stored fits the cap."""
    monkeypatch.chdir(server.project_dir)
    tree = f"captree{next(_serial)}"  # its own tree: the tests above may have deleted any other
    _send(server, "docmem_create", {"root_id": tree})
    names = {"<tree>": tree, "<node>": _new_node(_send(server, "docmem_create_node", _context(
        target_id=tree, content="x", mode="append-child"))[0])}
    # Ingesting 5 MB per example would only time the chunker: docs_ingest gets values just over its cap.
    low = 1 if case.tool == "docs_ingest" else -case.spread

    @FEW
    @given(piece=st.text(case.alphabet, min_size=1, max_size=5), offset=st.integers(low, case.spread),
           secret=st.booleans())
    def check(piece: str, offset: int, secret: bool) -> None:
        """The value makes the measured size about ``limit + offset`` (the call may add a prefix)."""
        overhead = case.size(case.call(""))
        value = _fill(piece, max(case.limit + offset - overhead, 0), case.unit)
        if secret and case.secret and len(value) >= len(SECRET):
            value = value[:-len(SECRET)] + SECRET
        args = {key: names.get(item, item) if isinstance(item, str) else item
                for key, item in case.call(value).items()}
        size = case.size(args)
        text, is_error = _send(server, case.tool, args)
        if size > case.limit:
            assert is_error and case.named in text, text[:300]
        else:
            assert not is_error, text[:300]
            if case.stored is not None:
                assert case.stored(server, args, text) <= case.limit

    check()


# -- docmem queries: rows, value bytes, answer size and deadline --------------------------------------
@SETTINGS
@given(rows=st.integers(0, 300), limit=st.integers(-5, 200), blob=st.booleans(),
       width=st.sampled_from([1, 100, 5000, 300_000, docmem_query.MAX_VALUE_BYTES, docmem_query.MAX_VALUE_BYTES + 1]))
def test_docmem_query_bounds(server: runtime.Runtime, rows: int, limit: int, blob: bool, width: int) -> None:
    """At most ``limit`` rows (1 to MAX_LIMIT), no value over MAX_VALUE_BYTES, values cut to fit MAX_RESULT_CHARS."""
    if width >= docmem_query.MAX_VALUE_BYTES:
        rows = min(rows, 3)
    value = f"zeroblob({width})" if blob else f"printf('%.*c', {width}, 'y')"
    sql = (f"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT {rows}) "
           f"SELECT x, {value} AS big FROM c")
    text, is_error = _send(server, "docmem_query_nodes", {"sql": sql, "limit": limit})
    if not 1 <= limit <= docmem_query.MAX_LIMIT:
        assert is_error and f"between 1 and {docmem_query.MAX_LIMIT}" in text, text[:300]
        return
    # Refused, or SQLite's printf gives NULL: never the value. printf needs a byte more than the text for its
    # terminator, so a text of exactly the limit is refused too (an error in the SQLite apsw bundles, NULL in 3.40).
    too_big = width > docmem_query.MAX_VALUE_BYTES or (width == docmem_query.MAX_VALUE_BYTES and not blob)
    if too_big and rows:
        assert (f"exceed {docmem_query.MAX_VALUE_BYTES:,} bytes" in text) if is_error else '"big": null' in text
        return
    assert not is_error, text[:300]
    found, more = docmem_query.run(_db(server), server._context.project_id, sql, limit)
    assert len(found) <= min(limit, rows) and more == (len(found) < rows)
    # Each value is cut to its share of the budget (at least 200 characters, then a note of what was cut).
    overrun = 2 * (200 + len(f"[… {width:,} more characters]"))
    assert sum(len(str(value)) for row in found for value in row.values()) <= docmem_query.MAX_RESULT_CHARS + overrun


@FEW
@given(sql=st.sampled_from([
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c ORDER BY x DESC",
    "SELECT count(*) FROM nodes a, nodes b, nodes c, nodes d, (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL "
    "SELECT x + 1 FROM c) SELECT x FROM c)",
]), deadline=st.sampled_from([0.001, 0.01, 0.05]))
def test_docmem_query_stops_at_its_deadline(server: runtime.Runtime, sql: str, deadline: float) -> None:
    """A query that never ends is stopped by the deadline and refused with an error naming it."""
    with pytest.raises(ValidationError, match=re.escape(f"ran longer than {deadline:g} seconds")):
        docmem_query.run(_db(server), server._context.project_id, sql, 10, deadline_seconds=deadline)
