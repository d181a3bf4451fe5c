"""The server's stdio transport: the SDK's ``stdio_server`` with a stdin reader that answers every request.

The SDK's reader validates each line with pydantic (jiter) and, when that fails, hands the exception to the
session, which drops it: a request nested past jiter's depth limit (:data:`JSON_MAX_DEPTH`), one holding a lone
surrogate (``"\\ud83d"``) or an integer over 4300 digits, one whose ``params`` is not an object or whose ``id``
is neither a string nor an integer got no answer, and the client waited until its own timeout. This reader
answers each such line with a JSON-RPC error naming what is wrong, for the request's ``id`` when one can be
recovered (-32700 when the line is not JSON at all, -32600 for a message that is not a request, -32602 for its
params); a notification or a client's response that cannot be read is dropped with a log line, as the
protocol allows no answer to it. The answers go through the same write stream as the session's, so the one
writer task writes every message whole.

A line is read in pieces (:data:`CHUNK_BYTES`) and never held past :data:`MAX_LINE_BYTES`: a longer one is read
on and dropped, keeping only its first and last :data:`PEEK_CHARS` characters to find its ``id``, so it costs
bounded memory however long it is; a line holding more than :data:`MAX_CONTAINERS` objects and arrays is refused
before it is parsed (parsed, 8 MB of ``{}`` would take some 400 MB). Either is answered when its ``id`` is found.
Streams, stdio claim (fd 0 on the null device, fd 1 on stderr while serving)
and the writer are the SDK's own (:mod:`mcp.server.stdio`).
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, BinaryIO, cast

import anyio
import anyio.lowlevel
import anyio.to_thread
import mcp_types as types
from mcp.shared._context_streams import ContextReceiveStream, ContextSendStream, create_context_streams
from mcp.shared.message import SessionMessage

try:  # the SDK's stdio claim (mcp 2.x); without it, the process's own streams are served in place
    from mcp.server.stdio import _claim_fd, _open_stdin_diversion, _open_stdout_diversion, _UnownedTextWrapper
except ImportError:  # pragma: no cover - an SDK that moved them
    _claim_fd = None  # type: ignore[assignment]
    from io import TextIOWrapper as _UnownedTextWrapper  # type: ignore[assignment]

#: The longest line (bytes, without its newline) read as a message; a longer one is refused unread.
MAX_LINE_BYTES = 8 * 1024 * 1024
#: How much of stdin one read takes.
CHUNK_BYTES = 256 * 1024
#: Characters kept of the start and of the end of a line too long or too deep to parse, to find its ``id``.
PEEK_CHARS = 64 * 1024
#: The most objects and arrays (outside strings) a message may hold: parsed, each costs some 100 bytes, and a tool
#: call's arguments hold a handful (a line of 8 MB of ``{}`` would take some 400 MB).
MAX_CONTAINERS = 100_000
#: The deepest nesting the SDK's JSON parser (jiter) takes: the message object is level 1.
JSON_MAX_DEPTH = 199
#: Digits of the longest integer either JSON parser takes (Python's ``int`` limit; jiter refuses longer ones too).
MAX_INT_DIGITS = 4300

log = logging.getLogger("ccmemory.mcp")

RequestId = int | str


@asynccontextmanager
async def stdio_server(max_line: int = MAX_LINE_BYTES
                       ) -> AsyncIterator[tuple[ContextReceiveStream[SessionMessage | Exception],
                                                ContextSendStream[SessionMessage]]]:
    """Serve MCP over the process's stdin and stdout, as :func:`mcp.server.stdio.stdio_server` does, through
    :class:`LineReader`."""
    restore_stdin: Callable[[], None] | None = None
    restore_stdout: Callable[[], None] | None = None
    try:
        if _claim_fd is not None:
            stdin_buffer, restore_stdin = _claim_fd(0, sys.stdin, "rb", _open_stdin_diversion)
            stdout_buffer, restore_stdout = _claim_fd(1, sys.stdout, "wb", _open_stdout_diversion)
        else:  # pragma: no cover
            stdin_buffer, stdout_buffer = sys.stdin.buffer, sys.stdout.buffer
        stdout = anyio.wrap_file(_UnownedTextWrapper(stdout_buffer, encoding="utf-8"))

        read_stream_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
        write_stream, write_stream_reader = create_context_streams[SessionMessage](0)
        reader = LineReader(stdin_buffer, read_stream_writer, write_stream, max_line)

        async def stdout_writer() -> None:
            try:
                async with write_stream_reader:
                    async for session_message in write_stream_reader:
                        line = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                        await stdout.write(line + "\n")
                        await stdout.flush()
            except anyio.ClosedResourceError:  # pragma: no cover
                await anyio.lowlevel.checkpoint()

        async with anyio.create_task_group() as group:
            group.start_soon(reader.run)
            group.start_soon(stdout_writer)
            yield read_stream, write_stream
    finally:
        if restore_stdout is not None:
            restore_stdout()
        if restore_stdin is not None:
            restore_stdin()


class LineReader:
    """Reads stdin line by line within :data:`MAX_LINE_BYTES`; passes the valid messages on to the session and
    answers the others itself (see the module's text)."""

    def __init__(self, stdin: BinaryIO, messages: ContextSendStream[SessionMessage | Exception],
                 answers: ContextSendStream[SessionMessage], max_line: int = MAX_LINE_BYTES) -> None:
        self._read: Callable[[int], bytes] = getattr(stdin, "read1", None) or cast(Any, stdin).read
        self.messages = messages
        self.answers = answers
        self.max_line = max_line

    async def run(self) -> None:
        """Read until EOF, then close the session's read stream."""
        try:
            async with self.messages:
                await self._lines()
        except anyio.ClosedResourceError:  # pragma: no cover
            await anyio.lowlevel.checkpoint()

    async def _lines(self) -> None:
        pending = bytearray()
        long_line: _LongLine | None = None
        while True:
            chunk = await anyio.to_thread.run_sync(self._read, CHUNK_BYTES)
            if not chunk:
                break
            start = 0
            while True:
                end = chunk.find(b"\n", start)
                piece = chunk[start:] if end < 0 else chunk[start:end]
                if long_line is not None:
                    long_line.feed(piece)
                elif len(pending) + len(piece) > self.max_line:
                    long_line = _LongLine(bytes(pending))
                    long_line.feed(piece)
                    pending = bytearray()
                else:
                    pending += piece
                if end < 0:
                    break
                start = end + 1
                if long_line is not None:
                    await self.too_long(long_line)
                    long_line = None
                else:
                    line, pending = bytes(pending), bytearray()
                    await self.line(line)
        if long_line is not None:
            await self.too_long(long_line)
        elif pending.strip():
            await self.line(bytes(pending))

    async def line(self, raw: bytes) -> None:
        """One line of at most :data:`MAX_LINE_BYTES`: a message for the session, or an answer of ours."""
        text = raw.decode("utf-8", "replace")
        if not text.strip():
            return
        if _too_many_containers(raw):
            request_id = peek_id(text[:PEEK_CHARS], text[-PEEK_CHARS:])
            await self.refuse(text, Problem(request_id, types.INVALID_REQUEST, "Invalid Request: the message holds "
                                            f"more than {MAX_CONTAINERS:,} objects and arrays",
                                            drop=request_id is None))
            return
        try:
            message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
        except Exception as exc:  # pydantic's ValidationError, whatever jiter or a model refused
            await self.refuse(text, diagnose(text, exc))
            return
        if isinstance(message, types.JSONRPCNotification) and '"id"' in text:
            # pydantic reads a request whose id is not a string or an integer as a notification (extra keys are
            # ignored): the client still waits for an answer.
            problem = diagnose(text, None)
            if problem is not None:
                await self.refuse(text, problem)
                return
        await self.messages.send(SessionMessage(message))

    async def too_long(self, line: _LongLine) -> None:
        size = f"{line.size:,} bytes, over the {self.max_line:,}-byte limit of this server"
        request_id = peek_id(line.head.decode("utf-8", "replace"), line.tail.decode("utf-8", "replace"))
        if request_id is None:
            log.warning("dropped a message of %s (no id found to answer)", size)
            return
        await self.refuse("", Problem(request_id, types.INVALID_REQUEST, f"Invalid Request: the message is {size}"))

    async def refuse(self, text: str, problem: Problem | None) -> None:
        """Answer ``problem`` as a JSON-RPC error, or log the line dropped when there is nobody to answer."""
        if problem is None or problem.drop:
            why = problem.message if problem is not None else "it cannot be read"
            log.warning("dropped a message that is not a request (%s): %s", why, _excerpt(text))
            return
        log.warning("answered request %r with error %d: %s", problem.request_id, problem.code, problem.message)
        error = types.JSONRPCError(jsonrpc="2.0", id=problem.request_id,
                                   error=types.ErrorData(code=problem.code, message=problem.message))
        try:
            await self.answers.send(SessionMessage(error))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):  # the session is over
            pass


