"""The server's stdin reader (:mod:`ccmemory.mcp.transport`): every request the SDK cannot validate gets an answer,
a line over the size cap is read in bounded memory, and the server answers the next request."""

from __future__ import annotations

import json
import select
import subprocess
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

from ccmemory.mcp import transport
from testing.mcp import server_command, server_env

INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": {},
              "clientInfo": {"name": "claude-code", "version": "2.1.330"}}


class Wire:
    """The server process spoken to in raw bytes, one line at a time."""

    def __init__(self, home: Path, project_dir: Path) -> None:
        self.process = subprocess.Popen(server_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env=server_env(home, project_dir), cwd=project_dir)

    def send(self, raw: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(raw + b"\n")
        self.process.stdin.flush()

    def receive(self, timeout: float = 60) -> dict[str, Any] | None:
        """The next message, or None when none comes within ``timeout`` seconds."""
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.process.stdout.readline()
        assert line, "server closed stdout"
        return json.loads(line)

    def call(self, request_id: int, arguments: bytes, name: str = "memory_add") -> bytes:
        return b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}' % (
            request_id, name.encode(), arguments)

    def alive(self, request_id: int) -> bool:
        """Whether the server still answers a real call."""
        self.send(self.call(request_id, b"{}", "memory_status"))
        answer = self.receive()
        return answer is not None and answer["id"] == request_id and "result" in answer


@pytest.fixture
def wire(home: Path, project_dir: Path) -> Iterator[Wire]:
    server = Wire(home, project_dir)
    server.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE}).encode())
    assert server.receive() is not None
    server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    yield server
    if server.process.poll() is None:
        server.process.kill()
    server.process.communicate()


