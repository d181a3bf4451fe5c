"""The quick analysis of any repository (``ccmemory analyze --quick``): files, languages, layout.

One walk of the tree, skipping hidden folders and ``ignored_dirs`` (vendored
code: node_modules, vendor, ...). Languages are counted by file, by extension
or, for a file without one, by its shebang; binary files are left out. A text
file is "code" when its language is a source language or its extension is
unknown (not data or prose), so a project in any language has source
directories, entry points and, in the deep pass, conventions.
Lines are counted for text files while the byte budget lasts, then estimated.
A deadline keeps the walk within the quick mode's few seconds on huge trees.

The tree is the project's, so untrusted: folder links are not followed, a file
link is used only when its real path is inside the project, and every read goes
through :mod:`ccmemory.safe_files` (regular files only, bounded); manifests
through :mod:`.manifests`.
"""

from __future__ import annotations

import os
import stat
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .. import safe_files
from ..errors import ValidationError
from .languages import OTHER, is_code, language_of
from .manifests import Manifests

SOURCE_DIR_NAMES = ("src", "lib", "app", "pkg", "cmd", "internal", "source", "packages", "apps", "crates", "modules")
TEST_DIR_NAMES = ("test", "tests", "__tests__", "spec", "specs", "testing", "e2e")
DOC_DIR_NAMES = ("docs", "doc", "documentation", "guides", "wiki")
CONFIG_NAMES = (
    "package.json", "tsconfig.json", "pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile",
    "Cargo.toml", "go.mod", "Gemfile", "composer.json", "pom.xml", "build.gradle", "build.gradle.kts",
    "settings.gradle", "Makefile", "CMakeLists.txt", "Dockerfile", "docker-compose.yml", "docker-compose.yaml",
    "tox.ini", "mix.exs", "deno.json", "Project.toml", "stack.yaml", "dune-project", ".editorconfig",
    ".eslintrc", ".eslintrc.js", ".eslintrc.json", ".prettierrc", "vite.config.ts", "vite.config.js",
    "webpack.config.js", "jest.config.js", "babel.config.js", ".gitlab-ci.yml", "Justfile",
)
DOC_FILE_STEMS = ("readme", "changelog", "changes", "history", "contributing", "architecture", "authors", "news")
ENTRY_STEMS = ("main", "index", "app", "cli", "server", "__main__", "lib", "mod")
BINARY_EXTENSIONS = frozenset(
    ".png .jpg .jpeg .gif .bmp .ico .webp .pdf .zip .gz .tgz .bz2 .xz .7z .tar .jar .war .class .so .dll .dylib "
    ".exe .bin .o .a .obj .pyc .pyo .woff .woff2 .ttf .otf .eot .mp3 .mp4 .mov .avi .wav .ogg .webm .sqlite .db "
    ".lock .onnx .pt .npy .parquet".split())
LINE_BUDGET_BYTES = 64 * 1024 * 1024
MAX_LINE_FILE_BYTES = 1024 * 1024
QUICK_DEADLINE_SECONDS = 4.0
#: The file tree shows directories down to this depth, then files, at most TREE_ENTRIES lines in all.
TREE_DEPTH = 3
TREE_ENTRIES = 40


@dataclass
class FileInfo:
    path: str  # relative, '/' separated
    language: str
    size: int
    code: bool = False


@dataclass
class Structure:
    """What the quick analysis found; ``files`` is kept for the deep pass and not serialized."""

    project: str
    root: str
    languages: list[dict[str, Any]] = field(default_factory=list)
    entry_points: list[str] = field(default_factory=list)
    source_dirs: list[str] = field(default_factory=list)
    test_dirs: list[str] = field(default_factory=list)
    doc_dirs: list[str] = field(default_factory=list)
    config_files: list[str] = field(default_factory=list)
    doc_files: list[str] = field(default_factory=list)
    tree: list[dict[str, Any]] = field(default_factory=list)
    tree_omitted: int = 0
    directories: int = 0
    file_count: int = 0
    lines: int = 0
    lines_estimated: bool = False
    binary_files: int = 0
    by_directory: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    complete: bool = True
    files: list[FileInfo] = field(default_factory=list, repr=False)
    manifests: Manifests | None = field(default=None, repr=False)

    @property
    def problems(self) -> list[str]:
        """What could not be used (a manifest that is not a regular file inside the project ...)."""
        return list(self.manifests.problems) if self.manifests else []

    def to_dict(self) -> dict[str, Any]:
        data = {key: value for key, value in self.__dict__.items() if key not in ("files", "manifests")}
        data["files"] = data.pop("file_count")
        return data