_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


def _too_many_containers(raw: bytes) -> bool:
    """Whether the line holds more than :data:`MAX_CONTAINERS` objects and arrays: a count of the brackets, and
    when it is over, a count of those outside strings."""
    if raw.count(b"{") + raw.count(b"[") <= MAX_CONTAINERS:
        return False
    outside = _STRING.sub(b"", raw)
    return outside.count(b"{") + outside.count(b"[") > MAX_CONTAINERS


class _LongLine:
    """What is kept of a line over the limit: its size, its first and its last :data:`PEEK_CHARS` bytes."""

    def __init__(self, start: bytes) -> None:
        self.head = start[:PEEK_CHARS]
        self.tail = start[-PEEK_CHARS:]
        self.size = len(start)

    def feed(self, piece: bytes) -> None:
        self.size += len(piece)
        if len(self.head) < PEEK_CHARS:
            self.head += piece[:PEEK_CHARS - len(self.head)]
        self.tail = (self.tail + piece)[-PEEK_CHARS:]


class Problem:
    """Why a line is not served: the JSON-RPC error to answer (``request_id`` None when it cannot be told), or
    ``drop`` when the line is no request (a notification, a response) and so gets no answer."""

    __slots__ = ("request_id", "code", "message", "drop")

    def __init__(self, request_id: RequestId | None, code: int, message: str, drop: bool = False) -> None:
        self.request_id = request_id
        self.code = code
        # Never a lone surrogate on the wire: the writer encodes strictly and would fail.
        self.message = message.encode("utf-8", "replace").decode("utf-8")
        self.drop = drop


