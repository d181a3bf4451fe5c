"""A small fake of the Anthropic Messages API on 127.0.0.1, for driving the real Claude Code CLI offline.

Point ``ANTHROPIC_BASE_URL`` at ``FakeAnthropic.url``. Every request body is recorded. The
agent's requests (those offering the ``Bash`` tool) are answered from ``script``: a list whose
n-th entry answers when n assistant turns are already in the conversation (the last entry
repeats), or a function of the request body. Any other request (a title, a summary, a quota
probe) gets ``side_text``. Replies stream as server-sent events when the request asks for it.
``delay`` (seconds, default 0) holds each agent reply back, as a model's thinking time would.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Block = dict[str, Any]
Script = list[list[Block]] | Callable[[dict[str, Any]], list[Block]]


def tool_use(name: str, **tool_input: Any) -> Block:
    return {"type": "tool_use", "name": name, "input": tool_input}


def text(value: str) -> Block:
    return {"type": "text", "text": value}


class FakeAnthropic:
    def __init__(self, script: Script, side_text: str = "Fake summary.", delay: float = 0.0) -> None:
        self.script = script
        self.side_text = side_text
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "FakeAnthropic":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def agent_requests(self) -> list[dict[str, Any]]:
        return [body for body in self.requests if _is_agent(body)]

    def reply(self, body: dict[str, Any]) -> tuple[list[Block], str]:
        with self._lock:
            self.requests.append(body)
            if not _is_agent(body):
                return [text(self.side_text)], "end_turn"
            if callable(self.script):
                blocks = [dict(b) for b in self.script(body)]
            else:
                turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
                blocks = [dict(b) for b in self.script[min(turn, len(self.script) - 1)]]
            for block in blocks:
                if block["type"] == "tool_use":
                    block.setdefault("id", f"toolu_fake{next(self._ids)}")
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        return blocks, stop


def offered_tools(body: dict[str, Any]) -> list[str]:
    return [tool.get("name", "") for tool in body.get("tools") or []]


def tool_results(body: dict[str, Any]) -> list[Block]:
    """The tool_result blocks of the conversation so far, oldest first."""
    return [block for message in body.get("messages", []) if isinstance(message.get("content"), list)
            for block in message["content"] if block.get("type") == "tool_result"]


def tool_result(body: dict[str, Any], tool_use_id: str) -> Block:
    """The one tool_result answering ``tool_use_id`` in the conversation."""
    [found] = [block for block in tool_results(body) if block["tool_use_id"] == tool_use_id]
    return found


def _is_agent(body: dict[str, Any]) -> bool:
    return "Bash" in offered_tools(body)


def _handler(fake: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if "count_tokens" in self.path:
                self._json({"input_tokens": 100})
                return
            if fake.delay and _is_agent(body):
                time.sleep(fake.delay)
            blocks, stop = fake.reply(body)
            message = {
                "id": f"msg_fake{next(fake._ids)}", "type": "message", "role": "assistant",
                "model": body.get("model", "fake"), "content": blocks, "stop_reason": stop,
                "stop_sequence": None, "usage": {"input_tokens": 100, "output_tokens": 20},
            }
            if body.get("stream"):
                self._stream(message)
            else:
                self._json(message)

        def _json(self, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, message: dict[str, Any]) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.end_headers()
            start = dict(message, content=[], stop_reason=None, usage={"input_tokens": 100, "output_tokens": 1})
            self._event("message_start", {"type": "message_start", "message": start})
            for index, block in enumerate(message["content"]):
                if block["type"] == "tool_use":
                    opening = dict(block, input={})
                    delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                else:
                    opening = {"type": "text", "text": ""}
                    delta = {"type": "text_delta", "text": block["text"]}
                self._event("content_block_start", {"type": "content_block_start", "index": index, "content_block": opening})
                self._event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
                self._event("content_block_stop", {"type": "content_block_stop", "index": index})
            self._event("message_delta", {
                "type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": 20},
            })
            self._event("message_stop", {"type": "message_stop"})

        def _event(self, name: str, data: dict[str, Any]) -> None:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

    return Handler
