"""Serving the viewer: a loopback socket, uvicorn, and the browser pointed at the page."""

from __future__ import annotations

import socket
import threading
import webbrowser
from typing import Callable

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


def open_browser(url: str) -> bool:
    """Open the page in the user's browser; False when none could be started."""
    try:
        return webbrowser.open(url)
    except webbrowser.Error:
        return False
