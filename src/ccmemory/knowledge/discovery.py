"""Discovery: a deep analysis turned into ``discovery`` memories.

One run at a time per project (``.claude/memory/discover.lock``, whose status
a second run reports). Each finding has a stable key (``structure``,
``exports:src/index.ts``...): a later run updates the memory with that key in
place (keeping its references, which drive promotion) instead of adding a
duplicate. An interrupted run saves what it found so far with
``complete: false``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import memories
from ..analysis import deep as deep_analysis
from ..analysis import structure as structure_analysis
from ..db import Database
from ..vocabulary import DISCOVERY_SOURCE
from .. import locks
from .settings import ProjectSettings

MAX_EXPORT_FINDINGS = 25


class AlreadyRunning(Exception):
    """Another discovery holds the project's lock."""

    def __init__(self, holder: dict[str, Any]) -> None:
        status = holder.get("status") or "starting"
        super().__init__(f"Discovery already in progress (pid {holder.get('pid')}, started {holder.get('started')}, "
                         f"status: {status})")
        self.holder = holder


@dataclass
class Finding:
    key: str
    kind: str
    content: str


@dataclass
class Discovery:
    findings: list[Finding] = field(default_factory=list)
    analysis: dict[str, Any] = field(default_factory=dict)
    complete: bool = True
    saved: int = 0
    updated: int = 0
    problems: list[str] = field(default_factory=list)

    def kinds(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for finding in self.findings:
            counts[finding.kind] = counts.get(finding.kind, 0) + 1
        return counts


def findings_of(result: dict[str, Any]) -> list[Finding]:
    """What an analysis says, as self-contained statements (one memory each)."""
    project = result["project"]
    found = [Finding("structure", "structure",
                     f"Structure of {project}: {result['directories']:,} directories, {result['files']:,} files, "
                     f"{'~' if result['lines_estimated'] else ''}{result['lines']:,} lines. "
                     + " ".join(f"{label}: {', '.join(result[key])}." for label, key in (
                         ("Source directories", "source_dirs"), ("Test directories", "test_dirs"),
                         ("Documentation", "doc_dirs"), ("Config files", "config_files")) if result[key]))]
    found.append(Finding("languages", "languages", f"Languages of {project} (by file count): "
                                                     f"{result['languages_text']}."))
    if result["entry_points"]:
        found.append(Finding("entry-points", "entry points",
                             f"Entry points of {project}: {', '.join(result['entry_points'])}."))
    folders = [f"{entry['path']} ({entry['files']} files)" for entry in result.get("tree") or [] if "files" in entry]
    if folders:
        found.append(Finding("tree", "structure", f"Folder tree of {project}: " + ", ".join(folders) + "."))
    if len(result.get("by_directory") or {}) > 1:
        found.append(Finding("directories", "structure", f"Main language per top-level directory of {project}: "
                             + ", ".join(f"{d}/ {lang}" for d, lang in result["by_directory"].items()) + "."))
    details = result.get("deep") or {}
    conventions = []
    if details.get("naming", {}).get("style"):
        conventions.append(f"identifiers are mostly {details['naming']['style']}")
    if details.get("file_naming"):
        conventions.append(f"file names are mostly {details['file_naming']}")
    if details.get("comment_style"):
        conventions.append("comments use " + ", ".join(details["comment_style"]))
    if conventions:
        found.append(Finding("conventions", "conventions", f"Coding conventions of {project}: "
                                                           + "; ".join(conventions) + "."))
    if details.get("frameworks"):
        found.append(Finding("frameworks", "frameworks", f"{project} uses: {', '.join(details['frameworks'])}."))
    for path, exports in list((details.get("exports") or {}).items())[:MAX_EXPORT_FINDINGS]:
        described = [item.get("signature") or f"{item.get('kind', 'export')} {item['name']}" for item in exports[:20]]
        found.append(Finding(f"exports:{path}", "exports", f"Public API of {path}: " + "; ".join(described) + "."))
    return found


def _existing(db: Database, project_id: int) -> dict[str, memories.Memory]:
    rows = [m for m in memories.list_memories(db, project_id=project_id, category="discovery", limit=10_000)
            if m.source == DISCOVERY_SOURCE]
    found: dict[str, memories.Memory] = {}
    for memory in rows:
        info = memory.metadata.get("discovery")  # type-checked: a pulled row may hold anything there
        if isinstance(info, dict) and isinstance(info.get("key"), str):
            found[info["key"]] = memory
    return found


def save(db: Database, project_id: int, run: Discovery) -> None:
    """Store each finding, updating the memory of the same key from an earlier run."""
    existing = _existing(db, project_id)
    for finding in run.findings:
        metadata = {"discovery": {"key": finding.key, "kind": finding.kind, "complete": run.complete}}
        before = existing.get(finding.key)
        if before is not None:
            merged = {**before.metadata, **metadata}
            if memories.rewrite(db, before.id, finding.content, project_id=project_id, metadata=merged):
                run.updated += 1
            continue
        memories.add(db, project_id=project_id, content=finding.content, sector="semantic", tier="project",
                     category="discovery", tags=[finding.kind], source=DISCOVERY_SOURCE, metadata=metadata)
        run.saved += 1


def discover(db: Database | None, project_id: int | None, settings: ProjectSettings, *, save_findings: bool = True,
             on_status: Callable[[str], None] | None = None) -> Discovery:
    """Deep analysis, then (unless ``save_findings`` is False) the findings stored as memories.

    Raises :class:`AlreadyRunning` when another discovery of the project is under
    way. On KeyboardInterrupt the partial findings are saved with ``complete:
    false`` before the interrupt goes on.
    """
    run = Discovery()
    path = os.path.join(settings.writable_memory_dir(), "discover.lock")

    def status(text: str) -> None:
        locks.update(path, status=text)
        if on_status:
            on_status(text)

    try:
        with locks.held(path, status="starting"):
            interrupted = False
            status("analysing structure")
            found = structure_analysis.analyze(settings.root, settings.ignored_dirs,
                                               deadline=deep_analysis.DEEP_DEADLINE_SECONDS / 5)
            result: dict[str, Any] = {"mode": "deep", **found.to_dict(),
                                      "languages_text": structure_analysis.describe_languages(found)}
            status("analysing source files")
            try:
                details = deep_analysis.analyze(found, problems=run.problems)
            except KeyboardInterrupt:  # before the first file: nothing deep to keep
                interrupted = True
                details = deep_analysis.Deep(complete=False, interrupted=True)
            result["deep"] = details.to_dict()
            run.problems.extend(found.problems)  # manifests skipped (not a regular file inside the project, too large)
            interrupted = interrupted or details.interrupted
            run.complete = found.complete and details.complete and not interrupted
            result["complete"] = run.complete
            run.analysis = result
            run.findings = findings_of(result)
            if save_findings and db is not None and project_id is not None:
                status("saving")
                save(db, project_id, run)
            if interrupted:
                raise KeyboardInterrupt
    except locks.Busy as busy:
        raise AlreadyRunning(busy.holder) from None
    return run

