"""Start ccmemory's MCP server with a Python that has ccmemory's dependencies.

Claude Code runs this file with the user's ``python3`` (see ``.mcp.json``). It is
stdlib-only so it works before any dependency is installed.

The server always runs the plugin's own code (``<plugin root>/src`` is put first
on ``PYTHONPATH``), the same code the hooks run, so the two can never disagree
about the database schema. Only the third-party dependencies live in a virtual
environment, ``<runtime home>/venv-<key>``, installed from ``requirements.lock``: every
package of the runtime pinned to one version with the sha256 of each of its files, so
every install resolves the same versions and refuses a file that is not the one locked
(``--require-hashes``). The key hashes that lock file and the Python version: a plugin
update that leaves the lock alone reuses the environment, one that changes it builds a
fresh one beside it.
``<runtime home>`` is ``$CLAUDE_PLUGIN_DATA`` (removed with the plugin), else
``<ccmemory data dir>/runtime``. The memory itself is never there: see ``ccmemory.paths``.

When the environment is ready, this process becomes the SDK server (``exec``).
When it is not (the first start after an install or a dependency change), a
detached process builds it, and this process serves the session at once with
the standard-library server of ``ccmemory.mcp.bootstrap``: the same tools, search
on keywords, and a hand-over to the SDK server as soon as the build is done. So
the memory tools are there in the first session, whatever the build takes, and
Claude Code never caches a failed start. The build creates the venv, installs
``uv`` into it from PyPI and lets uv install the rest (about 2.5x faster than
pip, see BENCHMARKS.md); if uv fails, pip installs them. ``--install`` runs the
build in the foreground instead.

**Team memory** (docs/team.md) needs psycopg and pgvector's adapter, locked with their hashes in
``requirements-team.lock`` (the runtime lock plus the ``team`` extra, resolved with the runtime
lock as constraints, so every package the two share has one version). They are installed into the
same environment only on a machine that names a team server (``CCMEMORY_SYNC_URL`` or
``sync.url``, as the SessionEnd hook checks): by the build, by ``--sync`` before its round, or by
``--install-team``, which a server start runs detached when they are missing. The environment's key
stays that of the runtime lock: naming a server later adds a few MB, it never rebuilds the runtime.

``CCMEMORY_PYTHON`` names an interpreter that already has the dependencies
(a development venv, CI): no environment is built then. It must be an absolute path.

Claude Code starts this file in the project, and no file of the project may run: ``.mcp.json``
runs it with ``python3 -I`` (no ``PYTHON*`` variable, no current directory), every Python
started here runs with ``-P`` and the environment of ``ccmemory.isolation.child_env`` (see
that module), and the build runs in the runtime home.
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
from types import ModuleType

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PLUGIN_ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIR = PLUGIN_ROOT / "src"
if str(SOURCE_DIR) not in sys.path[:1]:
    sys.path.insert(0, str(SOURCE_DIR))
from ccmemory import isolation, locks  # noqa: E402  (the plugin's own; standard library only)

SERVER_MODULE = "ccmemory.mcp.server"
READY_FILE = "ccmemory-ready.json"
LOCK_FILE = PLUGIN_ROOT / "requirements.lock"
TEAM_LOCK_FILE = PLUGIN_ROOT / "requirements-team.lock"
#: In the environment, once the team lock is installed: that lock's sha256.
TEAM_READY_FILE = "ccmemory-team.json"
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
            if sync_configured():
                ensure_team(python.parent.parent)
            if embed_backlog(python) != 0:
                say("embedding what was captured failed (see logs/embedding.log in the data dir); the MCP server "
                    "embeds it in the background instead")
            return 0
        if argv == ["--embed"]:
            override = interpreter_override()
            if override:
                return embed_backlog(override)
            venv = runtime_dir()
            return embed_backlog(venv_python(venv)) if is_ready(venv) else 0
        if argv == ["--sync"]:
            venv = runtime_dir()
            if not is_ready(venv):
                return 0
            ensure_team(venv)  # the round itself records a failure when it still cannot import psycopg
            return sync_round(venv_python(venv))
        if argv == ["--install-team"]:
            venv = runtime_dir()
            return 0 if not is_ready(venv) or ensure_team(venv) else 1
        if argv:
            raise LauncherError(f"unknown arguments {argv}; use no argument (start the server), --install, --embed, "
                                "--sync or --install-team")
        override = interpreter_override()
        if override:
            return run_server(override)
        venv = runtime_dir()
        if is_ready(venv):
            if sync_configured() and not team_ready(venv):
                start_detached("--install-team")  # the server's sync thread finds psycopg when it is there
            return run_server(venv_python(venv))
        return serve_while_building(venv)
    except (LauncherError, isolation.UnsafeSetting) as exc:
        print(f"ccmemory: {exc}", file=sys.stderr)
        return 1


def interpreter_override() -> Path | None:
    """``CCMEMORY_PYTHON`` when set: an absolute path, never one looked up in the project."""
    value = os.environ.get("CCMEMORY_PYTHON")
    return Path(isolation.absolute_program(value, "CCMEMORY_PYTHON")) if value else None


def say(text: str) -> None:
    """Progress on stdout: the terminal for --install, the install log for a detached build."""
    print(f"ccmemory: {text}", flush=True)


def runtime_home() -> Path:
    """Where environments live: the plugin's own data dir, which Claude Code removes with the plugin.

    Outside Claude Code (no usable ``CLAUDE_PLUGIN_DATA``) it is ``runtime/`` in ccmemory's data
    directory, resolved by the plugin's own stdlib-only ``ccmemory.paths``, which also refuses
    anything but an absolute path, so nothing is ever built in the user's project.
    """
    paths = ccmemory_paths()
    plugin_data = paths.usable_dir(os.environ.get("CLAUDE_PLUGIN_DATA"))
    if plugin_data:
        return Path(paths.ensure_private_dir(plugin_data))
    return Path(paths.ensure_private_dir(os.path.join(paths.ensure_private_dir(paths.data_dir()), "runtime")))


def ccmemory_paths() -> ModuleType:
    """``ccmemory.paths`` from the plugin's own source."""
    from ccmemory import paths

    return paths


