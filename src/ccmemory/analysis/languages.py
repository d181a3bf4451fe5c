"""Which language a file is in: by extension, then by shebang for files without one."""

from __future__ import annotations

import os
import re

#: The core source extensions, then common non-code files so a breakdown reads like a project.
EXTENSIONS = {
    ".ts": "TypeScript", ".tsx": "TypeScript", ".js": "JavaScript", ".jsx": "JavaScript", ".mjs": "JavaScript",
    ".cjs": "JavaScript", ".py": "Python", ".go": "Go", ".rs": "Rust", ".java": "Java", ".kt": "Kotlin",
    ".swift": "Swift", ".c": "C", ".cpp": "C++", ".h": "C", ".rb": "Ruby", ".php": "PHP", ".cs": "C#",
    ".fs": "F#", ".scala": "Scala", ".clj": "Clojure", ".ex": "Elixir", ".exs": "Elixir", ".hs": "Haskell",
    ".ml": "OCaml", ".lua": "Lua", ".sh": "Shell", ".bash": "Shell", ".zsh": "Shell", ".ps1": "PowerShell",
    ".r": "R", ".jl": "Julia",
    ".css": "CSS", ".scss": "CSS", ".html": "HTML", ".json": "JSON", ".yaml": "YAML", ".yml": "YAML",
    ".toml": "TOML", ".md": "Markdown", ".sql": "SQL",
}
#: Languages that are program source (the rest are data, markup or docs).
SOURCE_LANGUAGES = frozenset({
    "TypeScript", "JavaScript", "Python", "Go", "Rust", "Java", "Kotlin", "Swift", "C", "C++", "Ruby", "PHP", "C#",
    "F#", "Scala", "Clojure", "Elixir", "Haskell", "OCaml", "Lua", "Shell", "PowerShell", "R", "Julia", "Perl",
})
#: Unknown ("Other") extensions that are still not program source: prose, data, styles, certificates, lockfiles.
NOT_CODE_EXTENSIONS = frozenset(
    ".txt .text .rst .adoc .asciidoc .org .tex .markdown .mdx .csv .tsv .xml .xsd .svg .ini .cfg .conf .env .log "
    ".lock .sum .map .properties .plist .pem .crt .cer .key .pub .patch .diff .less .sass .styl .htm .xhtml "
    ".jsonc .json5 .ipynb .sln .csproj .pbxproj .bak .orig .rej .swp .tmp .po .pot".split())
SHEBANGS = {
    "python": "Python", "python3": "Python", "node": "JavaScript", "bash": "Shell", "sh": "Shell", "zsh": "Shell",
    "dash": "Shell", "ruby": "Ruby", "perl": "Perl", "php": "PHP", "lua": "Lua", "Rscript": "R", "julia": "Julia",
    "pwsh": "PowerShell", "deno": "TypeScript", "ts-node": "TypeScript", "elixir": "Elixir",
}
OTHER = "Other"
TEXT = "Text"
_VERSIONED = re.compile(r"^(python|ruby|node|perl|php|lua)[\d.]*$")


def shebang_language(head: bytes) -> str | None:
    """The language a ``#!`` line names (``#!/usr/bin/env python3`` -> Python), or None."""
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").strip().split()
    if not words:
        return None
    program = os.path.basename(words[0])
    if program == "env":
        rest = [word for word in words[1:] if not word.startswith("-")]
        program = os.path.basename(rest[0]) if rest else ""
    base = _VERSIONED.sub(r"\1", program)
    return SHEBANGS.get(program) or SHEBANGS.get(base)


def language_of(name: str, head: bytes | None = None) -> str:
    """The language of a file from its name, or for a name without extension from its first bytes."""
    extension = os.path.splitext(name)[1].lower()
    if extension:
        return EXTENSIONS.get(extension, OTHER)
    if head is not None:
        found = shebang_language(head)
        if found:
            return found
    return TEXT


def is_code(name: str, language: str) -> bool:
    """Whether a (text) file is program source: a known source language, or an unknown extension not known as data.

    Unknown extensions count so a project in a language this table does not name
    (Zig, Nim, Elm, ...) still gets the universal heuristics.
    """
    if language in SOURCE_LANGUAGES:
        return True
    return language == OTHER and os.path.splitext(name)[1].lower() not in NOT_CODE_EXTENSIONS