class _BigInt:
    """An integer literal too long to convert (see :data:`MAX_INT_DIGITS`)."""

    def __init__(self, digits: int) -> None:
        self.digits = digits


def _parse_int(literal: str) -> int | _BigInt:
    digits = len(literal.lstrip("-"))
    return int(literal) if digits <= MAX_INT_DIGITS else _BigInt(digits)


def diagnose(text: str, error: Exception | None) -> Problem | None:
    """Why the line ``text`` is not a message the SDK takes (``error``: what its validation said, when it failed);
    None when nothing is wrong after all."""
    try:
        value = json.loads(text, parse_int=_parse_int)
    except RecursionError:
        return Problem(_valid_id(peek_id(text[:PEEK_CHARS], text[-PEEK_CHARS:])), types.INVALID_REQUEST,
                       f"Invalid Request: the message is nested more than {JSON_MAX_DEPTH} levels deep")
    except ValueError as exc:
        return Problem(_valid_id(peek_id(text[:PEEK_CHARS], text[-PEEK_CHARS:])), types.PARSE_ERROR,
                       f"Parse error: the message is not JSON ({str(exc)[:200]})")
    if not isinstance(value, dict):
        return Problem(None, types.INVALID_REQUEST, "Invalid Request: a message must be a JSON object "
                                                    "(batches are not supported)")
    if error is None and "id" not in value:
        return None
    method, params = value.get("method"), value.get("params")
    if "method" not in value:
        if "result" in value or "error" in value:
            return Problem(None, 0, "a response that cannot be read", drop=True)
        if "id" not in value:
            return Problem(None, 0, "no method and no id", drop=True)
    if "id" not in value:
        return Problem(None, 0, f"a notification ({_name(method)}) that cannot be read: "
                                f"{_reason(value, params, error)}", drop=True)
    request_id = _valid_id(value["id"])
    if request_id is None:
        return Problem(None, types.INVALID_REQUEST, "Invalid Request: the id must be a string or an integer")
    if "method" not in value or not isinstance(method, str):
        return Problem(request_id, types.INVALID_REQUEST, "Invalid Request: the method must be a string")
    if value.get("jsonrpc") != "2.0":
        return Problem(request_id, types.INVALID_REQUEST, 'Invalid Request: jsonrpc must be "2.0"')
    if error is None:
        return None
    code, reason = _reason(value, params, error)
    prefix = "Invalid params" if code == types.INVALID_PARAMS else "Invalid Request"
    return Problem(request_id, code, f"{prefix}: {reason}")