def lock_text(lock: Path = LOCK_FILE) -> str:
    try:
        return lock.read_text(encoding="utf-8")
    except OSError as exc:
        raise LauncherError(f"the plugin's {lock.name} cannot be read ({exc}); reinstall the plugin") from exc


def requirements(lock: Path = LOCK_FILE) -> list[str]:
    """The locked requirements (``name==version ; marker``), without their hashes."""
    joined = lock_text(lock).replace("\\\n", " ")
    lines = (line.split("#", 1)[0].split(" --hash", 1)[0].strip() for line in joined.splitlines())
    return [line for line in lines if line]


def runtime_dir() -> Path:
    """``venv-<key>``: the key changes when the lock file or the Python version does."""
    identity = json.dumps({"lock": hashlib.sha256(lock_text().encode()).hexdigest(),
                           "python": list(sys.version_info[:2])})
    key = hashlib.sha256(identity.encode()).hexdigest()[:12]
    return runtime_home() / f"venv-{key}"


def venv_python(venv: Path) -> Path:
    if sys.platform == "win32":
        return venv / "Scripts" / "python.exe"
    return venv / "bin" / "python"


def is_ready(venv: Path) -> bool:
    return (venv / READY_FILE).is_file() and venv_python(venv).exists()


def install_log() -> Path:
    paths = ccmemory_paths()
    log = Path(paths.ensure_private_dir(str(runtime_home() / "logs"))) / "runtime-install.log"
    fd = os.open(log, os.O_CREAT | os.O_APPEND | os.O_WRONLY, 0o600)
    os.close(fd)
    paths.make_private_file(str(log))
    return log


def failure_marker(venv: Path) -> Path:
    """Written when a build fails, with the reason; removed when a build starts."""
    return venv.with_name(venv.name + ".failed")


def serve_while_building(venv: Path) -> int:
    """Build the environment in a detached process; serve this session with the bootstrap server meanwhile."""
    holder = locks.read(str(venv.with_name(venv.name + ".lock")))
    building = holder is not None and not locks.is_stale(holder, LOCK_STALE_SECONDS)
    builder = None if building else start_detached("--build-detached")
    log = install_log()

    def status() -> str:
        failed = failure_marker(venv)
        if builder is not None and builder.poll() not in (None, 0) or failed.exists():
            reason = failed.read_text(errors="replace").strip() if failed.exists() else f"see {log}"
            return (f"installing the plugin's search runtime failed: {reason}; the next session retries, or run "
                    f"`python3 \"{Path(__file__).resolve()}\" --install` to see why")
        return ("the plugin's search runtime is still being installed, about a minute after an install or a "
                f"dependency update; semantic search starts by itself when it is ready; progress: {log}")

    def full_server() -> list[str] | None:
        return isolation.python_command(str(venv_python(venv)), SERVER_MODULE) if is_ready(venv) else None

    from ccmemory.mcp import bootstrap

    bootstrap.serve(full_server, status, server_env())


