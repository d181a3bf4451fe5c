"""The ``docmem_*`` MCP tools, with the reference docmem's names, arguments and result lines.

Results start ``result> <tool>``; errors are raised and become MCP tool
errors. The server keeps the active ``docmem_view`` list in
``ToolContext.state`` and calls :func:`on_server_start` once, which removes a
section left in CLAUDE.md by an earlier server. While views are active, every
change to a tree rewrites the section, so the file never shows stale text.
The expansion ``docmem_view add`` returns is quoted as data like the section
(:mod:`ccmemory.quoting`): a node's text is often a fetched page or tool output.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from .. import quoting
from ..docmem import expand, query, view
from ..docmem.nodes import MODES, Docmem
from ..errors import CCMemoryError, NotFoundError
from . import arguments
from .registry import Annotations, Tool, ToolContext, ToolError, reads

_STATE_KEY = "docmem_views"
_CONTEXT_FIELDS = ("context_type", "context_name", "context_value")
_ID = {"type": "string"}
_MODE = {"type": "string", "enum": list(MODES)}
_CONTEXT = {name: {"type": "string", "maxLength": 24} for name in _CONTEXT_FIELDS}


def _store(ctx: ToolContext) -> Docmem:
    return Docmem(ctx.db, ctx.project_id)


def _views(ctx: ToolContext) -> view.ActiveViews:
    if ctx.state is None:
        ctx.state = {}
    return ctx.state.setdefault(_STATE_KEY, view.ActiveViews())


def _claude_md() -> Any:
    """CLAUDE.md in the server's working directory: Claude Code starts the server in the project."""
    return view.claude_md(os.getcwd())


def _context(args: dict[str, Any]) -> tuple[str, str, str]:
    values = tuple(args.get(name) for name in _CONTEXT_FIELDS)
    if any(not isinstance(value, str) for value in values):
        raise ToolError("All context fields (context_type, context_name, context_value) are required; "
                        "send '' for an empty one.")
    return values  # type: ignore[return-value]


def _content(args: dict[str, Any]) -> str:
    content = args.get("content")
    if not isinstance(content, str):
        raise ToolError("Argument 'content' is required (text; '' is allowed).")
    return content


def _readonly(args: dict[str, Any]) -> bool:
    """0/1 as in the reference; true/false are accepted too."""
    value = args.get("readonly")
    if value in (None, "", 0, "0"):
        return False
    if value in (1, "1"):
        return True
    return arguments.flag(args, "readonly")


def _entries(store: Docmem, ids: list[str]) -> list[tuple[str, str]]:
    entries = []
    for node_id in ids:
        try:
            text = expand.expand_to_length(store, node_id, view.TOKEN_BUDGET)
        except NotFoundError:
            text = f"(node {node_id} no longer exists; drop it with docmem_view remove)"
        entries.append((node_id, text))
    return entries


def _changed(ctx: ToolContext, result: str) -> str:
    """After a tree changed: rewrite the CLAUDE.md section when views are active."""
    views = _views(ctx)
    if not views.ids:
        return result
    try:
        view.sync(_claude_md(), _entries(_store(ctx), views.ids))
    except view.ClaudeMdError as exc:
        return f"{result}\nwarning> the docmem views in CLAUDE.md were not refreshed: {exc}"
    return result


def docmem_create(ctx: ToolContext, args: dict[str, Any]) -> str:
    node = _store(ctx).create(arguments.text(args, "root_id"))
    return f"result> docmem_create created docmem: {node.id}"


def docmem_create_node(ctx: ToolContext, args: dict[str, Any]) -> str:
    mode = arguments.choice(args, "mode", MODES)
    if mode is None:
        raise ToolError(f"Argument 'mode' is required: one of {', '.join(MODES)}.")
    node = _store(ctx).create_node(arguments.text(args, "target_id", required=True), _content(args), _context(args),
                                   mode, _readonly(args))
    return _changed(ctx, f"result> docmem_create_node {mode}: {node.id}")


def docmem_delete(ctx: ToolContext, args: dict[str, Any]) -> str:
    node_id = arguments.text(args, "id", required=True)
    _store(ctx).delete(node_id)
    return _changed(ctx, f"result> docmem_delete deleted node: {node_id}")


def docmem_update_content(ctx: ToolContext, args: dict[str, Any]) -> str:
    node = _store(ctx).update_content(arguments.text(args, "id", required=True), _content(args))
    return _changed(ctx, f"result> docmem_update_content updated node: {node.id}")


def docmem_update_context(ctx: ToolContext, args: dict[str, Any]) -> str:
    node = _store(ctx).update_context(arguments.text(args, "id", required=True), _context(args))
    return _changed(ctx, f"result> docmem_update_context updated node: {node.id}")


def _relocation(args: dict[str, Any]) -> tuple[str, str, str]:
    mode = arguments.choice(args, "mode", MODES)
    if mode is None:
        raise ToolError(f"Argument 'mode' is required: one of {', '.join(MODES)}.")
    return arguments.text(args, "source_id", required=True), arguments.text(args, "target_id", required=True), mode