def _project_name(root: str, manifests: Manifests) -> str:
    for name in (manifests.package_json().get("name"), manifests.pyproject().get("name")):
        if isinstance(name, str) and name:
            return name
    return os.path.basename(os.path.abspath(root))


def _manifest_entries(root: str, manifests: Manifests) -> list[str]:
    """Entry points the manifests declare (package.json main/bin, pyproject scripts)."""
    found: list[str] = []
    package = manifests.package_json()
    for key in ("main", "module"):
        if isinstance(package.get(key), str):
            found.append(package[key])
    binaries = package.get("bin")
    if isinstance(binaries, str):
        found.append(binaries)
    elif isinstance(binaries, dict):
        found.extend(value for value in binaries.values() if isinstance(value, str))
    scripts = manifests.pyproject().get("scripts")
    for target in scripts.values() if isinstance(scripts, dict) else ():
        module = str(target).split(":", 1)[0].replace(".", "/")
        for candidate in (f"{module}.py", f"src/{module}.py", f"{module}/__init__.py", f"src/{module}/__init__.py"):
            if os.path.isfile(os.path.join(root, candidate)):
                found.append(candidate)
                break
    return [os.path.normpath(path).replace(os.sep, "/") for path in found]


def _read_head(path: str, root: str | None, max_bytes: int = 4096) -> bytes:
    """The first bytes of a file of the walk: ``root`` for a symlink (checked on the opened file), None for a
    plain file, which is then opened without following a link (the walk itself never leaves the project)."""
    try:
        return safe_files.read_head(path, max_bytes, root=root, follow=root is not None)
    except (OSError, ValidationError):
        return b""


def _count_lines(path: str, root: str | None) -> int:
    return _read_head(path, root, MAX_LINE_FILE_BYTES).count(b"\n")


def analyze(root: str, ignored_dirs: tuple[str, ...] = (), *, deadline: float = QUICK_DEADLINE_SECONDS) -> Structure:
    """Walk ``root`` once and describe it."""
    root = os.path.abspath(root)
    started = time.monotonic()
    manifests = Manifests(root)
    result = Structure(project=_project_name(root, manifests), root=root, manifests=manifests)
    ignored = set(ignored_dirs)
    languages: Counter[str] = Counter()
    code_per_top: dict[str, Counter[str]] = {}
    files_per_top: Counter[str] = Counter()
    tree_paths: list[str] = []  # every file walked, binaries too: the tree shows the layout, not only the text
    bytes_read = 0
    counted_bytes = 0
    text_bytes = 0
    too_deep: list[str] = []
    for folder, dirs, names in safe_files.walk(root, too_deep=too_deep):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ignored)
        relative = os.path.relpath(folder, root).replace(os.sep, "/")
        relative = "" if relative == "." else relative
        if relative:
            result.directories += 1
        for name in sorted(names):
            if time.monotonic() - started > deadline:
                result.complete = False
                break
            path = os.path.join(folder, name)
            rel = f"{relative}/{name}" if relative else name
            try:
                info = os.lstat(path)
                bound = root if stat.S_ISLNK(info.st_mode) else None
                if bound:  # a link is used only when it leads to a file inside the project
                    if not safe_files.is_inside(path, root):
                        continue
                    info = os.stat(path)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode):
                continue
            tree_paths.append(rel)
            extension = os.path.splitext(name)[1].lower()
            head = None
            if extension in BINARY_EXTENSIONS:
                result.binary_files += 1
                continue
            if not extension or extension not in (".md", ".json", ".yaml", ".yml", ".toml"):
                head = _read_head(path, bound) if not extension or bytes_read < LINE_BUDGET_BYTES else None
                if head is not None and b"\0" in head:
                    result.binary_files += 1
                    continue
            language = language_of(name, head)
            code = is_code(name, language)
            result.file_count += 1
            languages[language] += 1
            top = rel.split("/", 1)[0] if "/" in rel else ""
            if top:
                files_per_top[top] += 1
                if code:
                    code_per_top.setdefault(top, Counter())[language] += 1
            result.files.append(FileInfo(rel, language, info.st_size, code))
            text_bytes += info.st_size
            if info.st_size <= MAX_LINE_FILE_BYTES and bytes_read + info.st_size <= LINE_BUDGET_BYTES:
                result.lines += _count_lines(path, bound)
                bytes_read += info.st_size
                counted_bytes += info.st_size
        if not result.complete:
            result.notes.append(f"Stopped after {deadline:.0f}s; figures cover the files seen so far")
            break
    if too_deep:
        result.notes.append(f"Folders more than {safe_files.MAX_WALK_DEPTH} levels deep were not read")
    if counted_bytes and counted_bytes < text_bytes:
        result.lines = round(result.lines * text_bytes / counted_bytes)
        result.lines_estimated = True
    total = sum(languages.values())
    result.languages = [{"language": name, "files": count, "percent": round(100 * count / total)}
                        for name, count in sorted(languages.items(), key=lambda item: (-item[1], item[0]))]
    if result.file_count == 0:
        result.notes.append("No analyzable files" if result.binary_files else "No source files found")
    elif not any(info.code for info in result.files):
        result.notes.append("No source files found")
    tops = sorted(files_per_top)
    result.source_dirs = [d for d in tops if d.lower() in SOURCE_DIR_NAMES
                          or _mostly_source(sum(code_per_top.get(d, Counter()).values()), files_per_top[d])]
    result.test_dirs = [d for d in tops if d.lower() in TEST_DIR_NAMES]
    result.source_dirs = [d for d in result.source_dirs if d not in result.test_dirs]
    result.doc_dirs = [d for d in tops if d.lower() in DOC_DIR_NAMES]
    top_files = sorted(os.listdir(root)) if os.path.isdir(root) else []
    result.config_files = [name for name in top_files if name in CONFIG_NAMES or ".config." in name
                           or (name.startswith("requirements") and name.endswith(".txt"))]
    result.doc_files = [name for name in top_files if os.path.splitext(name)[0].lower() in DOC_FILE_STEMS
                        and os.path.isfile(os.path.join(root, name))]
    result.by_directory = {d: counts.most_common(1)[0][0] for d, counts in sorted(code_per_top.items())}
    result.entry_points = _entry_points(root, result)
    result.tree, result.tree_omitted = file_tree(tree_paths)
    return result


