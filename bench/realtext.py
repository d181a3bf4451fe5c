"""Distinct real texts for vector benchmarks: docstrings and signatures of the Python sources on this machine.

Walks the given folders (default: the interpreter's standard library and its
site-packages, ``/usr/lib``, ``/usr/local/lib``, ``/opt``, ``~/.pyenv/versions``) for ``.py``
files, parses each with :mod:`ast`, and yields, for
every module, class and function with a docstring, one text: its qualified
name and signature line, then the docstring's first paragraph (≤ 240
characters). Texts are deduplicated exactly, so no vector is a copy of another.
Nothing is downloaded; the vectors made from these texts are cached outside
the repository by the benchmark that uses them.
"""

from __future__ import annotations

import ast
import os
import sys
import sysconfig
from pathlib import Path
from typing import Iterator

MAX_CHARS = 240


def default_roots() -> list[Path]:
    """This interpreter's library and site-packages, then the usual system places holding Python sources."""
    found = [Path(sysconfig.get_paths()["stdlib"]), Path(sysconfig.get_paths()["purelib"])]
    found += [Path(p) for p in ("/usr/lib", "/usr/local/lib", "/opt", Path.home() / ".pyenv" / "versions")]
    roots: list[Path] = []
    for root in (r.resolve() for r in found if os.path.isdir(r)):
        if not any(root == kept or kept in root.parents for kept in roots):
            roots = [kept for kept in roots if root not in kept.parents] + [root]
    return roots


def _first_paragraph(doc: str) -> str:
    paragraph = doc.strip().split("\n\n")[0]
    return " ".join(paragraph.split())[:MAX_CHARS]


def _texts_of(path: Path) -> Iterator[str]:
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError, OSError, RecursionError):
        return
    module = path.stem
    doc = ast.get_docstring(tree, clean=True)
    if doc:
        yield f"module {module}: {_first_paragraph(doc)}"
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            doc = ast.get_docstring(node, clean=True)
            if not doc or len(doc.strip()) < 20:
                continue
            if isinstance(node, ast.ClassDef):
                head = f"class {node.name}"
            else:
                head = f"def {node.name}({', '.join(a.arg for a in node.args.args)})"
            yield f"{module}.{head}: {_first_paragraph(doc)}"


def distinct_texts(limit: int, roots: list[Path] | None = None) -> list[str]:
    """Up to ``limit`` distinct texts, in a stable order (sorted file paths)."""
    seen: dict[str, None] = {}
    for root in roots or default_roots():
        for path in sorted(root.rglob("*.py")):
            if "node_modules" in path.parts:
                continue
            for text in _texts_of(path):
                seen.setdefault(text, None)
                if len(seen) >= limit:
                    return list(seen)
    return list(seen)


if __name__ == "__main__":
    texts = distinct_texts(10**7, [Path(a) for a in sys.argv[1:]] or None)
    print(len(texts), "distinct texts from", [str(r) for r in default_roots()])
