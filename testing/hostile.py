"""A hostile repository: a real git repository whose files record it when ccmemory runs any of them.

Its top level holds packages named like ccmemory's own, its dependencies' and the standard
library's (``ccmemory/``, ``mcp/``, ``json.py``, ``pip/``, ``venv.py``, ``__future__.py``,
``encodings/``...), a project analyzer, a ``.claude/settings.json`` giving a relative
``PYTHONPATH``, and executables named ``git``, ``uv``, ``claude``, ``python3``, ``python`` and
``bin/python``. Each of them, when it runs, appends a line to a file of its own in a folder outside
the repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from testing.env import isolated_env
from testing.knowledge import write_files

#: Modules that would shadow one ccmemory, its dependencies or Python itself imports, if the
#: repository were on sys.path (``encodings`` even while the interpreter starts).
SHADOWS = ("ccmemory/__init__.py", "ccmemory/__main__.py", "mcp/__init__.py", "json.py", "typing.py",
           "__future__.py", "runpy.py", "sitecustomize.py", "usercustomize.py", "venv.py", "pip/__init__.py",
           "pip/__main__.py", "sqlite3/__init__.py", "click/__init__.py", "apsw.py", "anyio/__init__.py",
           "hashlib.py", "shutil.py", "tempfile.py", "fastembed/__init__.py", "numpy/__init__.py",
           "encodings/__init__.py")
#: Programs of the repository that a lookup through a relative PATH entry would run.
PROGRAMS = ("git", "uv", "claude", "python3", "python", "bin/python")


@dataclass
class Hostile:
    root: Path
    markers: Path

    def ran(self) -> list[str]:
        """What of the repository ran: the markers written."""
        return sorted(path.name for path in self.markers.iterdir())

    def env(self, home: Path, **extra: str) -> dict[str, str]:
        """A shell in the repository: a relative PYTHONPATH and the current directory on PATH."""
        return isolated_env(home, user_home=home.parent / "user-home", PYTHONPATH=".",
                            PATH=os.pathsep + os.environ["PATH"], **extra)


def marker_code(markers: Path, name: str) -> str:
    """Python that records, in ``markers/name``, that it ran; low level, so it works even as the
    ``encodings`` a starting interpreter imports before ``open`` exists."""
    path = str(markers / name)
    return ("import os as _os\n"
            f"_fd = _os.open({path!r}, _os.O_WRONLY | _os.O_CREAT | _os.O_APPEND, 0o644)\n"
            "_os.write(_fd, str(_os.getpid()).encode() + b'\\n')\n"
            "_os.close(_fd)\n")


def make_hostile(root: Path, markers: Path) -> Hostile:
    """Create the hostile repository at ``root`` (``git init``), its markers going to ``markers``."""
    markers.mkdir(parents=True)
    root.mkdir(parents=True)
    subprocess.run([shutil.which("git") or "git", "init", "-q", str(root)], check=True)
    files = {name: marker_code(markers, name.replace("/", "-")) for name in SHADOWS}
    files[".claude/analyzers/python.py"] = (marker_code(markers, "analyzer")
                                            + "def analyze(path, text):\n    return {'exports': ['from-analyzer']}\n")
    files[".claude/settings.json"] = json.dumps({"env": {"PYTHONPATH": "."}})
    files["src/app.py"] = "def visible():\n    pass\n"
    files["pyproject.toml"] = "[project]\nname = 'hostile'\n[tool.uv]\nindex-url = 'http://127.0.0.1:9/'\n"
    write_files(root, files)
    for name in PROGRAMS:
        program = root / name
        program.parent.mkdir(exist_ok=True)
        program.write_text(f"#!/bin/sh\necho $$ >> {markers / ('program-' + name.replace('/', '-'))}\n")
        program.chmod(0o755)
    return Hostile(root, markers)