def test_requests_the_sdk_cannot_validate_are_answered_and_the_server_goes_on(wire: Wire) -> None:
    cases = [
        (wire.call(10, b'{"content":"deep","tags":' + b"[" * 250 + b"]" * 250 + b"}"), 10, -32602, "nested more than"),
        (wire.call(11, b'{"content":"lone \\ud83d"}'), 11, -32602, "lone surrogate"),
        (wire.call(12, b'{"limit":' + b"9" * 4301 + b"}", "memory_list"), 12, -32602, "4300 digits"),
        (wire.call(13, b'{"content":' + b"[" * 5000 + b"]" * 5000 + b"}"), 13, -32600, "nested more than"),
        (b'{"jsonrpc":"2.0","id":14,"method":"tools/call","params":[1]}', 14, -32602, "params must be an object"),
        (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', None, -32600, "id must be a string or an integer"),
        (b'{"jsonrpc":"2.0","id":15,"method":"ping","params":{', 15, -32700, "not JSON"),
        (b"hello", None, -32700, "not JSON"),
    ]
    for number, (line, request_id, code, words) in enumerate(cases):
        wire.send(line)
        answer = wire.receive()
        assert answer is not None, line[:80]
        assert answer["id"] == request_id and answer["error"]["code"] == code, answer
        assert words in answer["error"]["message"], answer
        assert wire.alive(100 + number)
    wire.send(b'{"jsonrpc":"2.0","method":"notifications/x","params":{"a":"\\udc00"}}')  # no id: dropped, logged
    wire.send(b"{}")
    assert wire.alive(200)
    wire.process.stdin.close()  # type: ignore[union-attr]
    wire.process.stdin = None
    _, err = wire.process.communicate(timeout=30)
    assert b"Traceback" not in err and b"dropped a message" in err


def test_a_line_over_the_cap_is_refused_with_its_id_and_the_server_goes_on(wire: Wire) -> None:
    padding = b"a" * (transport.MAX_LINE_BYTES + 1024)
    head = b'{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"memory_add","arguments":{"content":"'
    wire.send(head + padding + b'"}}}')
    answer = wire.receive()
    assert answer is not None and answer["id"] == 21 and "limit" in answer["error"]["message"]
    # Claude Code's SDK writes the id last: it is found at the end of the line.
    wire.send(b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"memory_add","arguments":{"content":"'
              + padding + b'"}},"id":22}')
    answer = wire.receive()
    assert answer is not None and answer["id"] == 22 and answer["error"]["code"] == -32600
    # 50 MB of {} and no id anywhere: dropped, and the server still answers.
    wire.send(b'{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"tags":['
              + b",".join([b"{}"] * (17 * 2**20)) + b"]}}}")
    assert wire.alive(23)
    # Under the cap but millions of objects: refused before it is parsed.
    wire.send(wire.call(24, b'{"content":"x","tags":[' + b",".join([b"{}"] * 2_000_000) + b"]}"))
    answer = wire.receive()
    assert answer is not None and answer["id"] == 24 and "objects and arrays" in answer["error"]["message"]
    assert wire.alive(25)


class _Endless:
    """A stdin that yields one line of ``size`` bytes of ``{}`` and then EOF, never holding it whole."""

    def __init__(self, prefix: bytes, size: int, suffix: bytes) -> None:
        self.parts = [prefix, size, suffix + b"\n"]

    def read1(self, limit: int) -> bytes:
        while self.parts:
            part = self.parts[0]
            if isinstance(part, int):
                if part <= 0:
                    self.parts.pop(0)
                    continue
                taken = min(limit - limit % 3, part)
                self.parts[0] = part - taken
                return b"{}," * (taken // 3)
            self.parts.pop(0)
            return part
        return b""


def _read_all(stdin: Any, max_line: int = transport.MAX_LINE_BYTES) -> tuple[list[Any], list[Any]]:
    """What the reader hands the session, and what it answers itself, for the lines of ``stdin``."""
    passed: list[Any] = []
    answered: list[Any] = []

    async def main() -> None:
        messages_in, messages_out = create_context_streams[SessionMessage | Exception](100)
        answers_in, answers_out = create_context_streams[SessionMessage](100)
        reader = transport.LineReader(stdin, messages_in, answers_in, max_line)
        async with answers_in:
            await reader.run()
        async for item in messages_out:
            passed.append(item)
        async for item in answers_out:
            answered.append(item.message)

    anyio.run(main)
    return passed, answered


def test_an_endless_line_is_read_in_bounded_memory() -> None:
    size = 60 * 2**20
    stdin = _Endless(b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"x":[', size, b"{}]}}}")
    tracemalloc.start()
    try:
        passed, answered = _read_all(stdin)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert passed == [] and len(answered) == 1
    assert isinstance(answered[0], types.JSONRPCError) and answered[0].id == 7
    assert f"{size + 80:,}"[:3] in answered[0].error.message and "limit" in answered[0].error.message
    assert peak < 3 * transport.MAX_LINE_BYTES, peak  # the cap and its copies, never the 60 MB line


class _Lines:
    def __init__(self, *lines: bytes) -> None:
        self.data = b"".join(line + b"\n" for line in lines)

    def read1(self, limit: int) -> bytes:
        chunk, self.data = self.data[:7], self.data[7:]  # tiny reads: lines are put together across them
        return chunk


def test_valid_messages_pass_whole_and_the_others_are_answered_in_order() -> None:
    passed, answered = _read_all(_Lines(
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
        b"",
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        b'{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":{"s":"\\ud83d"}}}',
        b'{"jsonrpc":"2.0","id":2,"result":{"x":"\\udfff"}}',  # a response: never answered
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{"s":"\\ud83d\\ude00"}}}',
    ))
    assert [item.message.id if isinstance(item.message, types.JSONRPCRequest) else item.message.method
            for item in passed] == [1, "notifications/initialized", 3]
    assert [(error.id, error.error.code) for error in answered] == [("a", -32602)]


def test_the_id_of_a_line_seen_only_in_part() -> None:
    assert transport.peek_id('{"jsonrpc":"2.0","params":{"id":3,"x":"{\\"id\\":4"},"id":7,"method":"x","p', "") == 7
    assert transport.peek_id('{"params":{"id":3}', ',"method":"a","id":"abc"}') == "abc"
    assert transport.peek_id('{"params":{"id":3}', '"x":{"id":5}}') is None
    assert transport.peek_id('{"id":{"a":1}', "") is None
    assert transport.peek_id("[", "") is None
