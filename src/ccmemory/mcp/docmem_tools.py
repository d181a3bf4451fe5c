"""The ``docmem_*`` MCP tools, with the reference docmem's names, arguments and result lines.

Results start ``result> <tool>``; errors are raised and become MCP tool
errors. The server keeps the active ``docmem_view`` list in
``ToolContext.state`` and calls :func:`on_server_start` once, which removes a
section left in CLAUDE.md by an earlier server. While views are active, every
change to a tree rewrites the section, so the file never shows stale text.
Every answer that shows node text (the read tools, the expansion ``docmem_view add``
returns) quotes it as data like the section (:mod:`ccmemory.quoting`): a node's text is
often a fetched page or tool output. The ``result>`` line stays outside the quote.
"""

import json
import os
import sys
from typing import Annotated, Any, Mapping

from .. import parameters, quoting
from ..docmem import expand, query, view
from ..docmem.nodes import MAX_CONTEXT_CHARS, MODES, Docmem
from ..errors import CCMemoryError, NotFoundError, ToolError
from ..parameters import Param
from .registry import Annotations, ToolContext, reads, tool

_STATE_KEY = "docmem_views"
#: What the quoted part of a read tool's answer is, for the line that says it is data.
STORED = "the text of docmem nodes ccmemory stored (documents, web pages, tool output, notes)"


def _store(ctx: ToolContext) -> Docmem:
    return Docmem(ctx.db, ctx.project_id)


def _views(ctx: ToolContext) -> view.ActiveViews:
    if ctx.state is None:
        ctx.state = {}
    return ctx.state.setdefault(_STATE_KEY, view.ActiveViews())


def _claude_md() -> Any:
    """CLAUDE.md in the server's working directory: Claude Code starts the server in the project."""
    return view.claude_md(os.getcwd())


def _context_field(args: Mapping[str, Any], name: str) -> str:
    value = args.get(name)
    if not isinstance(value, str):
        raise ToolError("All context fields (context_type, context_name, context_value) are required; "
                        "send '' for an empty one.")
    return value


def _content(args: Mapping[str, Any], name: str) -> str:
    content = args.get(name)
    if not isinstance(content, str):
        raise ToolError(f"Argument {name!r} is required (text; '' is allowed).")
    return content


def _readonly(args: Mapping[str, Any], name: str) -> bool:
    """0/1 as in the reference; true/false are accepted too."""
    value = args.get(name)
    if value in (None, "", 0, "0"):
        return False
    if value in (1, "1"):
        return True
    return parameters.flag(args, name)