def start_detached(flag: str) -> subprocess.Popen[bytes]:
    """Run this launcher with ``flag`` (``--build-detached``, ``--install-team``) in its own session, logging to the
    install log."""
    with open(install_log(), "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-I", str(Path(__file__).resolve()), flag],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            **detached_process_options(),
        )


def detached_process_options() -> dict[str, Any]:
    """Let the build outlive this process when Claude Code gives up on the server start."""
    if sys.platform == "win32":
        flags = subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.DETACHED_PROCESS
        return {"creationflags": flags}
    return {"start_new_session": True}


def build_runtime() -> Path:
    """Create the environment for the current dependency list unless it exists; one builder at a time."""
    reqs = requirements()
    venv = runtime_dir()
    lock = str(venv.with_name(venv.name + ".lock"))
    while not is_ready(venv):
        try:
            with locks.held(lock, stale_after=LOCK_STALE_SECONDS, command="build"):
                if not is_ready(venv):
                    failure_marker(venv).unlink(missing_ok=True)
                    try:
                        create_environment(venv, reqs)
                    except LauncherError as exc:
                        failure_marker(venv).write_text(f"{exc}\n")
                        raise
                    remove_other_runtimes(venv)
        except locks.Busy:
            time.sleep(0.5)
    return venv_python(venv)


def create_environment(venv: Path, reqs: list[str]) -> None:
    """A fresh venv with the locked ``reqs``: uv when on PATH, else uv installed into the venv from PyPI, else pip."""
    started = time.monotonic()
    shutil.rmtree(venv, ignore_errors=True)
    python = venv_python(venv)
    uv = isolation.find_program("uv")
    if uv:
        say(f"creating {venv} with uv")
        run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], "uv venv")
    else:
        say(f"creating {venv} with {sys.executable} -m venv")
        run(isolation.python_command(sys.executable, "venv", str(venv)),
            "python3 -m venv (on Debian/Ubuntu install the python3-venv package, or install uv)")
    if sys.platform != "win32":
        os.chmod(venv, 0o700)
    installer = install_requirements(python, reqs, uv) if reqs else "none"
    marker = {
        "requirements": reqs,
        "python": sys.version.split()[0],
        "plugin_root": str(PLUGIN_ROOT),
        "plugin_version": plugin_version(),
        "installer": installer,
        "seconds": round(time.monotonic() - started, 1),
    }
    tmp = venv / (READY_FILE + ".tmp")
    tmp.write_text(json.dumps(marker, indent=2) + "\n")
    os.replace(tmp, venv / READY_FILE)
    say(f"ready after {marker['seconds']} s")


def install_requirements(python: Path, reqs: list[str], uv: str | None, lock: Path = LOCK_FILE) -> str:
    """Install ``lock`` (``reqs`` are its lines) into the venv of ``python``; returns which installer did it.

    Without uv on PATH, uv is first installed into the venv with the venv's pip (one
    wheel, honouring the user's pip configuration), because uv then installs the
    dependencies in a fraction of pip's time. uv does not read pip's configuration
    (a private index, a proxy set only there), so any uv failure falls back to pip.
    """
    pip = isolation.python_command(str(python), "pip", "install", "--disable-pip-version-check", "--no-input")
    if uv is None:
        say("installing uv into the environment with pip")
        try:
            run([*pip, "uv"], "pip install uv")
            found = python.with_name("uv.exe" if sys.platform == "win32" else "uv")
            uv = str(found) if found.exists() else None
        except LauncherError as exc:
            say(f"{exc}; installing with pip instead")
    if uv is not None:
        say(f"installing {len(reqs)} dependencies with uv")
        try:
            run([uv, "pip", "install", "--python", str(python), "--require-hashes", "-r", str(lock)],
                "uv pip install")
            return "uv"
        except LauncherError as exc:
            say(f"{exc}; installing with pip instead")
    say(f"installing {len(reqs)} dependencies from PyPI with pip (about a minute)")
    run([*pip, "--require-hashes", "-r", str(lock)], "pip install")
    return "pip"


