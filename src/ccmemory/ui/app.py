"""The Starlette application: routes, the token check, the host check and JSON errors.

Security model: the server listens on 127.0.0.1 only; every ``/api`` request
must carry this launch's token (``Authorization: Bearer <token>``; the event
stream, which browsers open without headers, takes ``?token=``); requests
whose ``Host`` is not loopback are refused, which stops DNS-rebinding pages;
no CORS headers are sent, so other origins cannot read answers. The static
page holds no data and is served without the token, which it reads from the
URL fragment (never sent to the server or to logs).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any, AsyncIterator, Callable

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import CCMemoryError, NotFoundError, ToolError, ValidationError
from ..files.paths import MemoryFileError
from . import api, events
from .viewer import Viewer

STATIC = Path(__file__).parent / "static"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost")
MAX_BODY_BYTES = 1_000_000
_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; "
                               "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
}


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message, "status": status}, status_code=status)


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        raise ValidationError(f"The request body is {len(raw):,} bytes; the limit is {MAX_BODY_BYTES:,}")
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValidationError(f"The request body is not valid JSON ({exc}); send a JSON object") from None
    if not isinstance(value, dict):
        raise ValidationError(f"The request body must be a JSON object, got {type(value).__name__}")
    return value


def endpoint(viewer: Viewer, handler: Callable[[api.Call], Any], *, status: int = 200) -> Callable[..., Any]:
    """An async endpoint that runs ``handler`` on the viewer's connection and answers JSON."""

    async def respond(request: Request) -> Response:
        try:
            body = await _body(request) if request.method in ("POST", "PATCH", "PUT") else {}
            result = await run_in_threadpool(
                viewer.run,
                lambda db: handler(api.Call(viewer, db, request.path_params, request.query_params, body)),
            )
        except MemoryFileError as exc:  # the memory tool's own wording; "failed" means refused, not malformed
            return error(409 if exc.failed else 400, str(exc))
        except (ValidationError, ToolError) as exc:
            return error(400, str(exc))
        except NotFoundError as exc:
            return error(404, str(exc))
        except CCMemoryError as exc:
            return error(500, f"{exc} Run `ccmemory doctor` to check the installation.")
        return JSONResponse(result, status_code=status)

    return respond


def _token_of(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    if request.url.path == "/api/events":
        return request.query_params.get("token")
    return None


def create_app(viewer: Viewer, *, allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS) -> Starlette:
    """The viewer's application (routes are listed in docs/viewer.md's API table)."""

    def route(path: str, handler: Callable[[api.Call], Any], method: str = "GET", status: int = 200) -> Route:
        return Route(path, endpoint(viewer, handler, status=status), methods=[method])

    async def event_stream(request: Request) -> Response:
        return StreamingResponse(events.stream(request, viewer.db_path), media_type="text/event-stream",
                                 headers={"X-Accel-Buffering": "no"})

    async def not_found(request: Request) -> Response:
        return error(404, f"No API route {request.method} {request.url.path}; see the API table in docs/viewer.md")

    project = "/api/projects/{project}"
    memory = project + "/memories/{memory}"
    routes = [
        route("/api/projects", api.list_projects),
        route(project, api.project_storage),
        route(project + "/stats", api.project_stats),
        route(project + "/sessions", api.list_sessions),
        route(project + "/memories", api.list_memories),
        route(project + "/memories", api.add_memory, "POST", 201),
        route(project + "/search", api.search_memories),
        route(memory, api.memory_detail),
        route(memory, api.edit_memory, "PATCH"),
        route(memory, api.delete_memory, "DELETE"),
        route(memory + "/restore", api.restore_memory, "POST"),
        route(memory + "/reinforce", api.reinforce, "POST"),
        route(memory + "/deemphasize", api.deemphasize, "POST"),
        route(memory + "/supersede", api.supersede, "POST"),
        route(project + "/docmem", api.docmem_roots),
        route(project + "/docmem/{node}", api.docmem_node),
        route(project + "/docmem/{node}/expand", api.docmem_expand),
        route(project + "/claude-md", api.claude_md),
        route(project + "/files", api.list_files),
        route(project + "/files/content", api.read_file),
        route(project + "/files/content", api.write_file, "PUT"),
        route(project + "/files/content", api.delete_file, "DELETE"),
        route(project + "/files/rename", api.rename_file, "POST"),
        route(project + "/gc", api.collect_garbage, "POST"),
        Route("/api/events", event_stream),
        Route("/api/{rest:path}", not_found, methods=["GET", "POST", "PATCH", "DELETE", "PUT"]),
        Mount("/", StaticFiles(directory=STATIC, html=True)),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        viewer.start()
        yield

    return Starlette(
        routes=routes,
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts)),
                    Middleware(TokenCheck, viewer=viewer)],
        lifespan=lifespan,
    )


class TokenCheck:
    """ASGI middleware: ``/api`` needs the launch's token; every response gets the security headers.

    Plain ASGI rather than ``BaseHTTPMiddleware``, which would buffer the event
    stream and hide client disconnects from it.
    """

    def __init__(self, app: ASGIApp, viewer: Viewer) -> None:
        self.app = app
        self.viewer = viewer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        if request.url.path.startswith("/api/") and not self.viewer.accepts(_token_of(request)):
            response = error(401, "Missing or wrong token. Open the address `ccmemory ui` printed (it carries "
                                  "the token), or send `Authorization: Bearer <token>`.")
            await response(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in _HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)
