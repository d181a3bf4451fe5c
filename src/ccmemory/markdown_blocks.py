"""A Markdown document as sections of blocks, parsed by markdown-it-py (CommonMark).

The parser, not a line regex, decides what is a heading: ATX (``# x``) and setext
(``x`` underlined with ``===`` or ``---``) headings count, a ``#`` line inside a
``````` or ``~~~`` fence or an indented code block does not, and a fence closes only with
its own kind of marker. YAML front matter (``---`` on the first line, up to the
next ``---`` or ``...``) is taken off first; its ``title`` names the document.
Each section keeps the source text of its top-level blocks (paragraphs,
lists, fences, tables, quotes), so chunks show the Markdown as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

CODE_BLOCKS = ("fence", "code_block")
LIST_BLOCKS = ("bullet_list_open", "ordered_list_open")
_FRONT_MATTER_END = ("---", "...")
_YAML_FIELD = re.compile(r"^([A-Za-z_][\w-]*)\s*:\s*(.*?)\s*$")


@dataclass
class Block:
    """One top-level block: its source text and kind (``code``, ``list`` or ``prose``)."""

    text: str
    kind: str


@dataclass
class Section:
    """The blocks under one heading; ``heading`` is the path of titles (``A > B``), empty before the first."""

    heading: str
    blocks: list[Block] = field(default_factory=list)


@dataclass
class ParsedDocument:
    title: str | None
    sections: list[Section]
    front_matter: dict[str, str]


@lru_cache(maxsize=1)
def _parser() -> Any:
    """The block parser: inline markup is parsed only where it is used, in headings (it costs the most)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").disable("inline")


@lru_cache(maxsize=1)
def _inline_parser() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark")


def split_front_matter(text: str) -> tuple[dict[str, str], str]:
    """YAML front matter's top-level ``key: value`` fields and the text after it (lines kept in place)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].strip() in _FRONT_MATTER_END:
            fields = {}
            for line in lines[1:end]:
                match = _YAML_FIELD.match(line)
                if match and match.group(2):
                    fields[match.group(1).lower()] = match.group(2).strip("'\"")
            # Blank lines keep line numbers, so block positions match the source.
            return fields, "\n" * (end + 1) + "\n".join(lines[end + 1:])
    return {}, text


def _inline_text(token: Any, env: dict[str, Any]) -> str:
    """The plain text of an inline token (a heading's), with the document's link references in ``env``."""
    parts = []
    for child in _inline_parser().parseInline(token.content, env)[0].children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return " ".join("".join(parts).split())


def parse(text: str) -> ParsedDocument:
    """Sections and title of a Markdown text."""
    front, body = split_front_matter(text)
    lines = body.splitlines()
    env: dict[str, Any] = {}
    tokens = _parser().parse(body, env)
    sections = [Section("")]
    trail: list[tuple[int, str]] = []
    first_h1: str | None = None
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.level != 0 or token.map is None or token.type == "hr":
            index += 1
            continue
        if token.type == "heading_open":
            level = int(token.tag[1])
            title = _inline_text(tokens[index + 1], env)
            if level == 1 and first_h1 is None:
                first_h1 = title
            trail = [(depth, name) for depth, name in trail if depth < level] + [(level, title)]
            sections.append(Section(" > ".join(name for _, name in trail if name)))
            index += 3
            continue
        start, end = token.map
        source = "\n".join(lines[start:end]).strip("\n")
        kind = "code" if token.type in CODE_BLOCKS else "list" if token.type in LIST_BLOCKS else "prose"
        if source.strip():
            sections[-1].blocks.append(Block(source, kind))
        index += 1
    return ParsedDocument(front.get("title") or first_h1, [s for s in sections if s.blocks], front)
