"""Per-language analyzers for the deep analysis.

An analyzer is ``analyze(path, text) -> {"exports": [{"name", "kind", "signature"}...]}``.
Built in: TypeScript/JavaScript (exports, types, function signatures). Any
other language falls back to universal heuristics (top-level definitions by
keyword). A project can add or replace one with ``.claude/analyzers/<language>.py``
(e.g. ``python.py``, ``typescript.py``: the language name in lower case, spaces
and ``+``/``#`` as ``_``, ``p``, ``sharp``) defining ``analyze(path, text)``. That is
the repository's code: it runs only once the user allowed these exact files for this
project (:mod:`.trust`); until then they are reported as skipped and the heuristics
are used. An analyzer that fails is reported and the heuristics are used instead.
"""

from __future__ import annotations

import re
import types
from typing import Any, Callable

from . import trust

Analyzer = Callable[[str, str], dict[str, Any]]

_TS_DECLARATION = re.compile(
    r"^export\s+(?P<default>default\s+)?(?:declare\s+)?(?P<async>async\s+)?"
    r"(?P<kind>function\*?|class|abstract\s+class|const|let|var|interface|type|enum|namespace)\s+"
    r"(?P<name>[A-Za-z_$][\w$]*)(?P<rest>[^\n{=;]*)",
    re.M,
)
_TS_LIST = re.compile(r"^export\s+(?:type\s+)?\{([^}]*)\}(?:\s+from\s+['\"]([^'\"]+)['\"])?", re.M)
_TS_STAR = re.compile(r"^export\s+\*\s+(?:as\s+(\w+)\s+)?from\s+['\"]([^'\"]+)['\"]", re.M)
_TS_DEFAULT_EXPR = re.compile(r"^export\s+default\s+(?!function|class|async|abstract)([A-Za-z_$][\w$.]*)", re.M)
_CJS = re.compile(r"^(?:module\.)?exports\.([A-Za-z_$][\w$]*)\s*=", re.M)
_CJS_OBJECT = re.compile(r"^module\.exports\s*=\s*\{([^}]*)\}", re.M)
_CJS_VALUE = re.compile(r"^module\.exports\s*=\s*([A-Za-z_$][\w$]*)", re.M)

_DEFINITION = re.compile(
    r"^(?:pub(?:\([\w:]+\))?\s+|export\s+|public\s+|static\s+|final\s+|async\s+|abstract\s+)*"
    r"(?P<kind>def|class|fn|func|function|struct|enum|trait|interface|module|defmodule|object|impl|type)\s+"
    r"(?:\([^)]*\)\s*)?(?P<name>[A-Za-z_][\w.?!]*)(?P<rest>[^\n{:=]*)",
    re.M,
)


def typescript(path: str, text: str) -> dict[str, Any]:
    """Exports of a TypeScript/JavaScript module: declarations, export lists, re-exports, CommonJS."""
    exports: list[dict[str, Any]] = []

    def add(name: str, kind: str, signature: str = "") -> None:
        if name and all(item["name"] != name for item in exports):
            exports.append({"name": name, "kind": kind, "signature": signature.strip()})

    for match in _TS_DECLARATION.finditer(text):
        kind = match.group("kind").replace("abstract ", "").rstrip("*")
        kind = {"const": "variable", "let": "variable", "var": "variable"}.get(kind, kind)
        signature = ""
        if kind == "function":
            signature = f"{'async ' if match.group('async') else ''}function {match.group('name')}{match.group('rest')}"
        name = match.group("name")
        add(name, f"default {kind}" if match.group("default") else kind, " ".join(signature.split()))
    for match in _TS_LIST.finditer(text):
        for part in match.group(1).split(","):
            part = part.strip()
            if part:
                add(part.split(" as ")[-1].strip(), "re-export" if match.group(2) else "export")
    for match in _TS_STAR.finditer(text):
        add(match.group(1) or f"* from {match.group(2)}", "re-export")
    for match in _TS_DEFAULT_EXPR.finditer(text):
        add(match.group(1), "default")
    for match in _CJS.finditer(text):
        add(match.group(1), "commonjs")
    for match in _CJS_OBJECT.finditer(text):
        for part in match.group(1).split(","):
            name = part.split(":")[0].strip()
            if re.fullmatch(r"[A-Za-z_$][\w$]*", name):
                add(name, "commonjs")
    for match in _CJS_VALUE.finditer(text):
        add(match.group(1), "commonjs default")
    return {"exports": exports}


def heuristic(path: str, text: str) -> dict[str, Any]:
    """Top-level definitions by keyword, for any language without an analyzer."""
    exports: list[dict[str, Any]] = []
    for match in _DEFINITION.finditer(text):
        name = match.group("name")
        if name.startswith("_") or any(item["name"] == name for item in exports):
            continue
        exports.append({"name": name, "kind": match.group("kind"),
                        "signature": " ".join(f"{match.group('kind')} {name}{match.group('rest')}".split())[:160]})
    return {"exports": exports}


BUILT_IN: dict[str, Analyzer] = {"TypeScript": typescript, "JavaScript": typescript}


def custom_file_name(language: str) -> str:
    """``C#`` -> ``csharp.py``, ``C++`` -> ``cpp.py``, ``TypeScript`` -> ``typescript.py``."""
    name = language.lower().replace("#", "sharp").replace("+", "p")
    return re.sub(r"[^a-z0-9]+", "_", name) + ".py"


def load_custom(root: str, problems: list[str], skipped: list[str] | None = None) -> dict[str, Analyzer]:
    """The project's own analyzers, keyed by file name, when the user allowed them (:mod:`.trust`).

    Not allowed: none is loaded, their names go to ``skipped`` and ``problems`` says how to allow
    them. Allowed: each runs from the bytes whose digest the user allowed, never from a second read.
    """
    found = trust.read(root)
    if not found.modules:
        return {}
    if not trust.is_trusted(root, found):
        problems.append(trust.skipped_message(root, found))
        if skipped is not None:
            skipped.extend(sorted(found.modules))
        return {}
    loaded: dict[str, Analyzer] = {}
    for name, source in sorted(found.modules.items()):
        try:
            module = types.ModuleType(f"ccmemory_custom_analyzer_{name[:-3]}")
            module.__file__ = f"{found.folder}/{name}"
            exec(compile(source, module.__file__, "exec"), module.__dict__)
            function = module.analyze
            if not callable(function):
                raise TypeError("analyze is not a function")
        except Exception as exc:
            problems.append(f"Custom analyzer .claude/analyzers/{name} could not be loaded ({exc}); "
                            "using the built-in analysis instead")
            continue
        loaded[name] = function
    return loaded


def pick(language: str, custom: dict[str, Analyzer]) -> tuple[str, Analyzer]:
    """(analyzer name, analyzer) for a language: the project's own, else built in, else the heuristics."""
    own = custom_file_name(language)
    if own in custom:
        return f"custom:{own}", custom[own]
    if language in BUILT_IN:
        return "typescript", BUILT_IN[language]
    return "heuristic", heuristic
