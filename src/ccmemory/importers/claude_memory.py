"""Claude Code's auto memory (``MEMORY.md`` and its topic files) as curated memories of their project.

Where Claude Code keeps it: ``<config dir>/projects/<encoded project path>/memory/`` (the config
dir is ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``): ``MEMORY.md``, an index Claude keeps short (it
loads the first 200 lines every session), and topic files beside it, either notes by subject
(``debugging.md``) or, in newer versions, one fact per file with front matter (``name``,
``description``, and ``type`` at the top or under ``metadata``). The folder is the same one the
project's session transcripts sit in; its name (every character but a letter or digit turned into
``-``) cannot be decoded, so the project is the ``cwd`` those transcripts name, or the one given; a folder
from anywhere else (a copy someone sent) must be given its project: its transcripts are theirs.

Mapping: a topic file is one memory (its description first, then its text; a file over the
memory size limit becomes one memory per section); ``MEMORY.md`` gives one memory per section,
its lines that only point at a topic file left out (the topic file itself is imported). Each
memory is keyed by its file and a hash of its text: an unchanged entry is never imported twice,
an edited one comes in as a new memory.
"""

from __future__ import annotations

import hashlib
import os
import re

from ..db import Database
from .. import markdown_blocks, safe_files, transcript
from ..errors import ValidationError
from .base import Report, Writer, file_time, read_text, source_folder, walk

SOURCE = "claude-memory"
INDEX = "MEMORY.md"
MEMORY_DIR = "memory"
MAX_FILE_BYTES = 512 * 1024
#: Project folders looked at under Claude Code's ``projects`` folder.
MAX_PROJECTS = 10_000
#: Transcripts read to find a project's directory (the first ``cwd`` found is used), and bytes of each.
MAX_TRANSCRIPTS_READ = 20
MAX_TRANSCRIPT_BYTES_READ = 4 * 1024 * 1024
_POINTER = re.compile(r"\]\(\s*<?([^)>\s]+\.md)>?\s*\)")
_NESTED_TYPE = re.compile(r"^\s+type\s*:\s*['\"]?([\w-]+)", re.M)


def import_claude_memory(db: Database, report: Report, *, folder: str | None = None, into: str | None = None,
                         config_dir: str | None = None) -> None:
    """Import one auto-memory folder (``folder``, or the one of project ``into``), else every project's.

    ``into`` is the project the memories go to; without it each folder's project is the ``cwd``
    named by the session transcripts beside it (a folder whose project cannot be told is reported).
    """
    writer = Writer(db, SOURCE, report)
    base = transcript.projects_dir(config_dir)
    if folder is not None:
        memory_dir = source_folder(folder)
        if os.path.basename(memory_dir) != MEMORY_DIR and os.path.isdir(os.path.join(memory_dir, MEMORY_DIR)):
            memory_dir = os.path.join(memory_dir, MEMORY_DIR)
        parent = os.path.dirname(memory_dir)
        if into is None and not safe_files.is_inside(parent, os.path.realpath(base)):
            raise ValidationError(f"{folder} is not in Claude Code's projects folder ({base}), so the transcripts "
                                  "beside it (which anyone who made the folder wrote) do not choose its project. "
                                  "Say where it goes with --into-project DIR")
        project = into or project_of(parent, parent)
        if project is None:
            raise ValidationError(f"Cannot tell which project {folder} belongs to: no session transcript beside it "
                                  "names its directory. Say where it goes with --into-project DIR")
        _import_folder(writer, memory_dir, project)
    elif into is not None:
        found = folder_of(into, base)
        if found is None:
            raise ValidationError(f"Claude Code keeps no auto memory for {os.path.realpath(into)} under {base}; "
                                  "name the memory folder to import (…/projects/<project>/memory)")
        _import_folder(writer, found, into)
    else:
        for name, memory_dir in memory_folders(base, report):
            project = project_of(os.path.dirname(memory_dir), os.path.realpath(base))
            if project is None:
                report.skip(f"projects/{name}/{MEMORY_DIR}", "no session transcript beside it names the project's "
                            "directory; import it with: ccmemory import-from claude-memory FOLDER --into-project DIR")
                continue
            _import_folder(writer, memory_dir, project)