def sync_configured() -> bool:
    """Whether this machine names a team server: ``CCMEMORY_SYNC_URL`` or ``sync.url`` (what SessionEnd checks)."""
    if os.environ.get("CCMEMORY_SYNC_URL"):
        return True
    from ccmemory import config

    return bool(config.load().get("sync", "url"))


def team_digest() -> str:
    return hashlib.sha256(lock_text(TEAM_LOCK_FILE).encode()).hexdigest()


def team_ready(venv: Path) -> bool:
    """Whether the environment holds the current team lock (a plugin update that changes it installs it again)."""
    try:
        marker = json.loads((venv / TEAM_READY_FILE).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(marker, dict) and marker.get("lock") == team_digest()


def ensure_team(venv: Path) -> bool:
    """Install ``requirements-team.lock`` into the ready environment unless it is there; False when that failed.

    One installer at a time (a lock beside the environment); a failure is logged, never raised: the
    server and the hooks work without it, and ``ccmemory sync`` says what is missing.
    """
    lock = str(venv.with_name(venv.name + ".team.lock"))
    while not team_ready(venv):
        try:
            with locks.held(lock, stale_after=LOCK_STALE_SECONDS, command="install-team"):
                if team_ready(venv):
                    break
                python = venv_python(venv)
                found = python.with_name("uv.exe" if sys.platform == "win32" else "uv")
                uv = isolation.find_program("uv") or (str(found) if found.exists() else None)
                say(f"a team server is configured: installing {TEAM_LOCK_FILE.name} into {venv}")
                try:
                    installer = install_requirements(python, requirements(TEAM_LOCK_FILE), uv, TEAM_LOCK_FILE)
                except LauncherError as exc:
                    say(f"installing team memory's dependencies failed: {exc}; the next sync or session retries")
                    return False
                tmp = venv / (TEAM_READY_FILE + ".tmp")
                tmp.write_text(json.dumps({"lock": team_digest(), "installer": installer}) + "\n")
                os.replace(tmp, venv / TEAM_READY_FILE)
                say("team memory's dependencies ready")
        except locks.Busy:
            time.sleep(0.5)
    return True


def run(command: list[str], what: str) -> None:
    """One build step, in the runtime home: neither uv nor pip then reads a configuration of the project."""
    result = subprocess.run(command, stdin=subprocess.DEVNULL, stderr=subprocess.STDOUT, cwd=runtime_home(),
                            env=isolation.child_env())
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


def embed_backlog(python: Path) -> int:
    """Run the embedding worker (``ccmemory.embedding_worker``) on ``python``: what was captured and is not embedded.

    Run after a build (what the sessions captured while it ran) and, detached, by the Stop and
    SessionEnd hooks when memories wait and no process embeds them, so the next search finds them by
    meaning. The worker takes the data dir's embedder lock itself: one that finds it held asks its
    holder for one more round and exits.
    """
    return subprocess.run(isolation.python_command(str(python), "ccmemory.embedding_worker"), env=server_env(),
                          stdin=subprocess.DEVNULL).returncode


def sync_round(python: Path) -> int:
    """One bounded background round of ``ccmemory sync`` (SessionEnd starts it detached when a server is set).

    The command itself does nothing without a configured server, gives up when another round holds
    its lock, and records a failure for ``ccmemory sync status`` instead of printing it.
    """
    return subprocess.run(isolation.python_command(str(python), "ccmemory", "sync", "--background"), env=server_env(),
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode


def server_env() -> dict[str, str]:
    """The server's environment: the user's, made safe for the project's directory, the plugin's own
    source first on ``PYTHONPATH``."""
    return isolation.child_env(python_path=[str(SOURCE_DIR)])


def run_server(python: Path) -> int:
    """Replace this process by the server so Claude Code's signals and pipes reach it directly."""
    if not python.exists():
        raise LauncherError(f"the Python {python} does not exist (check CCMEMORY_PYTHON)")
    command = isolation.python_command(str(python), SERVER_MODULE)
    if sys.platform == "win32":
        try:
            return subprocess.call(command, env=server_env())
        except KeyboardInterrupt:
            return 0
    os.execve(str(python), command, server_env())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
