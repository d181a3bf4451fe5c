"""A project's own settings: ``.claude/memory.config.json``, optional, laid over defaults.

Every knowledge command (index, init, analyze, discover, promote, the git hook)
reads them through :func:`load`. A missing file means the defaults; a broken
file or a wrongly typed value never stops a command: the default is used and
:attr:`ProjectSettings.problems` says what was ignored, for the command to
print as a warning.

A ``vectors_dir`` setting has no meaning here: vectors live in ccmemory's one
database and are rebuilt from the markdown by ``ccmemory index``. ``model``
is checked against the embedding model ccmemory uses (one per database, set
in the user's ``config.json``), and a mismatch is reported rather than mixed.

The file is the project's, so untrusted: a ``knowledge_dir`` that resolves outside
the project (``~/notes``, ``../other``, an absolute path, a symlink out) is refused
and the default used; the file itself is read only as a regular file inside the
project, at most :data:`MAX_CONFIG_BYTES`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from .. import paths, safe_files
from ..errors import ValidationError

CONFIG_FILE = os.path.join(".claude", "memory.config.json")
DEFAULT_KNOWLEDGE_DIR = os.path.join(".claude", "knowledge")
DEFAULT_CHUNK_SIZE = 2000
MIN_CHUNK_SIZE = 200
MAX_CHUNK_SIZE = 10_000
DEFAULT_IGNORED_DIRS = (
    "node_modules", ".git", "dist", "build", "vendor", "target", "__pycache__", ".venv", "venv", ".tox",
    ".mypy_cache", ".pytest_cache", ".next", "coverage", "bower_components", "third_party",
)
MAX_CONFIG_BYTES = 256 * 1024
_KNOWN_KEYS = ("knowledge_dir", "vectors_dir", "chunk_size", "model", "ignored_dirs")


@dataclass
class ProjectSettings:
    """The settings of one project, resolved to absolute paths."""

    root: str
    knowledge_dir: str
    chunk_size: int = DEFAULT_CHUNK_SIZE
    model: str | None = None
    ignored_dirs: tuple[str, ...] = DEFAULT_IGNORED_DIRS
    problems: list[str] = field(default_factory=list)

    @property
    def memory_dir(self) -> str:
        """``.claude/memory`` of the project: error log, locks and the structure cache."""
        return os.path.join(self.root, ".claude", "memory")

    def writable_memory_dir(self) -> str:
        """:attr:`memory_dir`, created if needed; UnsafeFileError when it (or ``.claude``) resolves outside the project.

        Returns its real path, so what is written there next is not redirected by a link made later.
        """
        return safe_files.make_dirs(self.memory_dir, self.root)

    @property
    def config_file(self) -> str:
        return os.path.join(self.root, CONFIG_FILE)


def _read(path: str, root: str, problems: list[str]) -> dict[str, Any]:
    if not os.path.lexists(path):
        return {}
    try:
        data = json.loads(safe_files.read_regular(path, MAX_CONFIG_BYTES, root=root))
    except (OSError, ValueError, RecursionError, ValidationError) as exc:
        problems.append(f"{path} could not be read ({exc}); using the defaults. Fix or delete the file.")
        return {}
    if not isinstance(data, dict):
        problems.append(f"{path} must hold a JSON object; using the defaults")
        return {}
    return data


def load(root: str) -> ProjectSettings:
    """The settings of the project at ``root`` (its top-level directory)."""
    root = os.path.abspath(root)
    problems: list[str] = []
    path = os.path.join(root, CONFIG_FILE)
    data = _read(path, root, problems)
    settings = ProjectSettings(root=root, knowledge_dir=os.path.join(root, DEFAULT_KNOWLEDGE_DIR), problems=problems)
    for key in data:
        if key not in _KNOWN_KEYS:
            problems.append(f"{path}: unknown setting {key!r} ignored (known: {', '.join(_KNOWN_KEYS)})")
    folder = data.get("knowledge_dir")
    if folder is not None:
        if isinstance(folder, str) and folder.strip():
            wanted = os.path.normpath(os.path.join(root, paths.expand_user(folder.strip())))
            if safe_files.is_inside(wanted, root):
                settings.knowledge_dir = wanted
            else:
                problems.append(f"{path}: knowledge_dir {folder!r} resolves to {os.path.realpath(wanted)}, outside "
                                f"the project; ccmemory reads and writes only inside the project, so it uses "
                                f"{DEFAULT_KNOWLEDGE_DIR}. Give a folder inside the project.")
        else:
            problems.append(f"{path}: knowledge_dir must be a path, got {folder!r}; using {DEFAULT_KNOWLEDGE_DIR}")
    if not safe_files.is_inside(settings.knowledge_dir, root):
        problems.append(f"{settings.knowledge_dir} resolves to {os.path.realpath(settings.knowledge_dir)}, outside "
                        "the project (a symbolic link?); ccmemory neither reads nor writes knowledge there. Replace "
                        "the link with a folder inside the project.")
    size = data.get("chunk_size")
    if size is not None:
        if isinstance(size, int) and not isinstance(size, bool) and MIN_CHUNK_SIZE <= size <= MAX_CHUNK_SIZE:
            settings.chunk_size = size
        else:
            problems.append(f"{path}: chunk_size must be a whole number from {MIN_CHUNK_SIZE} to {MAX_CHUNK_SIZE}, "
                            f"got {size!r}; using {DEFAULT_CHUNK_SIZE}")
    ignored = data.get("ignored_dirs")
    if ignored is not None:
        if isinstance(ignored, list) and all(isinstance(name, str) and name.strip() for name in ignored):
            settings.ignored_dirs = tuple(name.strip().strip("/\\") for name in ignored)
        else:
            problems.append(f"{path}: ignored_dirs must be a list of folder names; using the defaults")
    model = data.get("model")
    if model is not None:
        if isinstance(model, str) and model.strip():
            settings.model = model.strip()
        else:
            problems.append(f"{path}: model must be a model name, got {model!r}")
    if data.get("vectors_dir") is not None:
        problems.append(f"{path}: vectors_dir is not used: ccmemory keeps vectors in its database and rebuilds "
                        "them from the markdown with `ccmemory index`")
    return settings


def model_mismatch(settings: ProjectSettings, model_name: str) -> str | None:
    """A warning when the project asks for another embedding model than the one the database uses."""
    if not settings.model:
        return None
    wanted = settings.model.lower()
    actual = model_name.lower()
    if wanted == actual or actual.endswith("/" + wanted) or wanted.endswith("/" + actual):
        return None
    return (f"{settings.config_file} asks for model {settings.model!r}, but this database embeds with "
            f"{model_name!r}; set embedding.model in ccmemory's config.json to change it for every project")
