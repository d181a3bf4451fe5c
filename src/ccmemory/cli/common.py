"""What every command shares: opening the store, the project option, output, exit codes.

Exit codes: 0 success, 1 the operation failed (not found, storage, model),
2 the input was wrong (click usage errors and validation errors).

Every command prints through :func:`echo` and :func:`emit_json`, never ``click.echo``: what
they print often holds stored text (tool output, fetched pages, file names of a cloned
repository), and a terminal obeys the escape sequences in it (OSC 52 writes the clipboard,
CSI rewrites the screen). So control, bidi and tag characters are shown as visible escapes
(``\\x1b``; :func:`ccmemory.quoting.visible`), and in JSON as ``\\uXXXX`` escapes, which decode
to the same strings.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any, Callable, Iterable, NoReturn, TypeVar

import click

from .. import db as database
from .. import excerpts, knowledge, projects, quoting, sessions
from ..errors import CCMemoryError, NotFoundError, ValidationError
from ..memories import Memory

F = TypeVar("F", bound=Callable[..., Any])
#: Exit status of a command stopped by Ctrl+C (or SIGTERM) after keeping what it had done: 128 + SIGINT.
INTERRUPTED_EXIT = 130


def default_project_dir() -> str:
    return os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()


project_option = click.option(
    "--project", "project_dir", type=click.Path(file_okay=False, exists=True), default=None,
    help="Project directory (default: $CLAUDE_PROJECT_DIR or the current directory).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")


def echo(message: Any = None, *, err: bool = False, nl: bool = True) -> None:
    """``click.echo`` with control, bidi and tag characters shown as visible escapes (see the module docstring)."""
    click.echo(None if message is None else quoting.visible(str(message)), err=err, nl=nl)


class CleanWriter:
    """A text stream whose writes go through ``clean`` first (:func:`quoting.visible`, :func:`quoting.json_visible`):
    standard output for commands that stream stored text rather than echo it."""

    def __init__(self, stream: Any, clean: Callable[[str], str]) -> None:
        self.stream = stream
        self.clean = clean

    def write(self, text: str) -> int:
        return self.stream.write(self.clean(text))


def echo_listed(lines: Iterable[str], listed: int, total: int, more: str) -> None:
    """Report lines on stderr, then "... and N more <more>" for the ``total - listed`` left out of them."""
    for line in lines:
        echo(line, err=True)
    if total > listed:
        echo(f"... and {total - listed} more {more}", err=True)


def emit_json(value: Any) -> None:
    """Print a value as JSON (orjson: fast, and it handles dataclass dicts with non-ASCII text).

    orjson escapes the C0 controls; the C1, bidi and tag characters it leaves raw are escaped too.
    orjson gives up on values nested more than 255 levels deep (metadata an older ccmemory stored
    from an import) and on text that is not UTF-8 (a lone surrogate): the standard library prints
    those, all ASCII, and what neither can print ends the command with one line saying so, not a
    traceback.
    """
    import orjson

    try:
        text = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError as exc:
        text = _standard_json(value, exc)
    click.echo(quoting.json_visible(text))


def _standard_json(value: Any, refused: TypeError) -> str:
    """``value`` as JSON by the standard library, for what orjson refused; :func:`fail` when it cannot either."""
    import json

    try:
        return json.dumps(value, indent=2, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        fail(f"The result cannot be printed as JSON ({one_line(refused, 120)}): a stored value in it is nested too "
             "deep or is no JSON value. Run the command without --json to read it as text.")


def load_settings() -> Any:
    """The settings as the hooks see them inside Claude Code: config.json under the plugin options.

    Claude Code gives hooks the plugin options (``userConfig``) as environment
    variables, but not the Bash tool or your shell; the command line reads them
    from Claude Code's own settings file instead.
    """
    from .. import config

    return config.load(environ={**config.claude_plugin_options(), **os.environ})


def open_db(*, vectors: bool = False) -> database.Database:
    """The database alone, for commands that address memories by id."""
    return database.connect(vectors=vectors)


def open_store(project_dir: str | None, *, vectors: bool = False) -> tuple[database.Database, int]:
    """The database and the id of the project the command works on."""
    db = open_db(vectors=vectors)
    return db, projects.project_id(db, project_dir or default_project_dir())


def search_embedder(db: database.Database, mode: str) -> Any:
    """For a search in ``mode``: the loaded model, or None for keywords only.

    A search embeds only its query, never the backlog (which can take minutes
    after a long session): items not embedded yet are still found by their
    keywords, the embedding worker is started for them (:mod:`ccmemory.embedding_worker`,
    detached) and a note says how many there are. None means keyword search (asked
    for, or vectors unavailable, which the search itself reports as a warning); a model
    that fails to load is a warning too.
    """
    if mode == "keyword" or not db.vectors_loaded:
        return None
    from .. import embeddings

    try:
        embedder = embeddings.get_embedder()
    except embeddings.ModelError as exc:
        echo(f"Warning: {exc}", err=True)
        return None
    if embeddings.pending_count(db, embedder.model_id):
        from .. import embedding_worker

        started = embedding_worker.start()
        unmatched = embeddings.pending_count(db, embedder.model_id, keyword_only=True)
        if unmatched:
            later = "they are being embedded in the background" if started else "`ccmemory embed` embeds them"
            echo(f"Note: {unmatched} items are not embedded yet and are matched by keywords only; {later}.", err=True)
    return embedder


def embed_in_background(db: database.Database) -> None:
    """After a command stored memories without vectors: start the embedding worker when anything waits; never waits.

    So what an import or a backfill brought in is found by meaning seconds later, without ``ccmemory embed``
    (:mod:`ccmemory.embedding_worker`; a running MCP server embeds it when it holds the worker's lock).
    """
    from .. import embedding_worker

    if embedding_worker.waiting(db):
        embedding_worker.start()


def report_search(result: Any, query: str, as_json: bool) -> bool:
    """Print a search's warnings, and its JSON or its "no results" line; True when text rows should follow."""
    for warning in result.warnings:
        echo(f"Warning: {warning}", err=True)
    if as_json:
        emit_json([hit.to_dict() for hit in result.hits])
        return False
    if not result.hits:
        echo(f"No results found for: {query}")
        return False
    return True


def one_line(exc: BaseException, limit: int = 300) -> str:
    """An error's message on one line, cut to ``limit`` characters (onnxruntime's run to several lines)."""
    return excerpts.one_line(str(exc), limit)


def fail(message: str, code: int = 1) -> NoReturn:
    echo(f"Error: {message}", err=True)
    sys.exit(code)


def handles_errors(command: F) -> F:
    """Turn ccmemory errors into a message on stderr and the documented exit code."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except ValidationError as exc:
            fail(str(exc), 2)
        except NotFoundError as exc:
            fail(str(exc), 1)
        except CCMemoryError as exc:
            fail(f"{exc}\nRun `ccmemory doctor` to check the installation.", 1)

    return wrapper  # type: ignore[return-value]


def preview(memory: Memory, width: int = 100) -> str:
    """A memory on one line, cut after a word: a session summary shows its request and outcome first."""
    return sessions.preview(memory.content, memory.source, width)


def describe(memory: Memory) -> str:
    """The head line of a memory in the CLI: knowledge reference, short id, sector/category, date, marks."""
    marks = "".join((" [SUPERSEDED]" if memory.is_superseded else "", " [DELETED]" if memory.is_deleted else ""))
    where = knowledge.reference(memory)
    return (f"{where + ' ' if where else ''}{memory.id[:8]} {memory.sector}/{memory.category} "
            f"{memory.created_at[:10]}{marks}")