def docmem_copy_node(ctx: ToolContext, args: dict[str, Any]) -> str:
    source, target, mode = _relocation(args)
    node = _store(ctx).copy_node(source, target, mode)
    return _changed(ctx, f"result> docmem_copy_node {mode}: {node.id}")


def docmem_move_node(ctx: ToolContext, args: dict[str, Any]) -> str:
    source, target, mode = _relocation(args)
    _store(ctx).move_node(source, target, mode)
    return _changed(ctx, f"result> docmem_move_node {mode}")


def docmem_add_summary(ctx: ToolContext, args: dict[str, Any]) -> str:
    node = _store(ctx).add_summary(arguments.text(args, "start_node_id", required=True),
                                   arguments.text(args, "end_node_id", required=True), _content(args), _context(args))
    return _changed(ctx, f"result> docmem_add_summary added summary node: {node.id}")


def docmem_serialize(ctx: ToolContext, args: dict[str, Any]) -> str:
    return "result> docmem_serialize:\n" + expand.serialize(_store(ctx), arguments.text(args, "node_id", required=True))


def _max_tokens(args: dict[str, Any]) -> int:
    value = args.get("max_tokens")
    try:
        if isinstance(value, bool) or value is None or (isinstance(value, float) and not value.is_integer()):
            raise ValueError
        budget = int(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        raise ToolError('max_tokens must be a valid number string. Example: "1000".') from None
    if budget <= 0:
        raise ToolError("token_budget must be a positive number.")
    return budget


def docmem_expand_to_length(ctx: ToolContext, args: dict[str, Any]) -> str:
    text = expand.expand_to_length(_store(ctx), arguments.text(args, "node_id", required=True), _max_tokens(args))
    return "result> docmem_expand_to_length:\n" + text


def docmem_get_root(ctx: ToolContext, args: dict[str, Any]) -> str:
    return "result> docmem_get_root:\n" + expand.ancestor_path(_store(ctx), arguments.text(args, "node_id",
                                                                                            required=True))


def docmem_query_nodes(ctx: ToolContext, args: dict[str, Any]) -> str:
    limit = arguments.integer(args, "limit", query.DEFAULT_LIMIT, low=1, high=query.MAX_LIMIT)
    sql: Any = args.get("sql")  # query.run checks it, with the message Claude sees
    rows, more = query.run(ctx.db.path, ctx.project_id, sql, limit)
    text = json.dumps(rows, indent=2, ensure_ascii=False)
    if more:
        text += f"\n(first {limit} rows; narrow the WHERE clause or raise limit, at most {query.MAX_LIMIT})"
    return "result> docmem_query_nodes:\n" + text


def docmem_view(ctx: ToolContext, args: dict[str, Any]) -> str:
    action = arguments.choice(args, "action", ("add", "remove"))
    if action is None:
        raise ToolError("Argument 'action' is required: add or remove.")
    node_id = arguments.text(args, "node_id", required=True)
    store, views, path = _store(ctx), _views(ctx), _claude_md()
    expansion = expand.expand_to_length(store, node_id, view.TOKEN_BUDGET) if action == "add" else ""
    exists = view.read(path) is not None
    before = list(views.ids)
    was_active = node_id in before
    if exists:
        if action == "add":
            views.add(node_id)
        else:
            views.remove(node_id)
        try:
            view.sync(path, _entries(store, views.ids))
        except view.ClaudeMdError:
            views.ids[:] = before
            raise
    verb = "Added" if action == "add" else "Removed"
    head = f"result> docmem_view {verb} '{node_id}'. Active views: [{', '.join(views.ids)}]"
    if not exists:
        head += (f"\nNo {view.FILE_NAME} in {path.parent}, so nothing was written or changed "
                 "(create the file to use views).")
    elif action == "remove" and not was_active:
        head += f"\n'{node_id}' was not an active view; nothing changed."
    elif action == "add":
        head += (f"\nWritten under '{view.HEADER}' in {path}. Claude Code reads CLAUDE.md at session start and "
                 "after /clear or /compact, not mid-session, so the expansion follows for now.")
    return head + (f"\n\n{quoting.quote(expansion, view.QUOTED)}" if action == "add" else "")


def on_server_start(ctx: ToolContext) -> None:
    """Start with no active views: remove every section an earlier server left in CLAUDE.md."""
    _views(ctx).ids.clear()
    try:
        view.clean_stale(_claude_md())
    except CCMemoryError as exc:
        print(f"ccmemory: could not clean the docmem section of CLAUDE.md: {exc}", file=sys.stderr)


def _tool(name: str, description: str, properties: dict[str, Any], required: tuple[str, ...], handler: Any,
          annotations: Annotations) -> Tool:
    schema = {"type": "object", "properties": properties, "required": list(required)}
    return Tool(name, description, schema, handler, annotations)


def _writes(title: str, *, destructive: bool = False, idempotent: bool = False) -> Annotations:
    return Annotations(title, read_only=False, destructive=destructive, idempotent=idempotent)


_NODE_ARGS = {"target_id": _ID, "content": {"type": "string"}, **_CONTEXT, "mode": _MODE}
_MOVE_ARGS = {"source_id": _ID, "target_id": _ID, "mode": _MODE}

TOOLS: list[Tool] = [
    _tool("docmem_create", "Create an empty docmem (a tree of text nodes); root_id is optional (random 8-char id "
          "otherwise). Sessions (session:<id>) and ingested documents (doc:<id>) already exist as read-only trees.",
          {"root_id": _ID}, (), docmem_create, _writes("Create a docmem tree")),
    _tool("docmem_create_node", "Add a node: mode append-child (last child of target_id), before or after (sibling "
          "of target_id). Context is type:name:value, general to specific (e.g. note:topic:risks), each 0-24 chars. "
          "readonly=1 forbids later edits, moves and deletes; annotate readonly nodes with a sibling note.",
          {**_NODE_ARGS, "readonly": {"type": ["integer", "boolean"]}},
          ("target_id", "content", *_CONTEXT_FIELDS, "mode"), docmem_create_node, _writes("Add a docmem node")),
    _tool("docmem_delete", "Delete a docmem node and its subtree (refused if it holds readonly nodes). Nodes a "
          "summary filed from a session or document go back to their place.", {"id": _ID}, ("id",), docmem_delete,
          _writes("Delete a docmem node", destructive=True, idempotent=True)),
    _tool("docmem_update_content", "Replace a node's content (not readonly nodes).",
          {"id": _ID, "content": {"type": "string"}}, ("id", "content"), docmem_update_content,
          _writes("Update a node's content", destructive=True, idempotent=True)),
    _tool("docmem_update_context", "Replace a node's context type/name/value, each 0-24 chars (not readonly nodes).",
          {"id": _ID, **_CONTEXT}, ("id", *_CONTEXT_FIELDS), docmem_update_context,
          _writes("Update a node's context", destructive=True, idempotent=True)),
    _tool("docmem_copy_node", "Deep-copy source_id's subtree (any tree, sessions and documents too) to target_id: "
          "append-child, before or after. Returns the copy's id.", _MOVE_ARGS, ("source_id", "target_id", "mode"),
          docmem_copy_node, _writes("Copy a docmem subtree")),
    _tool("docmem_move_node", "Move a node with its subtree within the same tree: append-child, before or after "
          "target_id. Not under itself; not readonly nodes.", _MOVE_ARGS, ("source_id", "target_id", "mode"),
          docmem_move_node, _writes("Move a docmem subtree", idempotent=True)),
    _tool("docmem_add_summary", "Summarize a run of leaf siblings (start..end inclusive, any order): a summary node "
          "with your content takes their place and they move under it, kept. Works on session observations and "
          "document chunks too; docmem_delete on the summary undoes it.",
          {"start_node_id": _ID, "end_node_id": _ID, "content": {"type": "string"}, **_CONTEXT},
          ("start_node_id", "end_node_id", "content", *_CONTEXT_FIELDS), docmem_add_summary,
          _writes("Summarize docmem nodes")),
    _tool("docmem_serialize", "The plain content of a node's descendants in reading order, without metadata.",
          {"node_id": _ID}, ("node_id",), docmem_serialize, reads("Read a docmem subtree")),
    _tool("docmem_expand_to_length", "Render a subtree within max_tokens content tokens (chars/4): the node, then "
          "levels by priority (newest first) until one does not fit; output in reading order, each block "
          "'<id> <type>:<name>:<value> <updated>' then content.",
          {"node_id": _ID, "max_tokens": {"type": ["string", "integer"]}}, ("node_id", "max_tokens"),
          docmem_expand_to_length, reads("Expand a docmem subtree")),
    _tool("docmem_get_root", "The path from a node's root down to the node, one metadata line per level.",
          {"node_id": _ID}, ("node_id",), docmem_get_root, reads("Path to a docmem node")),
    _tool("docmem_query_nodes", "Read-only SQL over this project's nodes: SELECT ... FROM nodes. Columns: id, "
          "parent_id, content, order_value, token_count, created_at, updated_at, context_type, context_name, "
          "context_value, readonly, kind (docmem|session|memory|document|section|chunk). Roots: WHERE parent_id IS "
          "NULL. Returns up to limit rows (20).", {"sql": {"type": "string"}, "limit": {"type": "integer"}},
          ("sql",), docmem_query_nodes, reads("Query docmem nodes")),
    _tool("docmem_view", "action add: show a node's subtree (10000-token expansion) in ./CLAUDE.md under "
          "'# DOCMEM Dynamic'; re-adding moves it last. remove: take it out (the section goes with the last one). "
          "Claude Code reads CLAUDE.md only at session start and after /clear or /compact, so add also returns the "
          "expansion. No CLAUDE.md: nothing is written.",
          {"action": {"type": "string", "enum": ["add", "remove"]}, "node_id": _ID}, ("action", "node_id"),
          docmem_view, _writes("Show a docmem subtree in CLAUDE.md", destructive=True, idempotent=True)),
]
