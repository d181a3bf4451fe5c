"""``ccmemory ui``: serve the memory viewer on 127.0.0.1 and open it in the browser."""

from __future__ import annotations

import click

from .. import projects
from .common import default_project_dir, echo, handles_errors, project_option


@click.command()
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port on 127.0.0.1 (0: a free one).")
@click.option("--no-open", "no_open", is_flag=True, help="Print the address instead of opening a browser.")
@click.option("--keyword-only", is_flag=True, help="Do not load the embedding model; search by keywords only.")
@project_option
@handles_errors
def ui(port: int, no_open: bool, keyword_only: bool, project_dir: str | None) -> None:
    """Browse, search, edit and delete memories in a local web page (Ctrl-C stops it).

    The server listens on 127.0.0.1 only and answers only requests carrying
    the token in the printed address, which changes at every launch.
    """
    from ..ui import launch
    from ..ui.viewer import Viewer

    try:
        sock = launch.bind(port)
    except OSError as exc:
        raise click.UsageError(str(exc)) from None
    viewer = Viewer(semantic=not keyword_only)
    project = projects.project_id(viewer.db, project_dir or default_project_dir(), create=False)
    url = launch.page_url(sock, viewer.token, project)
    launch_files: list[str] = []

    def ready() -> None:
        echo(f"ccmemory viewer: {url}")
        echo("Keep this address private: it carries the access token. Ctrl-C stops the viewer.")
        if no_open:
            return
        opened = launch.open_browser(url)  # through a private file: the token stays off the browser's command line
        if opened is None:
            echo("No browser could be started; open the address above yourself.")
        else:
            launch_files.append(opened)

    try:
        launch.serve(viewer, sock, on_ready=ready)
    finally:
        for path in launch_files:
            launch.remove_launch_file(path)


COMMANDS = [ui]
