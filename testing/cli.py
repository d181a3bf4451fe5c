"""The ``ccmemory`` command line for tests: in this process through click's runner, or as a real process.

:func:`invoke` is for what the command does (its output, JSON, exit codes): a subprocess would
prove nothing more and costs an interpreter start and the imports. It runs ``ccmemory.cli`` with
the environment :func:`testing.env.isolated_env` builds (the whole of ``os.environ`` is that
environment while it runs, restored after) in ``cwd``, closes the connections the command left
open as a process exit would, and answers with the ``CompletedProcess`` a real run gives, so a
test reads it the same way either way. Only for a test that does not open the store itself: the
CLI's apsw carries its own SQLite, and two SQLite libraries with the same file open in one process
drop each other's POSIX locks (SQLite's "how to corrupt", multiple copies of SQLite) — a test
that reads the store with the standard library's ``sqlite3`` runs the CLI with :func:`spawn`.

:func:`spawn` runs a real process, for where the process is the point: interpreter isolation
(``-I``/``-P``, what is on ``sys.path``), the exit code of the real binary, signals, the plugin's
``bin/ccmemory``, the security tests. :func:`on_terminal` runs one on a pseudo-terminal.
"""

from __future__ import annotations

import contextlib
import os
import pty
import select
import subprocess
import sys
import time
import traceback
from pathlib import Path

import apsw
from click.testing import CliRunner

from testing.env import isolated_env

#: What ``python -m ccmemory`` calls itself in its usage lines; :func:`invoke` uses the same.
PROG_NAME = "python -m ccmemory"
#: The help width of a run whose stdout is not a terminal.
TERMINAL_WIDTH = 80
MODULE = [sys.executable, "-m", "ccmemory"]


def invoke(home: Path | None, cwd: Path | None, *args: str, stdin: str | None = None,
           **env: str) -> subprocess.CompletedProcess[str]:
    """``ccmemory *args`` in this process, in ``cwd`` (None: this process's), with ``isolated_env(home, **env)`` as
    its environment.

    An exception the command lets escape becomes what the real process gives: exit 1, the traceback on stderr.
    """
    from ccmemory.cli import cli

    wanted = isolated_env(home, **env)
    overlay: dict[str, str | None] = {key: None for key in os.environ if key not in wanted}
    overlay.update(wanted)
    before = {id(connection) for connection in apsw.connections()}
    with contextlib.chdir(cwd or os.getcwd()):
        result = CliRunner(env=overlay).invoke(cli, list(args), input=stdin, prog_name=PROG_NAME,
                                               terminal_width=TERMINAL_WIDTH)
    for connection in apsw.connections():
        if id(connection) not in before:
            connection.close(True)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
    return subprocess.CompletedProcess([*MODULE, *args], result.exit_code, result.stdout, stderr)


def spawn(home: Path | None, cwd: Path | None, *args: str, stdin: str | None = None, program: list[str] | None = None,
          timeout: float = 180, **env: str) -> subprocess.CompletedProcess[str]:
    """``program *args`` (default ``python -m ccmemory``) as a real process in ``cwd`` (None: this process's), with
    ``isolated_env(home, **env)``; ``stdin`` is its input (none given: it reads an empty pipe)."""
    return subprocess.run([*(program or MODULE), *args], cwd=cwd, env=isolated_env(home, **env),
                          input=stdin if stdin is not None else "", capture_output=True, text=True, timeout=timeout)


def on_terminal(home: Path | None, cwd: Path, *args: str, answer: str | None = None, wait_for: bytes = b"",
                program: list[str] | None = None, **env: str) -> tuple[int, str]:
    """Run the CLI (``program``, default ``python -m ccmemory``) with a pseudo-terminal as stdin/stdout/stderr;
    type ``answer`` once ``wait_for`` shows."""
    leader, follower = pty.openpty()
    process = subprocess.Popen([*(program or MODULE), *args], cwd=cwd, env=isolated_env(home, **env),
                               stdin=follower, stdout=follower, stderr=follower, close_fds=True)
    os.close(follower)
    output = b""
    answered = answer is None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
            if not answered and wait_for in output:
                os.write(leader, answer.encode() + b"\n")
                answered = True
        elif process.poll() is not None:
            break
    if process.poll() is None:
        process.kill()
    process.wait(timeout=30)
    os.close(leader)
    return process.returncode, output.decode(errors="replace")
