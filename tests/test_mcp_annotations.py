"""MCP tool annotations, read through the SDK client from the real server over stdio.

Claude Code runs tools marked ``readOnlyHint`` in parallel and lets them
through in plan mode, so the hints must match what each tool does: the table
below is the contract, and the read-only tools are called to show that they
leave every memory, document and tree as it was.
"""

from __future__ import annotations

import hashlib
import json
from typing import Iterator

import pytest

from testing.mcp import project_server, RunningServer

# name: (readOnly, destructive, idempotent, openWorld)
EXPECTED = {
    "memory_search": (True, False, True, False),
    "memory_get": (True, False, True, False),
    "memory_list": (True, False, True, False),
    "memory_timeline": (True, False, True, False),
    "memory_add": (False, False, False, False),
    "memory_reinforce": (False, False, False, False),
    "memory_deemphasize": (False, False, False, False),
    "memory_delete": (False, True, True, False),
    "memory_supersede": (False, False, True, False),
    "memory_status": (True, False, True, False),
    "docs_search": (True, False, True, False),
    "docs_ingest": (False, True, True, True),
    "memory": (False, True, False, False),
    "docmem_create": (False, False, False, False),
    "docmem_create_node": (False, False, False, False),
    "docmem_delete": (False, True, True, False),
    "docmem_update_content": (False, True, True, False),
    "docmem_update_context": (False, True, True, False),
    "docmem_copy_node": (False, False, False, False),
    "docmem_move_node": (False, False, True, False),
    "docmem_add_summary": (False, False, False, False),
    "docmem_serialize": (True, False, True, False),
    "docmem_expand_to_length": (True, False, True, False),
    "docmem_get_root": (True, False, True, False),
    "docmem_query_nodes": (True, False, True, False),
    "docmem_view": (False, True, True, False),
}

# What a tool may change when it only reads: the hit counters that rank memories.
CONTENT_QUERIES = (
    "SELECT id, content, sector, tier, category, tags, files, importance, salience, valid_until, is_deleted "
    "FROM memories ORDER BY id",
    "SELECT * FROM memory_relationships ORDER BY id",
    "SELECT id, title, content_hash FROM documents ORDER BY id",
    "SELECT document_id, ordinal, heading, content FROM chunks ORDER BY document_id, ordinal",
    "SELECT id, parent_id, order_value, content, context_type, context_name, context_value FROM docmem_nodes "
    "ORDER BY id",
    "SELECT id, summary FROM sessions ORDER BY id",
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with project_server(tmp_path_factory.mktemp("mcp-annotations"), "annotations-session") as running:
        yield running


def fingerprint(server: RunningServer) -> str:
    db = server.connect()
    try:
        rows = [db.rows(sql) for sql in CONTENT_QUERIES]
    finally:
        db.close()
    return hashlib.sha256(json.dumps(rows, sort_keys=True, default=str).encode()).hexdigest()


def test_every_tool_carries_the_annotations_that_match_what_it_does(server: RunningServer) -> None:
    tools = {tool.name: tool for tool in server.list_tools()}
    assert set(tools) == set(EXPECTED)
    for name, tool in tools.items():
        hints = tool.annotations
        assert hints is not None, name
        got = (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint)
        assert got == EXPECTED[name], name
        assert hints.title and tool.title == hints.title, name
    listed = json.dumps([tool.model_dump(by_alias=True, exclude_none=True) for tool in tools.values()])
    assert listed.count('"readOnlyHint": true') == sum(1 for hints in EXPECTED.values() if hints[0])


def test_read_only_tools_leave_the_store_unchanged(server: RunningServer) -> None:
    added = server.call("memory_add", {"content": "The nightly export runs from cron at 02:00"})
    memory_id = added.text.split()[2]
    server.call("docs_ingest", {"content": "# Runbook\n\nRestart the queue worker first.", "title": "Runbook"})
    tree = server.call("docmem_create", {"root_id": "notes"})
    assert not tree.is_error, tree.text
    before = fingerprint(server)
    calls = {
        "memory_search": {"query": "nightly export"},
        "memory_get": {"ids": [memory_id]},
        "memory_list": {},
        "memory_timeline": {"anchor_id": memory_id},
        "memory_status": {},
        "docs_search": {"query": "queue worker"},
        "docmem_serialize": {"node_id": "notes"},
        "docmem_expand_to_length": {"node_id": "notes", "max_tokens": 100},
        "docmem_get_root": {"node_id": "notes"},
        "docmem_query_nodes": {"sql": "SELECT id FROM nodes"},
    }
    assert set(calls) == {name for name, hints in EXPECTED.items() if hints[0]}
    for name, arguments in calls.items():
        answer = server.call(name, arguments)
        assert not answer.is_error, (name, answer.text)
    assert fingerprint(server) == before


def test_idempotent_delete_changes_nothing_the_second_time(server: RunningServer) -> None:
    added = server.call("memory_add", {"content": "Staging uses the eu-west bucket"})
    memory_id = added.text.split()[2]
    assert not server.call("memory_delete", {"memory_id": memory_id}).is_error
    after_first = fingerprint(server)
    server.call("memory_delete", {"memory_id": memory_id})
    assert fingerprint(server) == after_first