def _reason(value: dict[str, Any], params: Any, error: Exception | None) -> tuple[int, str]:
    """What makes the parsed message ``value`` unreadable to the SDK: the error code and the words."""
    if "params" in value and not isinstance(params, dict):
        return types.INVALID_PARAMS, "params must be an object"
    arguments = params.get("arguments") if isinstance(params, dict) else None
    if isinstance(arguments, dict | list) and _walk(arguments)[0] > JSON_MAX_DEPTH - 2:
        return types.INVALID_PARAMS, f"arguments nested more than {JSON_MAX_DEPTH - 2} levels deep"
    depth, surrogate, big = _walk(value)
    in_params = (surrogate or big) and _walk(params)[1:] != (False, False)
    code, where = (types.INVALID_PARAMS, "in params") if in_params else (types.INVALID_REQUEST, "in the message")
    if depth > JSON_MAX_DEPTH:
        return types.INVALID_REQUEST, f"the message is nested more than {JSON_MAX_DEPTH} levels deep"
    if surrogate:
        return code, f"a string {where} holds a lone surrogate (half of a UTF-16 pair), which is not valid Unicode"
    if big:
        return code, f"an integer {where} has more than {MAX_INT_DIGITS} digits"
    if error is None:
        return types.INVALID_REQUEST, "the message is not a valid JSON-RPC request"
    return types.INVALID_REQUEST, _first_error(error)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _walk(value: Any) -> tuple[int, bool, bool]:
    """The nesting depth of ``value`` (a scalar is 0), whether a string in it (key or value) holds a lone
    surrogate, whether it holds an integer too long to read. Without recursion: it may be deep."""
    depth, surrogate, big = 0, False, False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            depth = max(depth, level)
            for key, inner in item.items():
                surrogate = surrogate or bool(_SURROGATE.search(key))
                stack.append((inner, level + 1))
        elif isinstance(item, list):
            depth = max(depth, level)
            stack.extend((inner, level + 1) for inner in item)
        elif isinstance(item, str):
            surrogate = surrogate or bool(_SURROGATE.search(item))
        elif isinstance(item, _BigInt):
            big = True
    return depth, surrogate, big


def _first_error(error: Exception) -> str:
    errors = getattr(error, "errors", None)
    try:
        first = errors()[0] if callable(errors) else None
    except Exception:  # only words for the answer
        first = None
    if isinstance(first, dict):
        where = ".".join(str(part) for part in first.get("loc", ()))
        return f"{where + ': ' if where else ''}{first.get('msg', '')}"[:300]
    return f"{type(error).__name__}"


def _name(method: Any) -> str:
    return method[:100] if isinstance(method, str) else "no method"


def _valid_id(request_id: Any) -> RequestId | None:
    """``request_id`` when a JSON-RPC id can be it (a string without lone surrogates, or an integer), else None."""
    if isinstance(request_id, str) and not _SURROGATE.search(request_id):
        return request_id
    if isinstance(request_id, int) and not isinstance(request_id, bool):
        return request_id
    return None


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]]')
_COLON = re.compile(r"\s*:\s*")
_TAIL_ID = re.compile(r'[{,]\s*"id"\s*:\s*(-?\d{1,30}|"(?:[^"\\]|\\.){0,1000}")\s*\}\s*$')


def peek_id(head: str, tail: str) -> RequestId | None:
    """The ``id`` of a message seen only by its start ``head`` and its end ``tail``: a top-level ``"id"`` key
    in the head, else one just before the closing brace (where Claude Code's SDK writes it); None if neither."""
    if head.lstrip().startswith("{"):
        depth = 0
        for match in _TOKEN.finditer(head):
            token = match.group()
            if token[0] in "{[":
                depth += 1
            elif token[0] in "}]":
                depth -= 1
                if depth <= 0:
                    break
            elif depth == 1 and token == '"id"':
                colon = _COLON.match(head, match.end())
                if colon is not None:
                    found = _literal(head, colon.end())
                    if found is not None:
                        return found
    at_end = _TAIL_ID.search(tail)
    return _literal(at_end.group(1), 0) if at_end else None


def _literal(text: str, start: int) -> RequestId | None:
    try:
        value = json.JSONDecoder().raw_decode(text, start)[0]
    except (ValueError, RecursionError):
        return None
    return _valid_id(value)


def _excerpt(text: str) -> str:
    return repr(text[:200]) + (f" … ({len(text):,} characters)" if len(text) > 200 else "")
