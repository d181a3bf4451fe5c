"""The project's manifests (``package.json``, ``pyproject.toml``, ``Cargo.toml`` ...), read as untrusted files.

A manifest is used only when it is a regular file whose real path is inside the
project, of at most :data:`MAX_MANIFEST_BYTES`; anything else (``package.json ->
/dev/zero``, a FIFO, a link to ``~/.npmrc``, a 50 MB file) is skipped with a
problem the command prints, and never read whole. Each is read once per analysis.
"""

from __future__ import annotations

import errno
import json
import os
from typing import Any

from .. import safe_files
from ..errors import ValidationError

MAX_MANIFEST_BYTES = 1024 * 1024


class Manifests:
    """The manifests at the top of one project, each read at most once; ``problems`` says what was skipped."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.problems: list[str] = []
        self._read: dict[str, bytes | None] = {}

    def data(self, name: str) -> bytes | None:
        """The bytes of manifest ``name``, or None when there is none or it cannot be used."""
        if name not in self._read:
            self._read[name] = self._load(name)
        return self._read[name]

    def _load(self, name: str) -> bytes | None:
        path = os.path.join(self.root, name)
        if not os.path.lexists(path):
            return None
        try:
            return safe_files.read_regular(path, MAX_MANIFEST_BYTES, root=self.root)
        except safe_files.UnsafeFileError as exc:
            if exc.code == errno.ENOENT:
                return None
            why = exc.reason
        except (OSError, ValidationError) as exc:
            why = str(exc)
        self.problems.append(f"{name} skipped: {why} (a manifest is read only as a regular file inside the "
                             f"project, up to {MAX_MANIFEST_BYTES // 1024 // 1024} MB)")
        return None

    def text(self, name: str) -> str:
        data = self.data(name)
        return data.decode("utf-8", "replace") if data else ""

    def package_json(self) -> dict[str, Any]:
        """``package.json`` as an object; empty when missing, unusable or not JSON."""
        try:
            found = json.loads(self.data("package.json") or b"{}")
        except (ValueError, RecursionError):
            return {}
        return found if isinstance(found, dict) else {}

    def pyproject(self) -> dict[str, Any]:
        """``pyproject.toml``'s ``[project]`` table; empty when missing, unusable or not TOML."""
        import tomllib

        try:
            found = tomllib.loads(self.text("pyproject.toml")).get("project")
        except (ValueError, RecursionError):
            return {}
        return found if isinstance(found, dict) else {}
