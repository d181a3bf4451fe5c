"""``ccmemory ui``: a local web page to browse, search, edit and delete memories.

:mod:`.viewer` holds one launch's state (token, connection, embedder),
:mod:`.api` the JSON handlers (thin: each calls the core functions the CLI and
MCP tools call), :mod:`.events` the live-update stream, :mod:`.app` the
Starlette application with its token and host checks, :mod:`.launch` the
loopback socket, uvicorn and the browser. The page itself is plain files in
``static/`` (no build step, nothing fetched from the network).
"""
