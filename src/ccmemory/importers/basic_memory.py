"""A basic-memory folder of notes: each observation a memory, each note's prose and relations one more.

basic-memory (basicmachines-co/basic-memory) keeps plain Markdown files: YAML front matter
(``title``, ``type``, ``tags`` as ``[a, b]``, a list or a comma-separated string, ``permalink``),
then free text in which a list item ``- [category] content #tag (context)`` is an observation and
``- relation_type [[Target]] (context)`` a relation (``## Observations`` and ``## Relations``
headings are customary, not required; inside a fenced code block neither counts; ``[ ]``, ``[x]``
and ``[-]`` are tasks, not categories; a ``[text](url)`` link is not one either).

Mapping: every observation becomes a memory, "<title>: <content> (<context>)", tagged with its
category and ``#tags`` and the note's tags; a category that is one of ccmemory's keeps it, the
others are ``general``. The note's other text and its relations (``relates_to: Target``) become one
memory of the note, unless nothing but the title is left. Times are the file's. An item is keyed by
the note's permalink (or path) and a hash of its text, so importing the folder again adds nothing,
and an edited observation comes in as a new memory.
"""

from __future__ import annotations

import hashlib
import re

from ..db import Database
from .. import markdown_blocks, memories
from .base import Report, Writer, file_time, read_text, source_folder, walk

SOURCE = "basic-memory"
MAX_FILE_BYTES = 1024 * 1024
_ITEM = re.compile(r"^\s{0,3}[-*+]\s+(.*\S)\s*$")
_OBSERVATION = re.compile(r"^\[([^\[\]()]+)\]\s+(.+)$")
_TASK = re.compile(r"^\[[ xX\-/>?]\]")
_LINK = re.compile(r"^\[.*?\]\(.*?\)$")
_RELATION = re.compile(r"^(?:([\w-]+)|\"([^\"]+)\"|'([^']+)')\s+\[\[([^\[\]]+)\]\]\s*(\(([^()]*)\))?$")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_HASHTAG = re.compile(r"(?:^|\s)#([\w/-]+)")


class Note:
    """One note as basic-memory reads it: title, tags, observations, relations and the rest of its text."""

    def __init__(self, rel: str, text: str) -> None:
        front, body = markdown_blocks.split_front_matter(text)
        self.title = front.get("title") or rel.rsplit("/", 1)[-1][:-len(".md")]
        self.permalink = front.get("permalink") or rel
        self.tags = _tags(front.get("tags", ""), text)
        self.observations: list[tuple[str, str, str | None]] = []
        self.relations: list[tuple[str, str, str | None]] = []
        prose: list[str] = []
        fence: str | None = None
        for line in body.splitlines():
            marker = _FENCE.match(line)
            if marker:
                char = marker.group(1)[0]
                fence = char if fence is None else None if char == fence else fence
            elif fence is None and self._take(line):
                continue
            prose.append(line)
        rest = "\n".join(prose).strip()
        self.prose = re.sub(r"^#{1,6}\s*(Observations|Relations)\s*$", "", rest, flags=re.M | re.I).strip()

    def _take(self, line: str) -> bool:
        """Record ``line`` when it is an observation or a relation; False for any other line."""
        item = _ITEM.match(line)
        if not item:
            return False
        content = item.group(1)
        relation = _RELATION.match(content)
        if relation:
            kind = relation.group(1) or relation.group(2) or relation.group(3)
            self.relations.append((kind, relation.group(4).strip(), relation.group(6)))
            return True
        if _TASK.match(content) or _LINK.match(content) or content.startswith("[["):
            return False
        observation = _OBSERVATION.match(content)
        if not observation:
            return False
        text, context = observation.group(2).strip(), None
        if text.endswith(")") and "(" in text:
            start = text.rfind("(")
            text, context = text[:start].strip(), text[start + 1:-1].strip() or None
        if text:
            self.observations.append((observation.group(1).strip(), text, context))
        return True


def _tags(value: str, text: str) -> list[str]:
    """The front matter's tags: ``[a, b]``, ``a, b``, or a YAML list under ``tags:``."""
    if value:
        return [tag.strip().strip("'\"") for tag in value.strip("[]").split(",") if tag.strip()]
    match = re.search(r"^tags:\s*\n((?:[ \t]+-[^\n]*\n)+)", text.split("\n---", 1)[0] + "\n", re.M)
    if not match:
        return []
    return [line.strip()[1:].strip().strip("'\"") for line in match.group(1).splitlines() if line.strip()]


def _digest(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).encode("utf-8", "surrogatepass")).hexdigest()[:20]


def import_basic_memory(db: Database, report: Report, folder: str, *, into: str) -> None:
    """Import every note (``*.md``) of the basic-memory folder ``folder`` into the project of ``into``."""
    writer = Writer(db, SOURCE, report)
    root = source_folder(folder)
    project = writer.project(into)
    for rel, path in walk(root, report, suffixes=(".md",)):
        text = read_text(path, rel, root, MAX_FILE_BYTES, report)
        if text is None:
            continue
        note = Note(rel, text)
        when = file_time(path)
        base = {"note": note.permalink[:300], "title": note.title[:300]}
        with writer.batch():
            for category, content, context in note.observations:
                line = f"{note.title}: {content}" + (f" ({context})" if context else "")
                tags = [category, *_HASHTAG.findall(content), *note.tags]
                writer.add(project, f"{note.permalink}#observation:{_digest(f'[{category}] {content}')}", line,
                           when=when, category=memories.normalize_category(category), tags=tags,
                           metadata={**base, "category": category[:60]}, kind="observation")
            relations = [f"- {kind}: {target}" + (f" ({context})" if context else "")
                         for kind, target, context in note.relations]
            body = "\n\n".join(part for part in (note.prose, "Relations:\n" + "\n".join(relations)
                                                 if relations else "") if part)
            if body and body.strip() != f"# {note.title}":
                content = body if body.lstrip().startswith("#") else f"{note.title}\n\n{body}"
                writer.add(project, f"{note.permalink}#note:{_digest(content)}", content, when=when,
                           tags=note.tags, metadata={**base, "relations": [list(r[:2]) for r in note.relations[:50]]},
                           kind="note")
