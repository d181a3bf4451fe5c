"""A directory of Anthropic memory-tool files (the ``/memories`` folder a client-side memory tool keeps)
as ccmemory memory files (:mod:`ccmemory.files`), which Claude then reads through the same tool.

The folder given is ``/memories``: ``notes.md`` in it becomes ``/memories/notes.md`` of the
project; ``user/…`` becomes the user-wide ``/memories/user/…`` (shown to every project) only with
``user_files``. ccmemory keeps Markdown only, so ``progress.xml`` is stored as
``/memories/progress.xml.md`` (the report names each such file). Paths are checked as the tool
checks them (a name the tool refuses is reported, not cleaned up), text is redacted, a file over
the tool's 100 KB is refused, and a scope never grows past the tool's 1,000 files.

Idempotent by path: a file already here with the same text is unchanged; one with other text is
kept as it is, never replaced (it is yours, or Claude's since), and reported.
"""

from __future__ import annotations

from ..db import Database
from ..files import commands as file_commands
from ..files import paths as file_paths
from ..files import store as file_store
from ..redaction import redact
from .base import Report, Writer, read_text, source_folder, walk

#: Read cap of one file: the tool's limit, with room for what redaction removes.
MAX_FILE_BYTES = 2 * file_commands.MAX_FILE_BYTES
KIND = "memory file"


def import_memory_tool(db: Database, report: Report, folder: str, *, into: str, user_files: bool = False) -> None:
    """Import the files of the memory-tool folder ``folder`` as memory files of the project of ``into``."""
    writer = Writer(db, "memory-tool", report)
    root = source_folder(folder)
    project = writer.project(into)
    for rel, path in walk(root, report):
        name = rel if rel.endswith(file_paths.FILE_SUFFIX) else rel + file_paths.FILE_SUFFIX
        try:
            location = file_paths.parse_file(f"{file_paths.ROOT}/{name}")
        except file_paths.MemoryFileError as exc:
            report.skip(rel, str(exc).removeprefix("Error: "))
            continue
        if location.user and not user_files:
            report.skip(rel, f"it would be the user-wide {location.path}, shown to every project; not imported "
                             "(pass --include-user-files to import user-wide files)")
            continue
        text = read_text(path, rel, root, MAX_FILE_BYTES, report)
        if text is None:
            continue
        content = redact(text)
        if content != text:
            report.redacted += 1
        try:
            file_commands.check_size(location, content)
        except file_paths.MemoryFileError as exc:
            report.problem(rel, str(exc).removeprefix("Error: "))
            continue
        scope = None if location.user else project
        with writer.batch():
            _store(writer, scope, location, content, renamed=None if name == rel else rel)


def _store(writer: Writer, scope: int | None, location: file_paths.Location, content: str, *, renamed: str | None
           ) -> None:
    """Add one file unless its path is taken (same text: unchanged; other text: kept, reported) or its scope is full."""
    report, db = writer.report, writer.db
    new_project = scope is not None and scope < 0  # a dry run's stand-in for a project not created yet
    existing = None if new_project else file_store.get(db, scope, location.rel)
    if existing is not None:
        if existing.content == content:
            report.count(report.unchanged, KIND)
        else:
            report.skip(location.path, "already here with other text; that one is kept, this one not imported")
        return
    if not new_project and file_store.count(db, scope) >= file_commands.MAX_FILES_PER_SCOPE:
        report.skip(location.path, f"its scope already holds {file_commands.MAX_FILES_PER_SCOPE:,} files, the most "
                                   "one scope holds")
        return
    if not writer.dry_run:
        file_store.insert(db, scope, location.rel, content)
        file_store.log(db, project_id=scope, session_id=None, source="import", command="import",
                       path=location.path, new_path=None, ok=True,
                       detail=f"added from a memory-tool folder, {len(content.encode())} bytes")
    report.count(report.added, KIND)
    if renamed is not None:
        report.renamed.append({"from": renamed, "to": location.path})
    if scope is None:
        report.user_files.append(location.path)
    else:
        where = writer.project_path(scope)
        report.projects[where] = report.projects.get(where, 0) + 1