def _max_tokens(args: Mapping[str, Any], name: str) -> int:
    """A positive whole number, as text or not, with the reference docmem's messages."""
    value = args.get(name)
    try:
        if isinstance(value, bool) or value is None or (isinstance(value, float) and not value.is_integer()):
            raise ValueError
        budget = int(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        raise ToolError('max_tokens must be a valid number string. Example: "1000".') from None
    if budget <= 0:
        raise ToolError("token_budget must be a positive number.")
    return budget


def _writes(title: str, *, destructive: bool = False, idempotent: bool = False) -> Annotations:
    return Annotations(title, read_only=False, destructive=destructive, idempotent=idempotent)


NodeId = str
Content = Annotated[str, Param(check=_content)]
Context = Annotated[str, Param(max_length=MAX_CONTEXT_CHARS, check=_context_field)]
Mode = Annotated[str, Param(choices=MODES)]


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


@tool(_writes("Create a docmem tree"),
      "Create an empty docmem (a tree of text nodes); root_id is optional (random 8-char id otherwise). Sessions "
      "(session:<id>) and ingested documents (doc:<id>) already exist as read-only trees.")
def docmem_create(ctx: ToolContext, root_id: NodeId | None = None) -> str:
    node = _store(ctx).create(root_id)
    return f"result> docmem_create created docmem: {node.id}"


@tool(_writes("Add a docmem node"),
      "Add a node: mode append-child (last child of target_id), before or after (sibling of target_id). Context is "
      f"type:name:value, general to specific (e.g. note:topic:risks), each 0-{MAX_CONTEXT_CHARS} chars. readonly=1 forbids later "
      "edits, moves and deletes; annotate readonly nodes with a sibling note.")
def docmem_create_node(ctx: ToolContext, target_id: NodeId, content: Content, context_type: Context,
                       context_name: Context, context_value: Context, mode: Mode,
                       readonly: Annotated[bool, Param(wire=("integer", "boolean"), check=_readonly)] = False) -> str:
    node = _store(ctx).create_node(target_id, content, (context_type, context_name, context_value), mode, readonly)
    return _changed(ctx, f"result> docmem_create_node {mode}: {node.id}")


@tool(_writes("Delete a docmem node", destructive=True, idempotent=True),
      "Delete a docmem node and its subtree (refused if it holds readonly nodes). Nodes a summary filed from a "
      "session or document go back to their place.")
def docmem_delete(ctx: ToolContext, id: NodeId) -> str:  # noqa: A002 - the reference docmem's argument name
    _store(ctx).delete(id)
    return _changed(ctx, f"result> docmem_delete deleted node: {id}")


@tool(_writes("Update a node's content", destructive=True, idempotent=True),
      "Replace a node's content (not readonly nodes).")
def docmem_update_content(ctx: ToolContext, id: NodeId, content: Content) -> str:  # noqa: A002
    node = _store(ctx).update_content(id, content)
    return _changed(ctx, f"result> docmem_update_content updated node: {node.id}")


@tool(_writes("Update a node's context", destructive=True, idempotent=True),
      f"Replace a node's context type/name/value, each 0-{MAX_CONTEXT_CHARS} chars (not readonly nodes).")
def docmem_update_context(ctx: ToolContext, id: NodeId, context_type: Context, context_name: Context,  # noqa: A002
                          context_value: Context) -> str:
    node = _store(ctx).update_context(id, (context_type, context_name, context_value))
    return _changed(ctx, f"result> docmem_update_context updated node: {node.id}")


@tool(_writes("Copy a docmem subtree"),
      "Deep-copy source_id's subtree (any tree, sessions and documents too) to target_id: append-child, before "
      "or after. Returns the copy's id.")
def docmem_copy_node(ctx: ToolContext, source_id: NodeId, target_id: NodeId, mode: Mode) -> str:
    node = _store(ctx).copy_node(source_id, target_id, mode)
    return _changed(ctx, f"result> docmem_copy_node {mode}: {node.id}")


@tool(_writes("Move a docmem subtree", idempotent=True),
      "Move a node with its subtree within the same tree: append-child, before or after target_id. Not under "
      "itself; not readonly nodes.")
def docmem_move_node(ctx: ToolContext, source_id: NodeId, target_id: NodeId, mode: Mode) -> str:
    _store(ctx).move_node(source_id, target_id, mode)
    return _changed(ctx, f"result> docmem_move_node {mode}")


@tool(_writes("Summarize docmem nodes"),
      "Summarize a run of leaf siblings (start..end inclusive, any order): a summary node with your content takes "
      "their place and they move under it, kept. Works on session observations and document chunks too; "
      "docmem_delete on the summary undoes it.")
def docmem_add_summary(ctx: ToolContext, start_node_id: NodeId, end_node_id: NodeId, content: Content,
                       context_type: Context, context_name: Context, context_value: Context) -> str:
    node = _store(ctx).add_summary(start_node_id, end_node_id, content, (context_type, context_name, context_value))
    return _changed(ctx, f"result> docmem_add_summary added summary node: {node.id}")


@tool(reads("Read a docmem subtree"),
      "The plain content of a node's descendants in reading order, without metadata.")
def docmem_serialize(ctx: ToolContext, node_id: NodeId) -> str:
    return "result> docmem_serialize:\n" + quoting.quote(expand.serialize(_store(ctx), node_id), STORED)


@tool(reads("Expand a docmem subtree"),
      "Render a subtree within max_tokens content tokens (chars/4): the node, then levels by priority (newest "
      "first) until one does not fit; output in reading order, each block '<id> <type>:<name>:<value> <updated>' "
      "then content.")
def docmem_expand_to_length(ctx: ToolContext, node_id: NodeId,
                            max_tokens: Annotated[int, Param(wire=("string", "integer"), check=_max_tokens)]) -> str:
    text = expand.expand_to_length(_store(ctx), node_id, max_tokens)
    return "result> docmem_expand_to_length:\n" + quoting.quote(text, STORED)


@tool(reads("Path to a docmem node"),
      "The path from a node's root down to the node, one metadata line per level.")
def docmem_get_root(ctx: ToolContext, node_id: NodeId) -> str:
    return "result> docmem_get_root:\n" + quoting.quote(expand.ancestor_path(_store(ctx), node_id), STORED)


@tool(reads("Query docmem nodes"),
      "Read-only SQL over this project's nodes: SELECT ... FROM nodes. Columns: id, parent_id, content, "
      "order_value, token_count, created_at, updated_at, context_type, context_name, context_value, readonly, kind "
      f"(docmem|session|memory|document|section|chunk). Roots: WHERE parent_id IS NULL. Returns up to limit rows "
      f"({query.DEFAULT_LIMIT}).")
def docmem_query_nodes(ctx: ToolContext, sql: Annotated[str, Param(as_sent=True)],
                       limit: Annotated[int, Param(low=1, high=query.MAX_LIMIT)] = query.DEFAULT_LIMIT) -> str:
    rows, more = query.run(ctx.db, ctx.project_id, sql, limit)
    # Still JSON: hidden characters become \uXXXX escapes, &, < and > the references the notice names.
    rows_json = quoting.escape(quoting.json_visible(json.dumps(rows, indent=2, ensure_ascii=False)))
    text = "result> docmem_query_nodes:\n" + quoting.quote_escaped(rows_json, STORED)
    if more:
        text += f"(first {limit} rows; narrow the WHERE clause or raise limit, at most {query.MAX_LIMIT})"
    return text


@tool(_writes("Show a docmem subtree in CLAUDE.md", destructive=True, idempotent=True),
      f"action add: show a node's subtree ({view.TOKEN_BUDGET}-token expansion) in ./CLAUDE.md under "
      "'# DOCMEM Dynamic'; re-adding moves it last. remove: take it out (the section goes with the last one). "
      "Claude Code reads CLAUDE.md only at session start and after /clear or /compact, so add also returns the "
      "expansion. No CLAUDE.md: nothing is written.")
def docmem_view(ctx: ToolContext, action: Annotated[str, Param(choices=("add", "remove"))], node_id: NodeId) -> str:
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


TOOLS = [docmem_create, docmem_create_node, docmem_delete, docmem_update_content, docmem_update_context,
         docmem_copy_node, docmem_move_node, docmem_add_summary, docmem_serialize, docmem_expand_to_length,
         docmem_get_root, docmem_query_nodes, docmem_view]
