"""Live updates: a server-sent event whenever any process commits to the database.

Each stream polls ``PRAGMA data_version`` on a connection of its own, which
changes whenever another connection (a hook, the MCP server, this viewer's
own request connection) commits. The event carries the newest memory row
number, so the page can reload what it shows and mark what is new. Polling a
pragma costs microseconds and needs no trigger, file watcher or hook change.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from .. import db as database
from .. import memories

POLL_SECONDS = 0.4
KEEPALIVE_SECONDS = 15.0


def _state(db: database.Database) -> tuple[int, int]:
    return db.scalar("PRAGMA data_version"), memories.latest_seq(db)


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


async def stream(request: Request, db_path: str, *, poll: float = POLL_SECONDS) -> AsyncIterator[bytes]:
    """``ready`` once, then ``change`` after every commit by anyone, until the client goes away."""
    db = await run_in_threadpool(database.connect, db_path, migrate=False)
    try:
        version, latest = await run_in_threadpool(_state, db)
        yield _event("ready", {"latest_seq": latest})
        quiet = 0.0
        while not await request.is_disconnected():
            await asyncio.sleep(poll)
            now_version, now_latest = await run_in_threadpool(_state, db)
            if now_version != version:
                yield _event("change", {"latest_seq": now_latest, "previous_seq": latest})
                version, latest, quiet = now_version, now_latest, 0.0
            else:
                quiet += poll
                if quiet >= KEEPALIVE_SECONDS:
                    yield b": keep-alive\n\n"
                    quiet = 0.0
    finally:
        db.close()
