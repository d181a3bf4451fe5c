"""Claude's memory tool (``memory_20250818``) over the store: Markdown files under ``/memories``.

:mod:`.paths` checks and maps the paths, :mod:`.store` reads and writes the rows and
the audit log, :mod:`.commands` runs the six commands with Anthropic's result and error
strings. The MCP tool ``memory``, the ``ccmemory files`` commands and the SessionStart
hook all go through these. Standard library only: the SessionStart hook imports them.
"""