def memory_folders(base: str, report: Report) -> list[tuple[str, str]]:
    """``(project folder name, real path of its memory folder)`` for each project under ``base`` that has one;
    a memory folder that resolves outside ``base`` is reported, not read."""
    real_base = os.path.realpath(base)
    try:
        names = sorted(os.listdir(real_base))[:MAX_PROJECTS]
    except OSError:
        return []
    found = []
    for name in names:
        memory_dir = os.path.join(real_base, name, MEMORY_DIR)
        if not os.path.isdir(memory_dir):
            continue
        if not safe_files.is_inside(memory_dir, real_base):
            report.problem(f"projects/{name}/{MEMORY_DIR}", "it is a link that leads outside Claude Code's folder")
            continue
        found.append((name, os.path.realpath(memory_dir)))
    return found


def folder_of(project_dir: str, base: str) -> str | None:
    """The auto-memory folder Claude Code keeps for a project directory (its git top-level, else itself)."""
    from .. import projects

    for candidate in (projects.project_root(project_dir), os.path.realpath(project_dir)):
        memory_dir = os.path.join(base, transcript.folder_name(candidate), MEMORY_DIR)
        if os.path.isdir(memory_dir):
            return os.path.realpath(memory_dir)
    return None


def project_of(folder: str, root: str) -> str | None:
    """The working directory the session transcripts in ``folder`` name (read inside ``root``), or None."""
    try:
        names = sorted(name for name in os.listdir(folder) if name.endswith(".jsonl"))
    except OSError:
        return None
    for name in names[:MAX_TRANSCRIPTS_READ]:
        try:
            for entry in transcript.entries(os.path.join(folder, name), b'"cwd"', root=root,
                                            max_bytes=MAX_TRANSCRIPT_BYTES_READ):
                cwd = entry.get("cwd")
                if isinstance(cwd, str) and os.path.isabs(cwd) and "\0" not in cwd:
                    return cwd
        except (OSError, ValidationError):
            continue
    return None


def _import_folder(writer: Writer, memory_dir: str, project_dir: str) -> None:
    report = writer.report
    project = writer.project(project_dir)
    files = walk(memory_dir, report, suffixes=(".md",))
    topics = {rel for rel, _ in files if rel != INDEX}
    for rel, path in files:
        text = read_text(path, rel, memory_dir, MAX_FILE_BYTES, report)
        if text is None:
            continue
        found = index_entries(text, topics) if rel == INDEX else topic_entries(text)
        when = file_time(path)
        with writer.batch():
            for content, tags in found:
                digest = hashlib.sha256(" ".join(content.split()).encode("utf-8", "surrogatepass")).hexdigest()[:20]
                writer.add(project, f"{rel}#{digest}", content, when=when, tags=["auto-memory", *tags],
                           metadata={"file": rel})


def topic_entries(text: str) -> list[tuple[str, list[str]]]:
    """A topic file's memories: one, its description first, or one per section when it is too long for one."""
    from .. import memories

    front, body = markdown_blocks.split_front_matter(text)
    kind = front.get("type") or _nested_type(text)
    tags = [kind] if kind else []
    lead = front.get("description") or front.get("name") or ""
    body = body.strip()
    if len(lead) + len(body) + 2 <= memories.MAX_CONTENT_CHARS:
        return [("\n\n".join(part for part in (lead, body) if part), tags)] if lead or body else []
    return [(content, tags) for content in _sections(body, lead)]


def _nested_type(text: str) -> str | None:
    """``type`` under ``metadata:`` in a front matter (the top-level fields are read by markdown_blocks)."""
    if not text.startswith("---"):
        return None
    end = text.find("\n---", 3)
    match = _NESTED_TYPE.search(text[:end if end > 0 else 0])
    return match.group(1) if match else None


def _sections(body: str, lead: str = "") -> list[str]:
    """The text of each section of a Markdown body, its heading path first (and ``lead`` before the first)."""
    parts = []
    for section in markdown_blocks.parse(body).sections:
        head = section.heading or lead
        text = "\n\n".join(block.text for block in section.blocks)
        parts.append(f"{head}\n\n{text}" if head else text)
    return [part for part in parts if part.strip()]


def index_entries(text: str, topics: set[str]) -> list[tuple[str, list[str]]]:
    """``MEMORY.md``'s memories: one per section, without the lines that only point at a topic file."""
    kept = [line for line in text.splitlines() if not _points_at_topic(line, topics)]
    return [(content, ["index"]) for content in _sections("\n".join(kept))]


def _points_at_topic(line: str, topics: set[str]) -> bool:
    """A list line whose link leads to one of the topic files imported beside it."""
    if not line.lstrip().startswith(("-", "*", "+")):
        return False
    return any(target.lstrip("./") in topics for target in _POINTER.findall(line))
