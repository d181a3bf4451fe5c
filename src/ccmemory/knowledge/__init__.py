"""The knowledge tier: a project's curated markdown (``.claude/knowledge/**/*.md``) as searchable memories.

``ccmemory index`` turns each H3 section of those files into a memory with
source :data:`~ccmemory.vocabulary.KNOWLEDGE_SOURCE`, whose metadata names the file and the section's anchor,
so the same hybrid search and MCP tools find curated knowledge beside what the
hooks captured, and mark each such hit ``file.md#anchor``. The markdown stays
the source of truth: entries are derived from it and rebuilt from it.

This package's ``__init__`` stays light (search and the MCP formatting import it).
"""

from __future__ import annotations

from typing import Any

from ..vocabulary import KNOWLEDGE_SOURCE


def reference(memory: Any) -> str | None:
    """``architecture/auth.md#jwt-flow`` for a knowledge entry, None for any other memory."""
    if getattr(memory, "source", None) != KNOWLEDGE_SOURCE:
        return None
    metadata = getattr(memory, "metadata", None)
    info = metadata.get("knowledge") if isinstance(metadata, dict) else None  # a teammate's row may hold anything
    file = info.get("file") if isinstance(info, dict) else None
    if not isinstance(file, str) or not file:
        return None
    anchor = info.get("anchor") if isinstance(info, dict) else None
    return f"{file}#{anchor}" if isinstance(anchor, str) and anchor else file
