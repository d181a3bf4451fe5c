"""Start ccmemory's MCP server with a Python that has ccmemory's dependencies.

Claude Code runs this file with the user's ``python3`` (see ``.mcp.json``). It is
stdlib-only so it works before any dependency is installed.

The server always runs the plugin's own code (``<plugin root>/src`` is put first
on ``PYTHONPATH``), the same code the hooks run, so the two can never disagree
about the database schema. Only the third-party dependencies live in a virtual
environment, ``<runtime home>/venv-<key>``, where the key hashes the dependency list
of ``pyproject.toml`` and the Python version: a plugin update that changes no
dependency reuses the environment, one that does builds a fresh one beside it.
``<runtime home>`` is ``$CLAUDE_PLUGIN_DATA``, else ccmemory's data directory.

The first run builds that environment (``uv`` when it is on PATH, else
``venv`` + ``pip`` from PyPI) in a detached process, and waits for it only as
long as Claude Code waits for an MCP server to start (measured on a 2-core
machine: 5 to 7 s with uv, 40 to 75 s with pip; see BENCHMARKS.md). If the
build is not done by then, this start fails with a message saying so, the
build goes on, and the next session (or a ``/mcp`` reconnect) finds it ready.
``--install`` runs the build in the foreground instead.

``CCMEMORY_PYTHON`` names an interpreter that already has the dependencies
(a development venv, CI): no environment is built then.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

PLUGIN_ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIR = PLUGIN_ROOT / "src"
SERVER_MODULE = "ccmemory.mcp.server"
READY_FILE = "ccmemory-ready.json"
LOCK_STALE_SECONDS = 30 * 60
MIN_PYTHON = (3, 11)


class LauncherError(Exception):
    """A failure to report on stderr, worded for the user."""


def main(argv: list[str]) -> int:
    try:
        if sys.version_info < MIN_PYTHON:
            raise LauncherError(
                f"ccmemory needs Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer, but {sys.executable} is "
                f"{sys.version.split()[0]}. Install a newer Python 3 as python3, or set CCMEMORY_PYTHON to one."
            )
        if argv in (["--install"], ["--build-detached"]):
            python = build_runtime()
            say(f"dependencies ready in {python.parent.parent}")
            return 0
        if argv:
            raise LauncherError(f"unknown arguments {argv}; use no argument (start the server) or --install")
        override = os.environ.get("CCMEMORY_PYTHON")
        python = Path(override) if override else wait_for_runtime(install_wait_seconds())
        return run_server(python)
    except LauncherError as exc:
        print(f"ccmemory: {exc}", file=sys.stderr)
        return 1


def say(text: str) -> None:
    """Progress on stdout: the terminal for --install, the install log for a detached build."""
    print(f"ccmemory: {text}", flush=True)


def runtime_home() -> Path:
    """Where environments live: the plugin's own data dir, which Claude Code removes with the plugin.

    Outside Claude Code (no ``CLAUDE_PLUGIN_DATA``) it is ccmemory's data directory, resolved
    by the plugin's own stdlib-only ``ccmemory.paths``.
    """
    if str(SOURCE_DIR) not in sys.path:
        sys.path.insert(0, str(SOURCE_DIR))
    from ccmemory import paths

    plugin_data = os.environ.get("CLAUDE_PLUGIN_DATA")
    return Path(paths.ensure_private_dir(plugin_data or paths.data_dir()))


def requirements() -> list[str]:
    import tomllib

    with open(PLUGIN_ROOT / "pyproject.toml", "rb") as fh:
        return list(tomllib.load(fh)["project"].get("dependencies", []))


def runtime_dir(reqs: list[str]) -> Path:
    """``venv-<key>``: the key changes when the dependencies or the Python version do."""
    identity = json.dumps({"requirements": sorted(reqs), "python": list(sys.version_info[:2])})
    key = hashlib.sha256(identity.encode()).hexdigest()[:12]
    return runtime_home() / f"venv-{key}"


def venv_python(venv: Path) -> Path:
    if sys.platform == "win32":
        return venv / "Scripts" / "python.exe"
    return venv / "bin" / "python"


def is_ready(venv: Path) -> bool:
    return (venv / READY_FILE).is_file() and venv_python(venv).exists()


def install_log() -> Path:
    logs = runtime_home() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    return logs / "runtime-install.log"


def install_wait_seconds() -> float:
    """How long one server start may wait for a first-run build.

    Claude Code gives a server ``MCP_TIMEOUT`` (30 s) to connect and, when it exits early,
    starts it once more within that budget: two waits must fit, leaving time to start the server.
    """
    explicit = os.environ.get("CCMEMORY_INSTALL_WAIT")
    if explicit:
        return float(explicit)
    mcp_timeout_ms = os.environ.get("MCP_TIMEOUT", "")
    timeout = int(mcp_timeout_ms) / 1000 if mcp_timeout_ms.isdigit() else 30.0
    return max((timeout - 6.0) / 2, 0.0)


def wait_for_runtime(budget: float) -> Path:
    """Return the runtime's python, starting a detached build and waiting up to ``budget`` seconds if needed."""
    venv = runtime_dir(requirements())
    if is_ready(venv):
        return venv_python(venv)
    log = install_log()
    with open(log, "ab") as out:
        builder = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--build-detached"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            **detached_process_options(),
        )
    deadline = time.monotonic() + budget
    while True:
        code = builder.poll()
        if code is not None:
            if code == 0 and is_ready(venv):
                return venv_python(venv)
            raise LauncherError(
                f"installing the Python dependencies into {venv} failed. The end of {log}:\n{tail(log)}\n"
                f"Fix the cause, then run: python3 \"{Path(__file__).resolve()}\" --install"
            )
        if time.monotonic() >= deadline:
            raise LauncherError(
                f"first run: still installing the Python dependencies into {venv} (about a minute; "
                f"progress in {log}). The memory tools will be there in the next session, or reconnect now with /mcp."
            )
        time.sleep(0.25)


