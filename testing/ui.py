"""Starting the real ``ccmemory ui`` as a subprocess, calling its API and reading its event stream."""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import selectors
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from testing.cli import MODULE
from testing.env import isolated_env

START_DEADLINE_SECONDS = 60
EVENT_DEADLINE_SECONDS = 30


@dataclass
class RunningUI:
    url: str
    port: int
    token: str
    process: subprocess.Popen

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextlib.contextmanager
def running_ui(home: Path, project_dir: Path, *, keyword_only: bool = True) -> Iterator[RunningUI]:
    """``ccmemory ui --no-open`` for one test; stopped with Ctrl-C (SIGINT) as a user would.

    ``keyword_only`` spares the tests that do not search the embedding model's load.
    """
    process = subprocess.Popen(
        [*MODULE, "ui", "--no-open", "--project", str(project_dir),
         *(["--keyword-only"] if keyword_only else [])],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=isolated_env(home, PYTHONUNBUFFERED="1"),
        cwd=str(project_dir), text=True,
    )
    try:
        yield _wait_for_address(process)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_for_address(process: subprocess.Popen) -> RunningUI:
    selector = selectors.DefaultSelector()
    assert process.stdout is not None
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + START_DEADLINE_SECONDS
    seen = []
    while time.monotonic() < deadline:
        if not selector.select(timeout=0.5):
            if process.poll() is not None:
                break
            continue
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line)
        found = re.search(r"(http://127\.0\.0\.1:(\d+)/#token=([\w-]+)\S*)", line)
        if found:
            return RunningUI(found.group(1), int(found.group(2)), found.group(3), process)
    raise AssertionError(f"ccmemory ui printed no address within {START_DEADLINE_SECONDS} s: {''.join(seen)}")


def api_request(ui: RunningUI, method: str, path: str, body: Any = None, *, token: str | None = None) -> Any:
    request = urllib.request.Request(
        ui.base + path, method=method, data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token or ui.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def api_get(ui: RunningUI, path: str, *, token: str | None = None) -> Any:
    return api_request(ui, "GET", path, token=token)


def events_until(ui: RunningUI, action: Callable[[], Any], *, wanted: str) -> list[tuple[str, dict[str, Any]]]:
    """Open the event stream, wait for ``ready``, run ``action``, read until an event named ``wanted``."""
    connection = http.client.HTTPConnection("127.0.0.1", ui.port, timeout=EVENT_DEADLINE_SECONDS)
    connection.request("GET", f"/api/events?token={ui.token}")
    response = connection.getresponse()
    assert response.status == 200 and response.getheader("content-type").startswith("text/event-stream")
    messages: list[tuple[str, dict[str, Any]]] = []
    name = ""
    deadline = time.monotonic() + EVENT_DEADLINE_SECONDS
    try:
        while time.monotonic() < deadline:
            line = response.readline().decode().rstrip("\n")
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                messages.append((name, json.loads(line[6:])))
                if name == "ready":
                    action()
                elif name == wanted:
                    return messages
    finally:
        connection.close()
    raise AssertionError(f"no {wanted!r} event within {EVENT_DEADLINE_SECONDS} s; got {messages}")
