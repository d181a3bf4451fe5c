"""A readable Markdown copy of the store, for people: per project, sessions, memories, documents, trees, files.

It is rendered from the same records as the JSON Lines export (so it shows
what a backup holds), but it is not meant to be imported: deleted memories are
left out, documents are listed rather than copied, and record types without a
renderer are counted at the end.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ..db import Database
from .. import clock
from . import records

_SHOWN = {"project", "session", "memory", "document", "docmem_node", "memory_file"}
#: Where the user-wide memory files (no project) are collected.
_USER_WIDE = ""


def _quote(text: str, indent: str = "  ") -> str:
    return "\n".join(f"{indent}{line}" if line.strip() else "" for line in text.strip().splitlines())


def _collect(db: Database, scope: records.Scope) -> tuple[dict[str, dict[str, list[dict[str, Any]]]], dict[str, int]]:
    by_project: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    hidden: dict[str, int] = {}
    for record_type in records.RECORD_TYPES:
        for record in record_type.export(db, scope):
            if record_type.name not in _SHOWN:
                hidden[record_type.name] = hidden.get(record_type.name, 0) + 1
            elif record_type.name == "project":
                by_project[record["path"]]["project"].append(record)
            else:
                by_project[record["project"] or _USER_WIDE][record_type.name].append(record)
    return by_project, hidden


def _memories(found: list[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    by_category: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for memory in found:
        if not memory["is_deleted"]:
            by_category[memory["category"]].append(memory)
    for category in sorted(by_category):
        lines += [f"### {category.capitalize()}", ""]
        for memory in by_category[category]:
            marks = [memory["sector"], f"salience {memory['salience']:.2f}", f"`{memory['id'][:8]}`"]
            if memory["tags"]:
                marks.append("tags: " + ", ".join(memory["tags"]))
            if memory["valid_until"]:
                marks.append(f"superseded {clock.minute(memory['valid_until'])}")
            lines.append(f"- **{clock.minute(memory['created_at'])}** · {' · '.join(marks)}")
            lines += [_quote(memory["content"]), ""]
    return lines


def _memory_files(files: list[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    for memory_file in files:
        lines += [f"- **{memory_file['path']}** (updated {clock.minute(memory_file['updated_at'])})",
                  _quote(memory_file["content"]), ""]
    return lines


def _tree(nodes: list[dict[str, Any]]) -> list[str]:
    children: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
    ids = {node["id"] for node in nodes}
    for node in nodes:
        children[node["parent_id"] if node["parent_id"] in ids else None].append(node)
    lines: list[str] = []

    def walk(parent: str | None, depth: int) -> None:
        for node in sorted(children[parent], key=lambda n: n["order_value"]):
            context = ":".join(part for part in (node["context_type"], node["context_name"], node["context_value"])
                               if part)
            label = f"`{node['id']}`" + (f" ({context})" if context else "")
            first, *rest = (node["content"] or "").strip().splitlines() or [""]
            lines.append(f"{'  ' * depth}- {label} {first}".rstrip())
            lines.extend(f"{'  ' * (depth + 1)}{line}" for line in rest if line.strip())
            walk(node["id"], depth + 1)

    walk(None, 0)
    return lines


def render(db: Database, scope: records.Scope) -> str:
    """The Markdown text of everything in ``scope``."""
    by_project, hidden = _collect(db, scope)
    lines = ["# ccmemory export", ""]
    if scope.since:
        lines += [f"Changes since {scope.since}.", ""]
    for path in sorted(by_project):
        part = by_project[path]
        if path == _USER_WIDE:
            lines += ["# Memory files shared by every project", "", *_memory_files(part["memory_file"])]
            continue
        name = part["project"][0]["name"] if part["project"] else path
        lines += [f"# {name}", "", f"Project `{path}`.", ""]
        if part["session"]:
            lines += ["## Sessions", ""]
            for session in part["session"]:
                lines.append(f"- **{clock.minute(session['started_at'])}** `{session['id'][:8]}`")
                if session["summary"]:
                    lines.append(_quote(session["summary"]))
            lines.append("")
        if part["memory"]:
            lines += ["## Memories", "", *_memories(part["memory"])]
        if part["document"]:
            lines += ["## Documents", ""]
            for document in part["document"]:
                source = document["source_path"] or document["source_url"] or "pasted text"
                lines.append(f"- **{document['title']}** ({source}), {len(document['chunks'])} chunks, "
                             f"updated {clock.minute(document['updated_at'])}")
            lines.append("")
        if part["docmem_node"]:
            lines += ["## docmem trees", "", *_tree(part["docmem_node"]), ""]
        if part["memory_file"]:
            lines += ["## Memory files", "", *_memory_files(part["memory_file"])]
    for name, count in sorted(hidden.items()):
        lines.append(f"({count} {name} records are in the JSON Lines export only.)")
    return "\n".join(lines).rstrip() + "\n"
