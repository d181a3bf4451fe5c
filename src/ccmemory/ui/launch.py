"""Serving the viewer: a loopback socket, uvicorn, and the browser pointed at the page.

The page's address carries the launch's token, and a process's command line is
visible to every local user (``ps``), so the browser is never started with it:
it opens a launch file only the user can read (0600, in the data directory's
private ``ui/`` folder), which forwards it to the address. The file is removed
when the viewer stops.
"""

from __future__ import annotations

import html
import os
import socket
import tempfile
import threading
import webbrowser
from pathlib import Path
from typing import Callable

from .. import paths

from .app import create_app
from .viewer import Viewer

HOST = "127.0.0.1"
#: Seconds uvicorn lets open event streams finish when the viewer is stopped.
SHUTDOWN_GRACE_SECONDS = 1


def bind(port: int = 0) -> socket.socket:
    """A listening socket on 127.0.0.1; port 0 lets the system pick a free one."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise OSError(f"Cannot listen on {HOST}:{port} ({exc.strerror or exc}); pick another --port, "
                      "or leave it out to use a free one") from None
    sock.listen(128)
    return sock


def page_url(sock: socket.socket, token: str, project_id: int | None = None) -> str:
    """The page's address; the token travels in the fragment, which browsers never send to the server."""
    port = sock.getsockname()[1]
    fragment = f"token={token}" + (f"&project={project_id}" if project_id is not None else "")
    return f"http://{HOST}:{port}/#{fragment}"


def serve(viewer: Viewer, sock: socket.socket, *, on_ready: Callable[[], None] = lambda: None) -> None:
    """Run until interrupted (Ctrl-C); ``on_ready`` is called once the server accepts requests."""
    import uvicorn

    from .. import vectors

    vectors.keep_in_memory = True  # a viewer searches many times: see vectors.keep_in_memory

    config = uvicorn.Config(create_app(viewer), log_level="warning", access_log=False,
                            timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS)
    server = uvicorn.Server(config)

    def wait_then_announce() -> None:
        while not server.started and not server.should_exit:
            threading.Event().wait(0.05)
        if server.started:
            on_ready()

    threading.Thread(target=wait_then_announce, name="ccmemory-ui-ready", daemon=True).start()
    try:
        server.run(sockets=[sock])
    finally:
        viewer.stop()


def write_launch_file(url: str) -> str:
    """A private HTML file that sends the browser to ``url``; returns its path."""
    folder = paths.ensure_private_dir(os.path.join(paths.data_dir(), "ui"))
    fd, path = tempfile.mkstemp(prefix="open-", suffix=".html", dir=folder)  # 0600
    target = html.escape(url, quote=True)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write('<!DOCTYPE html>\n<html><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">'
                     f'<meta http-equiv="refresh" content="0;url={target}"><title>ccmemory viewer</title></head>'
                     f'<body><p><a href="{target}">Open the ccmemory viewer</a></p></body></html>\n')
    return path


def remove_launch_file(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def open_browser(url: str) -> str | None:
    """Open the page in the user's browser through a launch file; the file's path, or None when no browser started.

    The caller removes the file (:func:`remove_launch_file`) when the viewer stops.
    """
    path = write_launch_file(url)
    try:
        opened = webbrowser.open(Path(path).as_uri())
    except webbrowser.Error:
        opened = False
    if not opened:
        remove_launch_file(path)
        return None
    return path
