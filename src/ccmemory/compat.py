"""What ccmemory needs from Claude Code, and how to tell a user whose Claude Code is older.

2.1.197 is the oldest release the plugin's end-to-end tests run on (CI runs them on it
and on 2.1.330); older releases lack pieces the plugin relies on (``CLAUDE_PLUGIN_DATA``
for the MCP server's runtime, the hook payload fields it reads). The MCP server learns
the client's version from ``initialize`` (``clientInfo``) and ``ccmemory doctor`` asks
``claude --version``.
"""

from __future__ import annotations

import re

MIN_CLAUDE_CODE = (2, 1, 197)
MIN_CLAUDE_CODE_TEXT = ".".join(map(str, MIN_CLAUDE_CODE))


def parse_version(text: str) -> tuple[int, ...] | None:
    """``(2, 1, 330)`` from ``"2.1.330"`` or ``"2.1.330 (Claude Code)"``; None when there is no version."""
    match = re.search(r"(\d+)\.(\d+)\.(\d+)", text or "")
    return tuple(int(part) for part in match.groups()) if match else None


def claude_code_warning(client_name: str | None, client_version: str | None) -> str | None:
    """A sentence for the user when the client is a Claude Code older than the minimum, else None.

    Other MCP clients (the Inspector, an SDK client) are not judged.
    """
    if not client_name or "claude" not in client_name.lower():
        return None
    version = parse_version(client_version or "")
    if version is None or version >= MIN_CLAUDE_CODE:
        return None
    return (f"ccmemory needs Claude Code {MIN_CLAUDE_CODE_TEXT} or newer, but this is {client_version}: "
            "some memory features may not work. Update with `claude update`.")