def detached_process_options() -> dict:
    """Let the build outlive this process when Claude Code gives up on the server start."""
    if sys.platform == "win32":
        flags = subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.DETACHED_PROCESS
        return {"creationflags": flags}
    return {"start_new_session": True}


def build_runtime() -> Path:
    """Create the environment for the current dependency list unless it exists; one builder at a time."""
    reqs = requirements()
    venv = runtime_dir(reqs)
    lock = venv.with_name(venv.name + ".lock")
    while not is_ready(venv):
        if not take_lock(lock):
            time.sleep(0.5)
            continue
        try:
            if not is_ready(venv):
                create_environment(venv, reqs)
                remove_other_runtimes(venv)
        finally:
            lock.unlink(missing_ok=True)
    return venv_python(venv)


def take_lock(lock: Path) -> bool:
    """Create ``lock`` exclusively; break it when its owner died or it is older than any build."""
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        if lock_is_stale(lock):
            lock.unlink(missing_ok=True)
        return False
    with os.fdopen(fd, "w") as fh:
        fh.write(str(os.getpid()))
    return True


def lock_is_stale(lock: Path) -> bool:
    try:
        owner = int(lock.read_text() or "0")
        age = time.time() - lock.stat().st_mtime
    except (OSError, ValueError):
        return True
    if age > LOCK_STALE_SECONDS:
        return True
    if sys.platform == "win32" or owner <= 0:
        return False
    try:
        os.kill(owner, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def create_environment(venv: Path, reqs: list[str]) -> None:
    started = time.monotonic()
    shutil.rmtree(venv, ignore_errors=True)
    uv = shutil.which("uv")
    python = venv_python(venv)
    if uv:
        say(f"creating {venv} with uv")
        run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], "uv venv")
        if reqs:
            say(f"installing {len(reqs)} dependencies with uv")
            run([uv, "pip", "install", "--python", str(python), *reqs], "uv pip install")
    else:
        say(f"creating {venv} with {sys.executable} -m venv")
        run(
            [sys.executable, "-m", "venv", str(venv)],
            "python3 -m venv (on Debian/Ubuntu install the python3-venv package, or install uv)",
        )
        if reqs:
            say(f"installing {len(reqs)} dependencies from PyPI with pip (first run: about a minute)")
            run(
                [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input", *reqs],
                "pip install",
            )
    marker = {
        "requirements": reqs,
        "python": sys.version.split()[0],
        "plugin_root": str(PLUGIN_ROOT),
        "plugin_version": plugin_version(),
        "installer": "uv" if uv else "pip",
        "seconds": round(time.monotonic() - started, 1),
    }
    tmp = venv / (READY_FILE + ".tmp")
    tmp.write_text(json.dumps(marker, indent=2) + "\n")
    os.replace(tmp, venv / READY_FILE)
    say(f"ready after {marker['seconds']} s")


def run(command: list[str], what: str) -> None:
    result = subprocess.run(command, stdin=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise LauncherError(f"{what} failed with exit code {result.returncode}: {' '.join(command)}")


def plugin_version() -> str:
    try:
        manifest = json.loads((PLUGIN_ROOT / ".claude-plugin" / "plugin.json").read_text())
    except (OSError, ValueError):
        return "unknown"
    return str(manifest.get("version", "unknown"))


def remove_other_runtimes(current: Path) -> None:
    """Drop environments of older dependency lists (a session still using one keeps its open files)."""
    for other in current.parent.glob("venv-*"):
        if other != current and other.is_dir() and not other.with_name(other.name + ".lock").exists():
            shutil.rmtree(other, ignore_errors=True)


def tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def run_server(python: Path) -> int:
    """Replace this process by the server so Claude Code's signals and pipes reach it directly."""
    if not python.exists():
        raise LauncherError(f"the Python {python} does not exist (check CCMEMORY_PYTHON)")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SOURCE_DIR), env.get("PYTHONPATH")]))
    command = [str(python), "-m", SERVER_MODULE]
    if sys.platform == "win32":
        try:
            return subprocess.call(command, env=env)
        except KeyboardInterrupt:
            return 0
    os.execve(str(python), command, env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
