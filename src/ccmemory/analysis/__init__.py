"""Codebase analysis for any language: ``ccmemory analyze``, ``init`` and ``discover``.

``run(root, deep=False)`` walks the tree once (:mod:`.structure`) and, when
deep, analyses a sample of the source files (:mod:`.deep`). The result is a
plain dict (the ``--json`` output); :func:`render` is the text form.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from .. import safe_files
from ..errors import ValidationError
from ..knowledge.settings import ProjectSettings
from . import deep as deep_analysis
from . import structure as structure_analysis


def run(settings: ProjectSettings, *, deep: bool = False) -> dict[str, Any]:
    """Analyse the project of ``settings`` (its ``ignored_dirs`` are skipped)."""
    problems: list[str] = list(settings.problems)
    found = structure_analysis.analyze(settings.root, settings.ignored_dirs)
    result: dict[str, Any] = {"mode": "deep" if deep else "quick", **found.to_dict()}
    if deep:
        details = deep_analysis.analyze(found, problems=problems)
        result["deep"] = details.to_dict()
        result["complete"] = found.complete and details.complete
        result["notes"] = [*result["notes"], *details.notes]
    result["problems"] = [*problems, *found.problems]
    result["languages_text"] = structure_analysis.describe_languages(found)
    return result


def render(result: dict[str, Any]) -> str:
    """The text of ``ccmemory analyze`` (the summary lines first, then the details)."""
    lines = [
        f"Project: {result['project']}",
        f"Languages: {result['languages_text']}",
        f"Entry points: {', '.join(result['entry_points']) or 'none found'}",
        f"Directories: {result['directories']:,} | Files: {result['files']:,} | "
        f"Lines: {'~' if result['lines_estimated'] else ''}{result['lines']:,}",
    ]
    for label, keys in (("Source", ("source_dirs",)), ("Tests", ("test_dirs",)), ("Docs", ("doc_dirs", "doc_files")),
                        ("Config", ("config_files",))):
        names = [name for key in keys for name in result[key]]
        if names:
            lines.append(f"{label}: {', '.join(names)}")
    if len(result["by_directory"]) > 1:
        lines.append("By directory: " + ", ".join(f"{d}/ {lang}" for d, lang in result["by_directory"].items()))
    details = result.get("deep")
    if details:
        if details["frameworks"]:
            lines.append(f"Frameworks: {', '.join(details['frameworks'])}")
        conventions = [f"identifiers {details['naming']['style']}" if details["naming"].get("style") else "",
                       f"files {details['file_naming']}" if details["file_naming"] else "",
                       "comments " + ", ".join(details["comment_style"]) if details["comment_style"] else ""]
        lines.append("Conventions: " + "; ".join(part for part in conventions if part))
        if details["analyzers"]:
            lines.append("Analyzers: " + ", ".join(f"{lang} {name}" for lang, name in details["analyzers"].items()))
        if len(details["directory_analyzers"]) > 1:
            lines.append("Analyzers by directory: " + "; ".join(
                f"{folder}/ {', '.join(names)}" for folder, names in details["directory_analyzers"].items()))
        if details["exports"]:
            lines.append("Exports:")
            for path, exports in list(details["exports"].items())[:15]:
                listed = ", ".join(item["name"] for item in exports[:8])
                more = f" (+{len(exports) - 8})" if len(exports) > 8 else ""
                lines.append(f"  {path}: {listed}{more}")
    lines.extend(_tree_lines(result))
    for note in result["notes"]:
        lines.append(note)
    return "\n".join(lines)


def _tree_lines(result: dict[str, Any]) -> list[str]:
    """The compact file tree, indented by depth (``src/ (12 files)``, then ``  main.zig``)."""
    if not result["tree"]:
        return []
    lines = ["Tree:"]
    for entry in result["tree"]:
        path = entry["path"]
        depth = path.rstrip("/").count("/")
        name = path.rstrip("/").rsplit("/", 1)[-1]
        label = f"{name}/ ({entry['files']:,} file{'s' if entry['files'] != 1 else ''})" if "files" in entry else name
        lines.append("  " * (depth + 1) + label)
    if result["tree_omitted"]:
        lines.append(f"  ... {result['tree_omitted']:,} more")
    return lines


CACHE_FILE = "meta.json"
MAX_CACHE_BYTES = 1024 * 1024
#: A new entry point, or a change in the file count by more than this share and at least
#: SIGNIFICANT_FILE_COUNT files, is "significant" (the git hook then suggests ``ccmemory discover``).
SIGNIFICANT_FILE_SHARE = 0.2
SIGNIFICANT_FILE_COUNT = 20


def cache_path(settings: ProjectSettings) -> str:
    return os.path.join(settings.memory_dir, CACHE_FILE)


def load_cache(settings: ProjectSettings) -> dict[str, Any]:
    """The structure cache (``.claude/memory/meta.json``); empty when missing, unreadable or not a regular
    file inside the project."""
    try:
        data = json.loads(safe_files.read_regular(cache_path(settings), MAX_CACHE_BYTES, root=settings.root,
                                                  follow=False))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError, RecursionError, ValidationError):
        return {}


def save_cache(settings: ProjectSettings, result: dict[str, Any]) -> str | None:
    """Store a quick analysis as the structure cache; returns a suggestion when the structure changed a lot."""
    previous = load_cache(settings).get("structure") or {}
    keep = ("project", "languages", "entry_points", "source_dirs", "test_dirs", "doc_dirs", "config_files",
            "directories", "files", "lines")
    structure = {key: result[key] for key in keep}
    text = json.dumps({"analyzed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "structure": structure},
                      indent=2)
    safe_files.replace_text(os.path.join(settings.writable_memory_dir(), CACHE_FILE), text, root=settings.root)
    if not previous:
        return None
    new_entries = set(structure["entry_points"]) - set(previous.get("entry_points") or [])
    before = previous.get("files") or 0
    moved = abs(structure["files"] - before)
    if new_entries or (moved > before * SIGNIFICANT_FILE_SHARE and moved >= SIGNIFICANT_FILE_COUNT):
        return "Significant changes detected. Run 'ccmemory discover' for full analysis"
    return None
