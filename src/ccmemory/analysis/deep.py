"""The deep analysis (``ccmemory analyze --deep``): exports, conventions, frameworks, within a deadline.

Source files (of a source language or an unknown extension, see
:func:`.languages.is_code`) are sampled when there are many (entry points
first, then an even spread over the tree, at most :data:`MAX_FILES`), each read
once and passed to its language's analyzer, so in a monorepo each directory
gets the analyzer of its language (``directory_analyzers``). Conventions come
from the same sample: identifier style (snake_case, camelCase, PascalCase),
file naming, and comment style. Every file is read through
:mod:`ccmemory.safe_files` (a regular file inside the project, at most
:data:`MAX_FILE_BYTES`), manifests through :mod:`.manifests`.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .. import safe_files
from ..errors import ValidationError
from . import analyzers
from .manifests import Manifests
from .structure import Structure

MAX_FILES = 400
MAX_FILE_BYTES = 256 * 1024
DEEP_DEADLINE_SECONDS = 50.0
_SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
_CAMEL = re.compile(r"\b[a-z][a-z0-9]*(?:[A-Z][a-z0-9]+)+\b")
_PASCAL = re.compile(r"\b(?:[A-Z][a-z0-9]+){2,}\b")
_COMMENTS = (("//", re.compile(r"^\s*//")), ("#", re.compile(r"^\s*#(?![!])(?!include|define|if|endif|pragma|import)")),
             ("--", re.compile(r"^\s*--(?!-)")), ("/* */", re.compile(r"^\s*/\*")), (";", re.compile(r"^\s*;")))
_C_LIKE = ("//", "/* */")
#: The comment markers worth counting per language (a "#" in C is the preprocessor, "--" in Python a CLI flag).
COMMENT_MARKERS = {
    **{lang: _C_LIKE for lang in ("TypeScript", "JavaScript", "Go", "Rust", "Java", "Kotlin", "Swift", "C", "C++",
                                  "C#", "Scala", "F#")},
    **{lang: ("#",) for lang in ("Python", "Ruby", "Shell", "R", "Julia", "Elixir", "PowerShell", "Perl")},
    "PHP": ("//", "/* */", "#"), "Lua": ("--",), "Haskell": ("--",), "SQL": ("--",), "Clojure": (";",),
}
FRAMEWORKS = (
    "react", "next", "vue", "nuxt", "svelte", "angular", "express", "fastify", "nestjs", "koa", "jest", "vitest",
    "mocha", "webpack", "vite", "typescript", "django", "flask", "fastapi", "pytest", "click", "sqlalchemy",
    "pydantic", "numpy", "pandas", "torch", "rails", "spring", "gin", "tokio", "actix", "axum", "serde", "phoenix",
)


@dataclass
class Deep:
    exports: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    analyzers: dict[str, str] = field(default_factory=dict)  # language -> analyzer used
    skipped_analyzers: list[str] = field(default_factory=list)  # the project's own, not allowed by the user
    directory_analyzers: dict[str, list[str]] = field(default_factory=dict)  # top-level dir ("." root) -> analyzers
    naming: dict[str, Any] = field(default_factory=dict)
    file_naming: str = ""
    comment_style: dict[str, int] = field(default_factory=dict)
    frameworks: list[str] = field(default_factory=list)
    sampled: int = 0
    source_files: int = 0
    complete: bool = True
    interrupted: bool = False
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _sample(structure: Structure) -> list[str]:
    sources = [info.path for info in structure.files if info.code]
    chosen = [path for path in structure.entry_points if path in set(sources)]
    rest = [path for path in sources if path not in chosen]
    room = MAX_FILES - len(chosen)
    if len(rest) > room > 0:
        step = len(rest) / room
        rest = [rest[int(index * step)] for index in range(room)]
    return chosen + rest[:max(room, 0)]


def _file_naming(paths: list[str]) -> str:
    styles: Counter[str] = Counter()
    for path in paths:
        stem = os.path.splitext(os.path.basename(path))[0]
        if "-" in stem:
            styles["kebab-case"] += 1
        elif "_" in stem.strip("_"):
            styles["snake_case"] += 1
        elif re.search(r"[a-z][A-Z]", stem):
            styles["PascalCase" if stem[:1].isupper() else "camelCase"] += 1
    return styles.most_common(1)[0][0] if styles else "lowercase"


def _frameworks(manifests: Manifests) -> list[str]:
    names: set[str] = set()
    package = manifests.package_json()
    for key in ("dependencies", "devDependencies", "peerDependencies"):
        listed = package.get(key)
        names.update(str(name).split("/")[-1].lower() for name in (listed if isinstance(listed, dict) else ()))
    for manifest in ("pyproject.toml", "requirements.txt", "Cargo.toml", "go.mod", "Gemfile", "mix.exs", "pom.xml"):
        names.update(re.findall(r"[A-Za-z][\w.-]*", manifests.text(manifest).lower()))
    return [name for name in FRAMEWORKS if name in names]


def analyze(structure: Structure, *, deadline: float = DEEP_DEADLINE_SECONDS,
            problems: list[str] | None = None) -> Deep:
    """Exports and conventions of the sampled source files."""
    started = time.monotonic()
    problems = problems if problems is not None else []
    result = Deep(frameworks=_frameworks(structure.manifests or Manifests(structure.root)))
    custom = analyzers.load_custom(structure.root, problems, result.skipped_analyzers)
    sample = _sample(structure)
    result.source_files = sum(1 for info in structure.files if info.code)
    languages = {info.path: info.language for info in structure.files}
    naming: Counter[str] = Counter()
    comments: Counter[str] = Counter()
    try:
        for path in sample:
            if time.monotonic() - started > deadline:
                result.complete = False
                result.notes.append(f"Stopped after {deadline:.0f}s with {result.sampled} files analysed")
                break
            try:
                data = safe_files.read_head(os.path.join(structure.root, *path.split("/")), MAX_FILE_BYTES,
                                            root=structure.root)
            except (OSError, ValidationError):
                continue
            if b"\0" in data:  # binary after all: the quick pass checks the first 4 KB, and none past its budget
                continue
            text = data.decode("utf-8", "replace")
            result.sampled += 1
            language = languages[path]
            name, function = analyzers.pick(language, custom)
            result.analyzers.setdefault(language, name)
            used = result.directory_analyzers.setdefault(path.split("/", 1)[0] if "/" in path else ".", [])
            if name not in used:
                used.append(name)
            try:
                found = function(path, text) or {}
            except Exception as exc:  # a custom analyzer must not stop the analysis
                problems.append(f"Analyzer {name} failed on {path} ({exc}); used the heuristics")
                found = analyzers.heuristic(path, text)
            exports = [item if isinstance(item, dict) else {"name": str(item), "kind": "export", "signature": ""}
                       for item in found.get("exports", [])]
            if exports:
                result.exports[path] = exports[:50]
            naming["snake_case"] += len(_SNAKE.findall(text))
            naming["camelCase"] += len(_CAMEL.findall(text))
            naming["PascalCase"] += len(_PASCAL.findall(text))
            markers = COMMENT_MARKERS.get(language)
            for line in text.splitlines()[:2000]:
                for style, pattern in _COMMENTS:
                    if (markers is None or style in markers) and pattern.match(line):
                        comments[style] += 1
                        break
    except KeyboardInterrupt:  # keep what was analysed; the caller saves it as incomplete
        result.complete = False
        result.interrupted = True
        result.notes.append(f"Interrupted after {result.sampled} files")
    if result.sampled < result.source_files:
        result.notes.append(f"Sampled {result.sampled} of {result.source_files} source files")
    identifiers = naming["snake_case"] + naming["camelCase"]
    result.naming = {
        "style": ("snake_case" if naming["snake_case"] >= naming["camelCase"] else "camelCase") if identifiers else "",
        "counts": dict(naming),
    }
    result.file_naming = _file_naming(sample)
    result.comment_style = dict(comments.most_common())
    return result