def _mostly_source(code: int, total: int) -> bool:
    return code >= 3 and code * 2 > total


def file_tree(paths: list[str], *, depth: int = TREE_DEPTH,
              limit: int = TREE_ENTRIES) -> tuple[list[dict[str, Any]], int]:
    """A compact tree of ``paths``: ``([{"path": "src/", "files": 12}, {"path": "src/main.zig"}, ...], omitted)``.

    Directories (with the number of files under them) come before files and
    shallow entries before deep ones, so a huge tree still shows its whole
    outline; within the ``limit`` the entries are in tree order, each directory
    followed by its contents. Deeper files count in their directory's
    ``files``; ``omitted`` counts the entries within ``depth`` left out.
    """
    counts: Counter[str] = Counter()
    files: list[str] = []
    for path in paths:
        parts = path.split("/")
        for level in range(1, min(len(parts), depth + 1)):
            counts["/".join(parts[:level]) + "/"] += 1
        if len(parts) <= depth:
            files.append(path)
    by_depth = sorted(counts, key=lambda d: (d.count("/"), d)) + sorted(files, key=lambda f: (f.count("/"), f))
    shown = sorted(by_depth[:limit], key=_tree_order)
    entries = [{"path": path, "files": counts[path]} if path.endswith("/") else {"path": path} for path in shown]
    return entries, max(len(by_depth) - limit, 0)


def _tree_order(path: str) -> list[tuple[int, str]]:
    """Sort key putting each directory before its contents, and sub-directories before files."""
    parts = path.rstrip("/").split("/")
    return [(0 if index < len(parts) - 1 or path.endswith("/") else 1, part) for index, part in enumerate(parts)]


def _entry_points(root: str, result: Structure) -> list[str]:
    found = _manifest_entries(root, result.manifests or Manifests(root))
    source_dirs = set(result.source_dirs)
    for info in result.files:
        if not info.code:
            continue
        parts = info.path.split("/")
        stem = os.path.splitext(parts[-1])[0].lower()
        if stem not in ENTRY_STEMS or len(parts) > 4:
            continue
        if stem in ("lib", "mod") and info.language != "Rust":
            continue
        in_place = (len(parts) == 1 or parts[0] in source_dirs
                    or (parts[0] == "cmd" and len(parts) == 3) or (len(parts) == 2 and parts[0] not in
                                                                     result.test_dirs + result.doc_dirs))
        if in_place and info.path not in found:
            found.append(info.path)
    found.sort(key=lambda path: (path.count("/"), path))
    return found[:12]


def describe_languages(structure: Structure, limit: int = 6) -> str:
    """``Python (80%), Markdown (15%), Other (5%)``: the largest languages, the rest (and unknown) as Other."""
    named = [item for item in structure.languages if item["language"] != OTHER]
    shown = named[:limit]
    rest = sum(item["files"] for item in structure.languages if item not in shown)
    parts = [f"{item['language']} ({item['percent']}%)" for item in shown]
    if rest:
        parts.append(f"{OTHER} ({round(100 * rest / structure.file_count)}%)")
    return ", ".join(parts) or "none"
