"""``ccmemory index``: the project's knowledge markdown into searchable entries.

Exit codes: 0 success, 1 error (no knowledge directory, storage
or model failure, or another index of the project running: nothing was done),
2 completed with warnings (files skipped or unreadable, entries left without
vectors), 130 interrupted (Ctrl+C; as ``ccmemory discover``).

An index takes the project's index lock (the git hook's too), so two never
write at once; a dry run writes nothing and takes no lock. Ctrl+C keeps every
file indexed so far (each is stored in its own transaction) and releases the
lock; the next run skips those files and indexes the rest, and embeds the
entries an interrupted run left without vectors.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import click

from .. import db as database
from .. import projects
from .. import embedding_worker, locks
from ..knowledge import githook, indexer, settings as project_settings
from ..vocabulary import KNOWLEDGE_SOURCE
from .common import (INTERRUPTED_EXIT, default_project_dir, echo, emit_json, fail, handles_errors, json_option,
                     one_line, project_option)


class _FileProgress:
    """A progress bar over the files, opened once their number is known (nothing when --json)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bar: Any = None

    def start(self, total: int) -> None:
        if self.enabled and total:
            self.bar = click.progressbar(length=total, label="Indexing knowledge", file=sys.stderr)
            self.bar.__enter__()

    def step(self, _outcome: indexer.FileOutcome) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def finish(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


#: Most files, and sections per file, a warning names before "and N more".
_NAMED_FILES = 10
_NAMED_SECTIONS = 5


def _section_of(row: dict[str, Any]) -> tuple[str, str] | None:
    """(file, section title) of a pending knowledge entry's row; None for any other memory."""
    if row.get("source") != KNOWLEDGE_SOURCE:
        return None
    info = json.loads(row.get("metadata") or "{}").get("knowledge") or {}
    return (info["file"], info.get("title") or info.get("anchor") or "") if info.get("file") else None


def _more(names: list[str], shown: int) -> str:
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _unembedded_sections(db: database.Database, project: int) -> str:
    """``architecture/auth.md (Token validation, Refresh); gotchas.md (...)``: the project's entries without vectors."""
    by_file: dict[str, list[str]] = {}
    for row in db.rows("SELECT source, metadata FROM memories WHERE project_id = ? AND source = ? "
                       "AND needs_embedding = 1 AND is_deleted = 0 ORDER BY seq", (project, KNOWLEDGE_SOURCE)):
        found = _section_of(row)
        if found:
            by_file.setdefault(found[0], []).append(found[1])
    files = [f"{file} ({_more(titles, _NAMED_SECTIONS)})" for file, titles in sorted(by_file.items())]
    return "; ".join(files[:_NAMED_FILES]) + (f"; and {len(files) - _NAMED_FILES} more file(s)"
                                               if len(files) > _NAMED_FILES else "")


def embed_new_entries(db: database.Database, project: int, report: indexer.IndexReport,
                      settings: project_settings.ProjectSettings, show_progress: bool, *, wait: bool = True) -> None:
    """Embed the new entries (and anything else pending); a model problem becomes a warning of the report.

    Under the embedder lock (:func:`ccmemory.embedding_worker.embed_in_foreground`): when a server or a
    worker embeds already, this waits for it, or with ``wait=False`` (the git hook) leaves the entries to it.
    A failure names the file and section it hit and the rest
    goes on. A text the model fails on is left out (found by keywords, embedded
    by a later ``ccmemory embed``); a model that cannot load at all leaves every
    entry for later, and the warning names the sections waiting.
    """
    from .. import embedding_worker, embeddings

    if not db.vectors_loaded:
        report.warnings.append(f"Vector search unavailable ({db.vector_error}); entries are found by keywords only")

    failures: list[str] = []

    def failed(_kind: str, row: dict[str, Any], exc: Exception) -> None:
        where = _section_of(row)
        what = f"{where[0]} section {where[1]!r}" if where else f"a pending memory ({row['seq']})"
        failures.append(f"Could not embed {what}: {one_line(exc)}. It is found by keywords; "
                        "run `ccmemory embed` to try again")

    try:
        embedder = embeddings.get_embedder()
        warning = project_settings.model_mismatch(settings, embedder.spec.name)
        if warning:
            report.warnings.append(warning)
        total = embeddings.pending_count(db, embedder.model_id)
        if show_progress and total:
            with click.progressbar(length=total, label="Embedding", file=sys.stderr) as bar:
                report.embedded = embedding_worker.embed_in_foreground(db, embedder, wait=wait, progress=bar.update,
                                                                       on_error=failed)
        else:
            report.embedded = embedding_worker.embed_in_foreground(db, embedder, wait=wait, on_error=failed)
    except Exception as exc:  # the entries are stored; their vectors wait for the next run or `ccmemory embed`
        waiting = _unembedded_sections(db, project)
        report.warnings.append(f"Entries stored without vectors ({exc}); run `ccmemory embed` once it is fixed"
                               + (f". Waiting: {waiting}" if waiting else ""))
    report.warnings.extend(failures[:_NAMED_FILES])
    if len(failures) > _NAMED_FILES:
        report.warnings.append(f"{len(failures) - _NAMED_FILES} more section(s) could not be embedded; "
                               "run `ccmemory embed` to try again")


def _has_unembedded_knowledge(db: database.Database, project: int) -> bool:
    """Whether entries of the project wait for vectors (an interrupted run, a model that failed)."""
    return db.vectors_loaded and db.scalar(
        "SELECT 1 FROM memories WHERE project_id = ? AND source = ? AND needs_embedding = 1 AND is_deleted = 0 "
        "LIMIT 1", (project, KNOWLEDGE_SOURCE)) is not None


def _merged(reports: list[indexer.IndexReport]) -> indexer.IndexReport:
    """One report for the rounds of a run: each file's last action that did something, counts and problems summed."""
    merged = reports[0]
    for later in reports[1:]:
        position = {outcome.path: number for number, outcome in enumerate(merged.outcomes)}
        for outcome in later.outcomes:
            if outcome.path not in position:
                merged.outcomes.append(outcome)
            elif outcome.action != "unchanged":
                merged.outcomes[position[outcome.path]] = outcome
        merged.entries_created += later.entries_created
        merged.entries_removed += later.entries_removed
        merged.warnings = list(dict.fromkeys([*merged.warnings, *later.warnings]))
        merged.errors = list(dict.fromkeys([*merged.errors, *later.errors]))
    return merged


def _busy(busy: locks.Busy) -> None:
    fail(f"Another index of this project is running ({githook.holder_text(busy.holder)}), so nothing was indexed. "
         "Wait for it to finish, then run `ccmemory index` again (a lock whose process has ended is taken over).", 1)


def _files_kept(db: database.Database, project: int) -> int | None:
    """How many of the project's knowledge files are indexed, as the store says; None when it cannot say."""
    try:
        return db.scalar("SELECT COUNT(*) FROM knowledge_files WHERE project_id = ?", (project,))
    except Exception:  # the store could not answer after the interrupt: the message goes without the number
        return None


def _interrupted(db: database.Database, project: int, embedding: bool) -> None:
    """Ctrl+C: say what is kept and how to finish, without a traceback.

    Each file is stored in its own transaction, so what is kept is whole files.
    """
    if embedding:
        echo("\nInterrupted while embedding: every entry is stored and found by keywords; run `ccmemory "
                   "index` again to embed the rest.", err=True)
    else:
        kept = _files_kept(db, project)
        what = "the files indexed so far are" if kept is None else f"{kept} knowledge file(s) are indexed and"
        echo(f"\nInterrupted: {what} kept; run `ccmemory index` again to index the rest "
                   "(kept files are skipped).", err=True)
    sys.exit(INTERRUPTED_EXIT)


def _print_report(report: indexer.IndexReport, rounds: int, dry_run: bool) -> None:
    for outcome in report.outcomes:
        if dry_run and outcome.action == "indexed":
            echo(f"Would index: {outcome.path} ({outcome.entries} entries)")
        elif outcome.note and outcome.action != "failed":
            echo(outcome.note)
    if rounds > 1:
        echo(f"Indexed {rounds} times: the knowledge changed while indexing (a commit's git hook asked again)")
    for warning in report.warnings:
        echo(f"Warning: {warning}", err=True)
    for error in report.errors:
        echo(f"Error: {error}", err=True)
    echo(report.summary() + (" (dry run: nothing written)" if dry_run else ""))


@click.command(name="index")
@click.option("--force", is_flag=True, help="Ignore the content hashes and index every file again.")
@click.option("--dry-run", is_flag=True, help="Show what would be indexed; write nothing.")
@project_option
@json_option
@handles_errors
def index_command(force: bool, dry_run: bool, project_dir: str | None, as_json: bool) -> None:
    """Index .claude/knowledge/**/*.md: one searchable entry per H3 section."""
    started = time.perf_counter()
    root = projects.project_root(project_dir or default_project_dir())
    settings = project_settings.load(root)
    db = database.connect(vectors=not dry_run)
    project = projects.project_id(db, root)
    progress = _FileProgress(enabled=not as_json)
    reports: list[indexer.IndexReport] = []

    def one_round() -> indexer.IndexReport:
        """A pass over the files; only the first is forced (a later one is for what changed meanwhile)."""
        report = indexer.index(db, project, settings, force=force and not reports, dry_run=dry_run,
                               on_start=progress.start, on_file=progress.step)
        progress.finish()
        reports.append(report)
        return report

    embedding = False
    try:
        if dry_run:
            one_round()
        else:
            locks.in_rounds(githook.index_lock(settings), one_round, command="index")
        report = _merged(reports)
        if not dry_run and (report.count("indexed") or _has_unembedded_knowledge(db, project)):
            embedding = True
            embed_new_entries(db, project, report, settings, show_progress=not as_json)
    except locks.Busy as busy:
        _busy(busy)
        return
    except KeyboardInterrupt:
        progress.finish()
        _interrupted(db, project, embedding)
        return
    report.seconds = time.perf_counter() - started
    if as_json:
        emit_json(report.to_dict())
    else:
        _print_report(report, len(reports), dry_run)
    sys.exit(report.exit_code)


@click.command(name="git-hook", hidden=True)
@click.argument("hook", type=click.Choice(["pre-commit"]))
def git_hook(hook: str) -> None:
    """Run by the git hook `ccmemory init` installs; always exits 0 so it never blocks a commit."""
    root = projects.project_root(os.getcwd())
    settings = project_settings.load(root)

    def say(line: str) -> None:
        echo(line, err=True)

    def run_index() -> list[str]:
        started = time.perf_counter()
        db = database.connect(vectors=True)
        try:
            project = projects.project_id(db, root)
            report = indexer.index(db, project, settings, max_new_entries=githook.HOOK_MAX_ENTRIES)
            if report.entries_created > githook.HOOK_EMBED_ENTRIES:
                embedding_worker.start()  # many vectors: the detached worker makes them while the commit goes on
            elif report.count("indexed"):
                embed_new_entries(db, project, report, settings, show_progress=False, wait=False)
            report.seconds = time.perf_counter() - started
        finally:
            db.close()
        say(f"ccmemory: {report.summary()}")
        return [*report.warnings, *report.errors]

    sys.exit(githook.run_pre_commit(settings, run_index, say))


COMMANDS = [index_command, git_hook]
