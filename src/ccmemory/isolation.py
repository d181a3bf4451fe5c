"""Starting Python and other programs so that no file of the project ever runs.

ccmemory works with the user's project as its current directory, and the project is
untrusted (a cloned repository): it can hold a top-level ``ccmemory/``, ``json.py`` or
``mcp/``. ``python -m x`` and ``python -c`` put the current directory first on
``sys.path``, and a relative entry of ``PYTHONPATH`` or ``PATH`` (``''``, ``.``, ``src``)
resolves against it. So every process ccmemory starts is started through here:

* the entry scripts Claude Code, the shell or ccmemory itself start by path (``hooks/run.py``,
  ``scripts/mcp_launcher.py``, ``bin/ccmemory``) run with ``python3 -I``: isolated from every
  ``PYTHON*`` variable, since a relative ``PYTHONPATH`` entry is searched even while the
  interpreter starts (a project's ``encodings/`` runs before the first line of the script);
* a Python 3.11+ child runs with ``-P`` (no current directory on ``sys.path``) and
  :func:`child_env` (``PYTHONSAFEPATH=1``, only absolute ``PYTHONPATH`` and ``PATH``
  entries, no relative ``PYTHONUSERBASE``/``PYTHONPYCACHEPREFIX``/...): :func:`python_command`;
* a child that must not read ``PYTHON*`` variables at all runs with ``-I`` (or ``-E -P``)
  and ccmemory's own source put first by the command itself: :func:`isolated_module_command`;
* an interpreter or program named by a setting must be an absolute path
  (:func:`absolute_program`), and programs are looked up on the absolute ``PATH``
  entries only (:func:`find_program`).

"Absolute" means :func:`ccmemory.paths.is_fixed`: a path that names the same file for every process. On
Linux ``/proc/self/cwd`` is absolute yet is the current directory of whoever reads it, the project; a path
leading through ``/proc`` or ``/dev/fd`` counts as relative.

Standard library only and cheap to import (``os`` and ``sys``): the hooks use it.
"""

import os
import sys

from .paths import expand_user, is_fixed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable, Mapping

#: Python's variables naming one path; a relative one would resolve against the project.
PATH_VARIABLES = ("PYTHONHOME", "PYTHONUSERBASE", "PYTHONPYCACHEPREFIX", "PYTHONSTARTUP", "PYTHONEXECUTABLE")
#: Runs a module like ``-m`` after putting the directory given as first argument on sys.path.
_RUN_MODULE = ("import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); sys.argv[0] = sys.argv.pop(1); "
               'runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)')


class UnsafeSetting(ValueError):
    """A setting that would make ccmemory run a file chosen by the project; the message says what to do."""


def absolute_entries(value: "str | None") -> "list[str]":
    """The fixed entries (:func:`is_fixed`) of an ``os.pathsep`` list such as ``PATH``; relative and empty
    ones, and those through ``/proc`` or ``/dev/fd``, are dropped."""
    return [entry for entry in (value or "").split(os.pathsep) if is_fixed(entry)]


def child_env(env: "Mapping[str, str] | None" = None, *, python_path: "Iterable[str]" = ()) -> "dict[str, str]":
    """``env`` (default: this process's) made safe for a child whose current directory is the project.

    ``python_path`` goes first on ``PYTHONPATH``; the inherited entries follow, the relative ones
    dropped. ``PYTHONSAFEPATH=1`` keeps the current directory off ``sys.path`` of any Python 3.11+
    the child starts in turn.
    """
    result = dict(os.environ if env is None else env)
    entries = list(dict.fromkeys([*python_path, *absolute_entries(result.get("PYTHONPATH"))]))
    if entries:
        result["PYTHONPATH"] = os.pathsep.join(entries)
    else:
        result.pop("PYTHONPATH", None)
    for name in PATH_VARIABLES:
        if name in result and not is_fixed(result[name]):
            del result[name]
    if "PATH" in result:
        result["PATH"] = os.pathsep.join(absolute_entries(result["PATH"]))
    result["PYTHONSAFEPATH"] = "1"
    return result


def python_command(python: str, module: str, *args: str) -> "list[str]":
    """``python -P -m module args``: a Python 3.11+ running ``module`` with no current directory on sys.path."""
    return [python, "-P", "-m", module, *args]


def isolated_module_command(python: str, source_dir: str, module: str, *args: str,
                            flags: "tuple[str, ...]" = ("-I",)) -> "list[str]":
    """Run ``module`` of ``source_dir`` like ``-m``, with ``source_dir`` first on sys.path.

    ``-I`` (any Python 3): no current directory, no ``PYTHON*`` variable, no user site. ``("-E",
    "-P")`` (Python 3.11+) keeps the user site, for a ccmemory installed with ``pip --user``.
    """
    return [python, *flags, "-c", _RUN_MODULE, source_dir, module, *args]


def package_parent() -> str:
    """The directory holding this ``ccmemory`` package (a plugin's ``src/``, or site-packages)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def absolute_program(value: str, setting: str) -> str:
    """``value`` (``~`` expanded, :func:`ccmemory.paths.expand_user`) if it is an absolute path, else
    :class:`UnsafeSetting` saying what to do."""
    path = expand_user(value)
    if not is_fixed(path):
        example = "C:\\Python312\\python.exe" if sys.platform == "win32" else "/home/you/.venvs/ccmemory/bin/python"
        raise UnsafeSetting(
            f"{setting} is {value!r}, a relative path (or one through /proc or /dev/fd, which leads wherever the "
            "process stands): it would be looked up in the project you are working in, "
            f"and ccmemory never runs a file of the project. Set {setting} to an absolute path (for example "
            f"{example}) or unset it.")
    return path


def find_program(name: str, path: "str | None" = None) -> "str | None":
    """The absolute path of the program ``name`` on the absolute entries of ``PATH`` (``path``), or None.

    Unlike ``shutil.which`` it never looks in the current directory, not even on Windows, and
    never follows an empty or relative ``PATH`` entry. A ``name`` with a directory part must be absolute.
    """
    if os.path.dirname(name):
        return name if is_fixed(name) and _is_program(name) else None
    suffixes = [""]
    if sys.platform == "win32":
        suffixes += [ext for ext in os.environ.get("PATHEXT", ".COM;.EXE;.BAT;.CMD").lower().split(";") if ext]
    for folder in absolute_entries(os.environ.get("PATH", os.defpath) if path is None else path):
        for suffix in suffixes:
            candidate = os.path.join(folder, name + suffix)
            if _is_program(candidate):
                return candidate
    return None


def _is_program(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)
