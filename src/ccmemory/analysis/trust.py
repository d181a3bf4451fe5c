"""The user's opt-in to run a project's own analyzers (``.claude/analyzers/*.py``).

Those files are the repository's code, and a cloned repository is untrusted, so ccmemory
runs them only after the user allowed it for this project and these exact files:
``ccmemory analyze --trust-analyzers`` (or ``discover --trust-analyzers``), confirmed at
a terminal, records in the user's data dir (``trusted-analyzers.json``; never in the
repository, which the attacker writes) the project's real path and the sha256 of every
file of ``.claude/analyzers/``. Any change there (a file edited, added, removed or renamed)
needs a new opt-in. The analyzers then run from the very bytes that were hashed.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

from .. import paths
from ..errors import ValidationError
from ..safe_files import MAX_WALK_DEPTH, read_regular, replace_text, walk

TRUST_FILE = "trusted-analyzers.json"
ANALYZERS_DIR = os.path.join(".claude", "analyzers")
MAX_FILES = 200
MAX_FILE_BYTES = 1024 * 1024
MAX_TRUST_FILE_BYTES = 4 * 1024 * 1024
ENABLE_COMMAND = "ccmemory analyze --deep --trust-analyzers"


@dataclass
class Analyzers:
    """The content of a project's ``.claude/analyzers/``: what would run, and its digest."""

    folder: str
    files: dict[str, bytes] = field(default_factory=dict)  # every file, by path relative to the folder
    problem: str = ""  # why the folder cannot be trusted as it is (too big, unreadable); digest is "" then

    @property
    def modules(self) -> dict[str, bytes]:
        """The analyzers proper: ``<language>.py`` at the top of the folder, not starting with ``_``."""
        return {name: data for name, data in self.files.items()
                if "/" not in name and name.endswith(".py") and not name.startswith("_")}

    @property
    def digest(self) -> str:
        if self.problem:
            return ""
        listing = "".join(f"{name}\0{hashlib.sha256(data).hexdigest()}\n" for name, data in sorted(self.files.items()))
        return hashlib.sha256(listing.encode("utf-8")).hexdigest()


def read(root: str) -> Analyzers:
    """Every regular file under ``<root>/.claude/analyzers`` (bounded; nothing outside the folder)."""
    folder = os.path.join(root, ANALYZERS_DIR)
    found = Analyzers(folder)
    if not os.path.isdir(folder) or os.path.islink(folder):
        return found
    too_deep: list[str] = []
    for current, directories, names in walk(folder, too_deep=too_deep):
        directories[:] = sorted(name for name in directories if not os.path.islink(os.path.join(current, name)))
        for name in sorted(names):
            path = os.path.join(current, name)
            relative = os.path.relpath(path, folder).replace(os.sep, "/")
            if len(found.files) >= MAX_FILES:
                found.problem = f"{ANALYZERS_DIR} holds more than {MAX_FILES} files"
                return found
            try:
                found.files[relative] = read_regular(path, MAX_FILE_BYTES, root=folder)
            except ValidationError as exc:
                found.problem = f"{ANALYZERS_DIR}/{relative} cannot be used: {exc}"
                return found
    if too_deep:  # its files would be left out of the digest the opt-in records
        found.problem = f"{ANALYZERS_DIR} nests folders more than {MAX_WALK_DEPTH} levels deep"
    return found


def trust_path() -> str:
    return os.path.join(paths.data_dir(), TRUST_FILE)


def _records() -> dict[str, Any]:
    try:
        data = json.loads(read_regular(trust_path(), MAX_TRUST_FILE_BYTES))
    except (ValidationError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def project_key(root: str) -> str:
    return os.path.realpath(root)


def trusted_digest(root: str) -> str | None:
    """The digest the user allowed for this project's analyzers, or None."""
    record = _records().get(project_key(root))
    digest = record.get("digest") if isinstance(record, dict) else None
    return digest if isinstance(digest, str) and digest else None


def is_trusted(root: str, analyzers: Analyzers) -> bool:
    digest = analyzers.digest
    return bool(digest) and trusted_digest(root) == digest


def allow(root: str, analyzers: Analyzers) -> None:
    """Record the user's opt-in for exactly these files of this project."""
    if not analyzers.digest:
        raise ValidationError(analyzers.problem or f"There is nothing in {analyzers.folder} to allow")
    records = _records()
    records[project_key(root)] = {"digest": analyzers.digest, "files": sorted(analyzers.files),
                                  "allowed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    paths.ensure_private_dir(paths.data_dir())
    replace_text(trust_path(), json.dumps(records, indent=2, sort_keys=True) + "\n")
    paths.make_private_file(trust_path())


def skipped_message(root: str, analyzers: Analyzers) -> str:
    """Why the project's analyzers did not run, and the command that makes them run."""
    names = ", ".join(sorted(analyzers.modules)) or "none"
    if analyzers.problem:
        return (f"Skipped the project's own analyzers ({names}): {analyzers.problem}, so they cannot be "
                "allowed; the built-in analysis was used")
    changed = " They changed since you allowed them." if trusted_digest(root) else ""
    return (f"Skipped the project's own analyzers in {ANALYZERS_DIR}/ ({names}): they are the repository's code, "
            f"and ccmemory runs it only when you allow it.{changed} Read them, then run `{ENABLE_COMMAND}` "
            "yourself in a terminal to run them for this project (again after any change). The built-in "
            "analysis was used")
